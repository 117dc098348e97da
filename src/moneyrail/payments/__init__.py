"""Payment intents, refunds, fees, the direct balance and payment quotes (spec 4.B, 4.C, 4.G)."""
