"""References computed independently of graindem's contact laws, against which the engine is verified
(benchmarks/impact_suite.py, docs/verification.md)."""
