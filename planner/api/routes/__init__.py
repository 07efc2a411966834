"""The service's routes, one router per area: ``plans.py`` (submitting defrag, preempt and allocate
jobs; validate and report), ``jobs.py`` (jobs and stored plans: list, get, cancel, delete) and
``ops.py`` (health probes and metrics). ``planner.api.app`` includes them in a fixed order, which is
the order of the OpenAPI document's paths."""
