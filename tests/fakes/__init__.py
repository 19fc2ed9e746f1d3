"""Fakes used by the tests and benchmarks (a loopback OpenAI-compatible server)."""
