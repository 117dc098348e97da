"""Billing: products, prices, subscriptions on the UTC calendar, and their collection records."""
