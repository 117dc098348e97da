"""The operator console (`/console`): dead letters, operations and the money behind them, for people
signed in with a password and a TOTP code, with every decision in the audit log."""
