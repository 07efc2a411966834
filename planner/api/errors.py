"""Errors in one format: ``problem`` builds the JSON problem every refusal and failure is answered
with, ``RESPONSES`` documents the ones every route may give, and ``add_error_handlers`` turns
validation errors, refusals, hung-up clients, unknown routes and crashes into problems. No stack
trace reaches a client: unexpected errors are logged and answered with a plain 500."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from planner.api.refusals import Refused
from planner.api.schemas import Problem
from planner.cluster import field_path

log = logging.getLogger("planner.api")

CLIENT_CLOSED = 499
"""The status recorded for a request whose client hung up mid-upload (nginx's convention; never sent)."""

RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or wrong bearer token."},
    413: {"model": Problem, "description": "Request body above the limit."},
    422: {"model": Problem, "description": "Malformed or inconsistent input; one message per problem with its field path."},
    500: {"model": Problem, "description": "Internal error (logged server-side; no details leak)."},
}


def problem(status: int, error: str, problems: list[str] | None = None, job_id: str | None = None) -> JSONResponse:
    return JSONResponse(Problem(error=error, problems=problems or [], job_id=job_id).model_dump(exclude_none=True), status_code=status)


def retry_later(status: int, error: str, retry_after_s: int) -> JSONResponse:
    """A problem with ``Retry-After``: the queue is full, or the store cannot be used now."""
    response = problem(status, error)
    response.headers["Retry-After"] = str(retry_after_s)
    return response


async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = []
    for err in exc.errors():
        loc = tuple(part for part in err.get("loc", ()) if part != "body")
        if err.get("type") == "json_invalid":
            problems.append(f"body: not valid JSON ({err.get('ctx', {}).get('error', err.get('msg'))})")
        elif err.get("type") == "missing":
            problems.append(f"{field_path(loc)}: required field is missing")
        elif err.get("type") == "extra_forbidden":
            problems.append(f"{field_path(loc)}: unknown field")
        else:
            problems.append(f"{field_path(loc)}: {err.get('msg', 'invalid')}")
    return problem(422, "invalid request", problems)


async def refused(request: Request, exc: Refused) -> JSONResponse:
    response = problem(exc.status, exc.error, exc.problems)
    if exc.status == 503:
        response.headers["Retry-After"] = str(request.app.state.service.settings.retry_after_s)
    if exc.status == 408:  # the rest of the body may still come: not on this connection
        response.headers["Connection"] = "close"
    return response


async def client_gone(request: Request, exc: ClientDisconnect) -> JSONResponse:
    """The client hung up before its body was complete: nothing to answer and nothing wrong here,
    so no error and no traceback; logged at info and recorded as 499 (nginx's "client closed
    request") in the access log."""
    log.info("client disconnected before its request body was complete (%s %s); nothing done", request.method, request.url.path)
    return problem(CLIENT_CLOSED, "the client closed the connection before the request body was complete")


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Unknown routes (404), wrong methods (405) and the like, in the same problem format."""
    error = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
    response = problem(exc.status_code, error)
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    return response


async def crashed(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(500, "internal error; see the server log")


def add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, invalid)  # type: ignore[arg-type]  # Starlette types a handler as taking Exception; this one takes its class
    app.add_exception_handler(Refused, refused)  # type: ignore[arg-type]  # Starlette types a handler as taking Exception; this one takes its class
    app.add_exception_handler(ClientDisconnect, client_gone)  # type: ignore[arg-type]  # Starlette types a handler as taking Exception; this one takes its class
    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]  # Starlette types a handler as taking Exception; this one takes its class
    app.add_exception_handler(Exception, crashed)
