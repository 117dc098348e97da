"""Receipts of succeeded payments by e-mail and SMS, and their delivery statuses."""
