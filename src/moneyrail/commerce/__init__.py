"""The commerce API (/commerce/v1): orders paid by a manual-capture payment (spec 4.B rule 3, 4.O)."""
