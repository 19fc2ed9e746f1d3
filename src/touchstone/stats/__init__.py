"""Aggregation, bootstrap intervals and other statistics over stored scores."""
