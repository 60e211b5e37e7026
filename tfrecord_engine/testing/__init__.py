"""Hypothesis strategies and builders shared by the tests (one module per area)."""
