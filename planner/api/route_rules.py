"""Each route that reads a body has a rule of its own: the largest body it takes and the time the whole
request may take (reading the body, waiting for a checker process, parsing and checking it, computing
the answer). Past the time the request is answered at once (503 when it was still waiting for a
checker, 422 when its own work ran out of time, its checker process killed) and nothing of it runs on.

Why per route: ``POST /v1/explain`` bounded only its remedy, so two 208 KB node-and-plan requests ran
39-50 s and held both body parsers while a concurrent ``/v1/report`` waited 38-47 s. The numbers
below come from parsing and checking generated ASI snapshots on the 2-core development machine under
load (about 1 MiB of snapshot a second; a quiet machine does about three times that): a job's
checks of the 25 MiB 37,707-node snapshot took 26 s, its report 32 s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MIB = 2**20


@dataclass(frozen=True)
class RouteRule:
    """What one route accepts: ``body_bytes`` at most (the server's ``--max-body-mib`` may lower it),
    ``time_s`` for the whole request, and ``at_once`` checker processes its requests hold at most (the
    routes of one rule together): the answers computed in the request (validate, report, explain) take
    one each, so the job submissions always find one free."""

    body_bytes: int
    time_s: float
    at_once: int

    def deadline(self) -> float:
        """The monotonic time (``time.monotonic``, the same clock in every process) the request's work must
        end by: ``time_s`` from now less ``ANSWER_S``, kept for answering."""
        return time.monotonic() + self.time_s - ANSWER_S


ANSWER_S = 1.0
"""Of a route's time, kept for the answer to reach the client: with 100 hostile requests at once (bodies of up
to 1 MiB) the event loop took up to 0.4 s past a deadline to send it (measured from the client)."""

EXPLAIN_TIME_LIMIT_S = 5.0
"""``POST /v1/explain``'s remedy: its make-room plans start only within this many seconds (a request's
``options.time_limit_s`` may ask less, not more), and within half of what is left of the request."""

CHECKERS = 3
"""Checker processes (``checkers.py``): one for explanations, one for validations and reports, and the job
submissions in any free one (at least one always: the other rules hold one each at most)."""

SUBMIT = RouteRule(body_bytes=64 * MIB, time_s=120.0, at_once=CHECKERS)
"""``POST /v1/defrag``, ``/v1/preempt``, ``/v1/allocate``: the checks before a job is queued (then ``?wait``)."""
CHECK = RouteRule(body_bytes=64 * MIB, time_s=120.0, at_once=1)
"""``POST /v1/validate`` and ``/v1/report``: a plan replayed, a report computed, in the request."""
EXPLAIN = RouteRule(body_bytes=16 * MIB, time_s=3 * EXPLAIN_TIME_LIMIT_S, at_once=1)
"""``POST /v1/explain``: the reason and its checks, then the remedy within ``EXPLAIN_TIME_LIMIT_S``; the whole
request within 15 s (a 16 MiB snapshot, about 6,000 nodes, takes some 5 s to parse and check under load)."""

APPLY = RouteRule(body_bytes=64 * 1024, time_s=60.0, at_once=1)
"""``POST /v1/plans/{plan_id}/apply``: a few options; the cluster probed (and a dry run answered) in the request,
a run started in the background."""

RENDER = CHECK
"""The GET routes that parse a stored snapshot (``GET /v1/plans/{id}/view``, ``/v1/jobs/{id}/view``,
``/v1/plans/{id}?format=`` kubectl, podmigrationjob, table or wide): the page or text is built in a checker
process as a validation is, and shares the validations' one checker at a time (the same rule)."""

ROUTE_RULES: dict[str, RouteRule] = {
    "/v1/defrag": SUBMIT,
    "/v1/preempt": SUBMIT,
    "/v1/allocate": SUBMIT,
    "/v1/validate": CHECK,
    "/v1/report": CHECK,
    "/v1/explain": EXPLAIN,
    "/v1/plans/{plan_id}/apply": APPLY,
}
"""Every route that reads a body, with its rule (docs/service.md lists them)."""
