"""Independent pieces as Ray tasks: the cluster at ``RAY_ADDRESS`` when set, else a local Ray.

Ray is an optional extra (``pip install 'gpu-fleet-planner[ray]'``). Every task is one piece (an
IPC partition or an LNS neighbourhood, each a ``ClusterState.subset`` of its own nodes, so the
object store holds each piece once and never the whole cluster); results come back in task
order, so a plan does not depend on which worker finished first and equals the process pool's.

Connecting is bounded: Ray's own client waits minutes for an address where no Ray answers and then
aborts the process, so an address from ``RAY_ADDRESS`` is first tried in a child process within
``CONNECT_TIMEOUT_S``; a refused, silent or non-Ray address is an ``ExecutorError`` naming the
variable and the fix (exit 2 on the command line), never a hang or a crash.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from planner.runtime.tasks import built, default_workers

CONNECT_TIMEOUT_S = 20.0
"""At most this long to learn whether ``RAY_ADDRESS`` is a Ray cluster, unless
``PLANNER_RAY_CONNECT_TIMEOUT_S`` says otherwise (a slow network may need longer)."""
CONNECT_TIMEOUT_ENV = "PLANNER_RAY_CONNECT_TIMEOUT_S"
INSTALL_HINT = "install the extra: pip install 'gpu-fleet-planner[ray]' (or choose --executor process)"
# Ray's client gives up on an unreachable GCS after these (it waits a minute and longer by default).
_RAY_TIMEOUTS = {"RAY_gcs_rpc_server_connect_timeout_s": "5", "RAY_gcs_rpc_server_reconnect_timeout_s": "10", "RAY_gcs_server_request_timeout_seconds": "10"}
_CHECKED = "PLANNER_RAY_ADDRESS_CHECKED"
"""Set by ``serve_on_ray`` to the address it checked or started: its job processes skip the probe."""
_remote_call: Any = None
"""``_call`` as a Ray remote function, made on first use."""


class ExecutorError(ValueError):
    """The executor asked for cannot run here; the message names the option or variable and the fix."""


def _import_ray() -> Any:
    try:
        import ray  # deferred: Ray (optional, heavy), for --executor ray only
    except ImportError:
        raise ExecutorError(f"--executor ray: Ray is not installed; {INSTALL_HINT}") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """``host:port`` of a ``RAY_ADDRESS`` (``ray://host:port`` too); None for 'auto' or 'local'."""
    if address in ("auto", "local"):
        return None
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise ExecutorError(
            f"RAY_ADDRESS={address!r}: give the head node as host:port (for example 10.0.0.5:6379), "
            "'auto' for the Ray started on this machine, or unset it to start a local Ray"
        )
    return parts.hostname, port


def connect_timeout_s() -> float:
    """``PLANNER_RAY_CONNECT_TIMEOUT_S`` when set (seconds above 0), else ``CONNECT_TIMEOUT_S``."""
    raw = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    if not raw:
        return CONNECT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ExecutorError(f"{CONNECT_TIMEOUT_ENV}={raw!r}: give the seconds to wait for Ray as a number above 0 (default {CONNECT_TIMEOUT_S:g}), or unset it")
    return value


def _probe(address: str) -> None:
    """Raise ``ExecutorError`` unless a Ray cluster answers at ``address`` within the connect timeout."""
    timeout_s = connect_timeout_s()
    unreachable = (
        f"RAY_ADDRESS={address!r}: no Ray cluster answers there within {timeout_s:g} s; start one "
        "(ray start --head) or fix the address, or unset RAY_ADDRESS to start a local Ray"
    )
    target = _host_port(address)
    if target is not None:
        try:
            socket.create_connection(target, timeout=min(5.0, timeout_s)).close()
        except OSError as err:
            raise ExecutorError(f"{unreachable} ({err.strerror or err})") from None
    script = "import logging, sys, ray\nray.init(address=sys.argv[1], logging_level=logging.ERROR, log_to_driver=False)\nray.shutdown()\n"
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, address], env={**os.environ, **_RAY_TIMEOUTS}, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise ExecutorError(unreachable) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no answer"])[-1]
        raise ExecutorError(f"{unreachable} (Ray said: {last[:200]})")


def connect(workers: int | None = None) -> Any:
    """The ``ray`` module, connected: to ``RAY_ADDRESS`` when set (checked first, bounded), else to a
    local Ray with ``workers`` CPUs (default: one per core) started for this process."""
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    address = os.environ.get("RAY_ADDRESS", "").strip()
    for name, value in _RAY_TIMEOUTS.items():
        os.environ.setdefault(name, value)
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address:
        if os.environ.get(_CHECKED) != address:
            _probe(address)
        ray.init(address=address, **quiet)
    else:
        ray.init(num_cpus=workers or default_workers(), include_dashboard=False, **quiet)
    return ray


def ray_cpus() -> int:
    """CPUs of the connected Ray cluster (at least 1)."""
    return max(1, int(connect().cluster_resources().get("CPU", 1)))


def _call(fn: Callable[[Any], Any], blob: bytes) -> bytes:
    """Run one task inside a Ray worker. Tasks and results travel pickled: Ray would hand numpy
    arrays over read-only (zero-copy from its object store), and the pieces are mutated in place."""
    return pickle.dumps(fn(pickle.loads(blob)), protocol=pickle.HIGHEST_PROTOCOL)


def serve_on_ray(workers: int | None) -> str:
    """For ``planner serve --executor ray``: check ``RAY_ADDRESS``, or start a local Ray for the
    server's lifetime, and leave its address in the environment for the job processes (they
    connect as drivers of their own). Returns the address."""
    ray = connect(workers)
    address = os.environ.get("RAY_ADDRESS", "").strip() or ray.get_runtime_context().gcs_address
    os.environ["RAY_ADDRESS"] = os.environ[_CHECKED] = address
    return address


def run_ray(fn: Callable[[Any], Any], tasks: Iterable[Any]) -> list[Any]:
    """``[fn(t) for t in tasks]`` as Ray tasks of one CPU each, results in task order."""

    global _remote_call
    ray = connect()
    if _remote_call is None:
        _remote_call = ray.remote(num_cpus=1)(_call)
    refs = [_remote_call.remote(fn, pickle.dumps(built(task), protocol=pickle.HIGHEST_PROTOCOL)) for task in tasks]
    return [pickle.loads(blob) for blob in ray.get(refs)]
