"""The audit log: what operators did (from the console or the CLI), append-only in PostgreSQL."""
