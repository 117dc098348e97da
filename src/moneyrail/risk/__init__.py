"""Risk: value lists that block payments or send them to review, and the reviews themselves."""
