"""The load generator: schedules (when), engines (how), recorder (what happened)."""
