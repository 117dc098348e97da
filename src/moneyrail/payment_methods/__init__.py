"""Saved cards of customers, setup intents, customer sessions (spec 4.A)."""
