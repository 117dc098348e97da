"""Developer commands over the public API: `moneyrail listen` and `moneyrail trigger`."""
