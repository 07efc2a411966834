"""The throwaway control plane's lifecycle: find the ``planner-controlplane`` binary, start it in the
background on a kubectl List, wait until it is ready, stop it and remove its state.

The binary (``controlplane/``, built by ``controlplane/build.sh``) runs kube-apiserver, etcd,
kube-scheduler, the controllers and a node simulator in one process on 127.0.0.1. It writes into its
state directory a kubeconfig, ``ready.json`` once the loaded cluster has settled, and ``error.json``
when the List is bad or the API server refused one of its objects (exit codes ``EXIT_BAD_LIST`` and
``EXIT_REJECTED``). The List goes through the planner's own bounded reader first
(``adapters.kubernetes.read_objects``: sizes, depth, duplicate keys), then to the binary as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.adapters.kubernetes import read_objects
from planner.kube.errors import KubeProblem
from planner.snapshot import read_text

BINARY_ENV = "PLANNER_CONTROLPLANE"
"""Environment variable naming the binary (else the build script's path)."""
BUILD_COMMAND = "controlplane/build.sh"
"""How to build the binary, from the repository root."""
EXIT_BAD_LIST = 65
EXIT_REJECTED = 66
MARKER = ".planner-controlplane"
"""File that marks a directory as a control plane's state (``down`` removes only such a directory)."""
READY_FILE = "ready.json"
ERROR_FILE = "error.json"
PID_FILE = "pid"
LOG_FILE = "controlplane.log"
INPUT_FILE = "input.json"
STOP_SECONDS = 30.0
"""How long ``stop`` waits after SIGTERM before SIGKILL."""
PROFILES = ("default", "binpack")


class ControlPlaneError(KubeProblem):
    """A control plane problem for the user."""


@dataclass(frozen=True)
class Running:
    """A started control plane: its process, state directory, kubeconfig and readiness record."""

    pid: int
    state_dir: Path
    kubeconfig: Path
    server: str
    ready: dict[str, Any]


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/planner-controlplane``: the build script's caches and binary."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("PLANNER_CONTROLPLANE_CACHE") or Path(base) / "planner-controlplane")


def default_state_dir() -> Path:
    """Where ``up`` and ``down`` keep the control plane's state unless told otherwise."""
    return cache_root() / "run" / "default"


def find_binary() -> Path:
    """The binary from ``PLANNER_CONTROLPLANE`` or the build script's path; missing: the build command."""
    given = os.environ.get(BINARY_ENV)
    path = Path(given) if given else cache_root() / "bin" / "planner-controlplane"
    if not path.is_file() or not os.access(path, os.X_OK):
        where = f"{BINARY_ENV}={given}" if given else str(path)
        raise ControlPlaneError(
            [
                f"the control plane binary is missing ({where} is not an executable file); build it with `{BUILD_COMMAND}` from the repository root (Go 1.26), or set {BINARY_ENV} to its path"
            ]
        )
    return path


def write_list(list_path: str, dest: Path) -> int:
    """Read the List through the planner's bounded reader and write its objects as one JSON List to
    ``dest`` (what the binary reads); returns how many objects."""
    objects = read_objects(read_text(list_path, "--from"), list_path)
    dest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}), encoding="utf-8")
    return len(objects)


def start(
    list_path: str | None,
    state_dir: Path,
    profile: str = "default",
    port: int = 0,
    timeout_s: float = 600.0,
    binary: Path | None = None,
) -> Running:
    """Start the control plane in the background (its own session, output in ``controlplane.log``),
    wait until ``ready.json`` appears and return it; a bad or refused List raises
    ``ControlPlaneError`` (code 2) quoting the binary's ``error.json``."""
    if profile not in PROFILES:
        raise ControlPlaneError([f"--profile: {profile!r} is not one of {', '.join(PROFILES)}"])
    binary = binary or find_binary()
    _claim_state_dir(state_dir)
    args = [str(binary), f"--state-dir={state_dir}", f"--profile={profile}", f"--port={port}", f"--ready-timeout={int(timeout_s)}s"]
    if list_path is not None:
        input_path = state_dir / INPUT_FILE
        write_list(list_path, input_path)
        args.append(f"--load={input_path}")
    with open(state_dir / LOG_FILE, "wb") as log:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (state_dir / PID_FILE).write_text(f"{process.pid}\n", encoding="utf-8")
    try:
        return _wait_ready(process, state_dir, timeout_s)
    except BaseException:
        _terminate(process.pid)
        process.wait()
        raise


