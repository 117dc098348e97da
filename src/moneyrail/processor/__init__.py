"""The seam between moneyrail and the card network and banks; the sandbox simulator lives behind it."""
