"""Evaluators: one module per family, all reachable through the registry."""
