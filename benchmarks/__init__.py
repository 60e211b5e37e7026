"""Side-by-side benchmarks against TensorFlow."""
