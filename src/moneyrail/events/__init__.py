"""Events, webhook endpoints and signed deliveries (CONVENTIONS.md §10)."""
