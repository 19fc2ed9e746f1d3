"""The runner: validation, target, scheduling, persistence, aggregation."""
