"""Runnable examples for integrators; each is run by a test under tests/examples."""
