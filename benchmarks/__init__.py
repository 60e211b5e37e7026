"""Side-by-side benchmarks (run each module with ``python -m benchmarks.<name>``)."""
