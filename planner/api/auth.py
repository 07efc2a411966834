"""The guard in front of every route: the body limit (413 from Content-Length), the bearer tokens
and a last-resort 500. With ``PLANNER_API_TOKEN`` set, every route but the health probes (and
/metrics and the docs when they are public) needs ``Authorization: Bearer <token>``; the read token
may only GET. Both tokens are compared in constant time."""

from __future__ import annotations

import hmac
import logging

from fastapi import Request
from fastapi.responses import JSONResponse

from planner.api.docs import is_docs_path
from planner.api.errors import problem
from planner.api.requests import Settings

log = logging.getLogger("planner.api")


def refusal(request: Request, settings: Settings) -> JSONResponse | None:
    """The answer to a request the body limit or the tokens refuse; None when it may go on."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > settings.max_body_bytes):
        return problem(413, f"request body above the limit of {settings.max_body_bytes // 2**20} MiB")
    public = ("/healthz", "/readyz", "/metrics") if settings.metrics_public else ("/healthz", "/readyz")
    path = request.url.path
    if settings.token and path not in public and not (settings.docs_public and is_docs_path(path)):
        if len(request.headers.getlist("authorization")) > 1:
            return problem(400, "send one Authorization header, not several")
        supplied = request.headers.get("authorization", "").encode()
        admin = hmac.compare_digest(supplied, f"Bearer {settings.token}".encode())
        # both comparisons always run, in constant time: timing does not tell which token was close
        reader = settings.read_token is not None and hmac.compare_digest(supplied, f"Bearer {settings.read_token}".encode())
        if not admin and not reader:
            response = problem(401, "missing or wrong bearer token (Authorization: Bearer <PLANNER_API_TOKEN>)")
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        if not admin and request.method not in ("GET", "HEAD"):
            return problem(
                403, "this token may only read (GET routes and /metrics); submitting, cancelling and deleting need the admin token (PLANNER_API_TOKEN)"
            )
    return None


async def guard(request: Request, call_next):
    """The HTTP middleware: ``refusal``, else the route; an exception escaping both is a plain 500."""
    try:
        refused = refusal(request, request.app.state.service.settings)
        if refused is not None:
            return refused
        return await call_next(request)
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(500, "internal error; see the server log")
