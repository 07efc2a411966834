"""What the tests (and some benchmarks) share: builders and hand-made clusters, the oracles, hypothesis
strategies, and harnesses (a real planner service in a subprocess, a throwaway PostgreSQL, a fake kubectl).
No test module imports another; ``tests/README.md`` lists the modules here."""
