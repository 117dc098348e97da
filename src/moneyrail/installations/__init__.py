"""Installations: the API keys of each installation and environment, their processor settings."""
