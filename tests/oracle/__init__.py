"""The planner's answers and claims against an independent brute force or replay (tests/support/*_oracle.py,
tests/support/kube_scheduler.py, or one written in the test file)."""
