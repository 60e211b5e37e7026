"""Test kit shipped with the package: Hypothesis strategies and reusable checks."""
