"""Helpers the tests and benchmarks share: a real planner service in a subprocess, a throwaway PostgreSQL."""
