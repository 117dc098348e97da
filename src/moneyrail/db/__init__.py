"""Engine, unit of work and migrations."""
