"""The immutable double-entry ledger: journal, postings, balances, sealing and verification."""
