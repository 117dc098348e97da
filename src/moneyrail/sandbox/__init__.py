"""Sandbox helpers (CONVENTIONS.md §11): the installation's sandbox clock and processor fault injection."""
