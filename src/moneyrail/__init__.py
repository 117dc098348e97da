"""moneyrail: a self-hostable payments, marketplace-distribution and recurring-billing engine."""

__version__ = "0.1.0"
