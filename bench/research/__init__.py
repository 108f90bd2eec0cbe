"""bench.research: deep research on compound questions built from the development sets."""