def stop(state_dir: Path) -> bool:
    """Stop the control plane of ``state_dir`` (SIGTERM, then SIGKILL after ``STOP_SECONDS``) and
    remove the directory; returns whether a process was running."""
    if not state_dir.exists():
        return False
    if not (state_dir / MARKER).is_file():
        raise ControlPlaneError([f"--state-dir {state_dir}: not a control plane's state directory (no {MARKER}); nothing removed"])
    pid = _state_pid(state_dir)
    was_running = pid is not None and _is_ours(pid, state_dir)
    if was_running and pid is not None:
        _terminate(pid)
    shutil.rmtree(state_dir)
    return was_running


def _claim_state_dir(state_dir: Path) -> None:
    """Make ``state_dir`` ours: created 0700 with the marker; a directory that holds anything but a
    stopped control plane's state is refused, as is one whose control plane still runs."""
    if state_dir.exists():
        if not state_dir.is_dir():
            raise ControlPlaneError([f"--state-dir {state_dir}: exists and is not a directory"])
        if any(state_dir.iterdir()) and not (state_dir / MARKER).is_file():
            raise ControlPlaneError([f"--state-dir {state_dir}: not empty and not a control plane's state; give a new or empty directory"])
        pid = _state_pid(state_dir)
        if pid is not None and _is_ours(pid, state_dir):
            raise ControlPlaneError(
                [f"a control plane already runs from {state_dir} (pid {pid}); stop it with `planner controlplane down --state-dir {state_dir}`"]
            )
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True, mode=0o700)
    (state_dir / MARKER).write_text("state of planner controlplane up; removed by planner controlplane down\n", encoding="utf-8")


def _wait_ready(process: subprocess.Popen[bytes], state_dir: Path, timeout_s: float) -> Running:
    deadline = time.monotonic() + timeout_s + 30.0  # the binary keeps its own deadline; this one backs it up
    ready_path = state_dir / READY_FILE
    while True:
        code = process.poll()
        if ready_path.is_file():
            ready = json.loads(ready_path.read_text(encoding="utf-8"))
            return Running(process.pid, state_dir, Path(ready["kubeconfig"]), str(ready["server"]), ready)
        if code is not None:
            raise _exit_error(code, state_dir)
        if time.monotonic() > deadline:
            raise ControlPlaneError([f"the control plane was not ready within {timeout_s:.0f} s; its log: {state_dir / LOG_FILE}"], 3)
        time.sleep(0.1)


def _exit_error(code: int, state_dir: Path) -> ControlPlaneError:
    """The error for a binary that exited before it was ready."""
    record: dict[str, Any] = {}
    try:
        record = json.loads((state_dir / ERROR_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    if code == EXIT_REJECTED and isinstance(record.get("object"), dict):
        obj = record["object"]
        where = f"{obj.get('namespace')}/{obj.get('name')}" if obj.get("namespace") else str(obj.get("name"))
        if isinstance(obj.get("index"), int) and obj["index"] < 0:  # an object the List lacks, derived by the loader
            source = obj.get("derivedFrom") or "the objects that name it"
            return ControlPlaneError(
                [f"--from: the API server rejected {obj.get('kind')} {where}, which the List lacks and the loader derived from {source}: {obj.get('message')}"]
            )
        return ControlPlaneError([f"--from: the API server rejected items[{obj.get('index')}] {obj.get('kind')} {where}: {obj.get('message')}"])
    if code == EXIT_BAD_LIST:
        return ControlPlaneError([f"--from: {record.get('message') or 'the List is not a kubectl List'}"])
    tail = _log_tail(state_dir / LOG_FILE)
    return ControlPlaneError([f"the control plane exited with code {code} before it was ready; its log {state_dir / LOG_FILE} ends: {tail}"], 3)


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return " | ".join(text.strip().splitlines()[-lines:])


def _state_pid(state_dir: Path) -> int | None:
    try:
        return int((state_dir / PID_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _is_ours(pid: int, state_dir: Path) -> bool:
    """Whether ``pid`` is a running control plane started on ``state_dir`` (its command line says so),
    so that a pid reused by another process is never signalled."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(arg == f"--state-dir={state_dir}".encode() for arg in argv)


def _terminate(pid: int) -> None:
    """SIGTERM the process, wait up to ``STOP_SECONDS`` for it to go, then SIGKILL."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie child counts as gone; it is reaped if it is ours)."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except ChildProcessError:
        pass
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    except OSError:
        return False
    return status != "Z"
