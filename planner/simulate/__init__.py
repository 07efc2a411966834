"""Simulators: replays of a workload over time under the planner's own policies (issue 14)."""
