"""Disputes the card network opens on captured payments: money withdrawn and reinstated, evidence."""
