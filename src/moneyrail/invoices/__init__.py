"""Payment invoices (spec 4.K)."""
