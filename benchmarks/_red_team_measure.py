"""Measuring one red-team case (``benchmarks/red_team.py``): a command run to its end or its kill deadline
with the peak memory of every process it starts, an HTTP request timed against its route's limit, the
server's processes sampled from /proc, a directory tree fingerprinted before and after, and the flags a
case raises."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

GIB = 1 << 30
MEMORY_LIMIT_MIB = 1024.0
"""No process above 1 GiB."""
TIME_SLACK_S = 2.0
"""No request longer than its limit plus 2 s."""
KILL_AFTER_S = 5.0
"""A command still running this long past its limit plus the slack is killed (its case is over time anyway)."""
KILL_RSS_MIB = 1536.0
"""A command whose processes pass this is killed (its case is over 1 GiB anyway; the machine is shared)."""
LONG_MESSAGE_BYTES = 64 << 10
"""An error message (stderr, or a 4xx body) above this quotes far more than a short prefix of the input."""
TRACEBACK = "Traceback (most recent call last)"
SAMPLE_S = 0.05
KINDS = {
    "over-time": "over its limit + 2 s",
    "over-1GiB": "a process above 1 GiB",
    "exit-3": "exit 3 (internal error) or killed by a signal it did not get from us",
    "http-500": "HTTP 5xx",
    "traceback": "a traceback in the output",
    "outside-dir": "a file created or changed outside the named directory",
    "long-message": "an error message above 64 KiB",
    "store-lost": "a stored job or plan lost",
    "accepted-invalid": "an input Kubernetes refuses accepted (exit 0)",
}
"""Violation kinds and what each means; every case is checked for the ones that apply to it."""


@dataclass
class Case:
    """One hostile input and what it did."""

    category: str
    kind: str
    """The input's shape or form (e.g. ``alias-bomb``, ``name traversal``)."""
    target: str
    """Where it went (a command or a route)."""
    size_bytes: int
    limit_s: float
    wall_s: float = 0.0
    peak_rss_mib: float = 0.0
    outcome: str = ""
    """``exit N`` or ``HTTP N`` (``killed after N s`` when we ended it)."""
    output_bytes: int = 0
    note: str = ""
    flags: list[str] = field(default_factory=list)

    def flag(self, kind: str, when: bool) -> None:
        if when and kind not in self.flags:
            self.flags.append(kind)


def _process_tree(root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return found


def _status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return 0


def peak_process_mib(root: int, key: str = "VmHWM:") -> float:
    """The largest ``key`` (VmHWM: high-water mark, VmRSS: now) of any one process of ``root``'s tree."""
    return max((_status_kib(pid, key) for pid in _process_tree(root)), default=0) / 1024


@dataclass
class Finished:
    wall_s: float
    peak_rss_mib: float
    code: int
    """The exit code; negative: the signal that ended it."""
    killed: str
    """Why we killed it ('' when it ended by itself)."""
    stdout_bytes: int
    stderr: str
    """Its first 4 MiB."""
    stderr_bytes: int


def run_command(argv: list[str], limit_s: float, env: dict[str, str] | None = None, cwd: str | None = None, stdin: bytes | None = None) -> Finished:
    """Run ``argv`` in its own session; sample the peak RSS of each of its processes every 50 ms; kill the
    session when it runs ``KILL_AFTER_S`` past its limit plus slack or passes ``KILL_RSS_MIB``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd, start_new_session=True)
        if stdin:
            threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
        peak, killed = 0.0, ""
        deadline = start + limit_s + TIME_SLACK_S + KILL_AFTER_S
        while proc.poll() is None:
            peak = max(peak, peak_process_mib(proc.pid))
            if peak > KILL_RSS_MIB and not killed:
                killed = f"killed above {KILL_RSS_MIB:.0f} MiB"
            elif time.perf_counter() > deadline and not killed:
                killed = f"killed after {time.perf_counter() - start:.0f} s"
            if killed:
                _kill_session(proc)
                break
            time.sleep(SAMPLE_S)
        proc.wait()
        wall = time.perf_counter() - start
        out.seek(0, os.SEEK_END)
        err.seek(0)
        stderr = err.read(4 << 20).decode("utf-8", "replace")
        err.seek(0, os.SEEK_END)
        stderr_bytes = err.tell()
        return Finished(wall, peak, proc.returncode, killed, out.tell(), stderr, stderr_bytes)


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def judge_command(case: Case, done: Finished) -> None:
    """Fill ``case`` from a finished command and raise its flags."""
    case.wall_s, case.peak_rss_mib = done.wall_s, done.peak_rss_mib
    case.outcome = done.killed or f"exit {done.code}"
    case.output_bytes = done.stderr_bytes
    case.flag("over-time", done.wall_s > case.limit_s + TIME_SLACK_S)
    case.flag("over-1GiB", done.peak_rss_mib > MEMORY_LIMIT_MIB)
    case.flag("exit-3", done.code == 3 or (done.code < 0 and not done.killed))
    case.flag("traceback", TRACEBACK in done.stderr)
    case.flag("long-message", case.output_bytes > LONG_MESSAGE_BYTES)
    if case.flags and not case.note:
        case.note = first_line(done.stderr)


def first_line(text: str, width: int = 160) -> str:
    """The first non-empty line of ``text`` (the last line of a traceback), printable and cut to ``width``."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if TRACEBACK in text else lines[0]
    line = "".join(c if c.isprintable() else "?" for c in line)
    return line if len(line) <= width else line[:width] + f"... ({len(line):,} chars)"


class ServerWatch:
    """Samples the resident memory of every process of a server's tree every 50 ms in a thread; ``window()``
    gives the largest single-process RSS since the last call."""

    def __init__(self, pid: int):
        self.pid = pid
        self._peak = self._start = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = peak_process_mib(self.pid, "VmRSS:")
            with self._lock:
                self._peak = max(self._peak, now)
            self._stop.wait(SAMPLE_S)

    def window(self) -> tuple[float, float]:
        """(the largest single-process RSS when the window began, the largest since): a window runs from one
        call to the next."""
        now = peak_process_mib(self.pid, "VmRSS:")
        with self._lock:
            window = (self._start, max(self._peak, now))
            self._peak = self._start = now
        return window

    def high_water_mib(self) -> float:
        """The largest VmHWM of any process of the tree now (each process's peak since it started)."""
        return peak_process_mib(self.pid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def timed_request(
    client: httpx.Client, method: str, url: str, limit_s: float, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[float, int, bytes, str]:
    """(wall seconds, status, response body, error): one request, given up by the client ``KILL_AFTER_S`` after its limit plus slack."""
    start = time.perf_counter()
    try:
        response = client.request(method, url, content=body, headers=headers, timeout=limit_s + TIME_SLACK_S + KILL_AFTER_S)
        return time.perf_counter() - start, response.status_code, response.content, ""
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        return time.perf_counter() - start, 0, b"", f"{type(err).__name__}: {err}"[:200]


GROWTH_MIB = 64.0
"""A server process above 1 GiB is charged to a request only when it passed 1 GiB, or grew by this much, while the
request ran: one that kept the memory of an earlier request is that request's violation, not the next one's."""


def judge_response(case: Case, wall_s: float, status: int, body: bytes, error: str, window: tuple[float, float] = (0.0, 0.0)) -> None:
    """Fill ``case`` from an answer (``window``: the server's largest process RSS as the request began, and its peak)."""
    start_mib, peak_mib = window
    case.wall_s, case.peak_rss_mib, case.output_bytes = wall_s, peak_mib, len(body)
    case.outcome = f"HTTP {status}" if status else f"no answer ({error[:80]})"
    case.flag("over-time", wall_s > case.limit_s + TIME_SLACK_S or (not status and "Timeout" in error))
    case.flag("over-1GiB", peak_mib > MEMORY_LIMIT_MIB and (start_mib <= MEMORY_LIMIT_MIB or peak_mib > start_mib + GROWTH_MIB))
    case.flag("http-500", status >= 500)
    case.flag("traceback", TRACEBACK.encode() in body)
    case.flag("long-message", status >= 400 and len(body) > LONG_MESSAGE_BYTES)
    if case.flags and not case.note:
        case.note = first_line(body[:2000].decode("utf-8", "replace")) or error[:160]


def tree_state(root: Path) -> dict[str, tuple[str, int, int, str]]:
    """Every entry under ``root``: (type, size, mtime in ns, SHA-1 of a file's content or a link's target)."""
    state: dict[str, tuple[str, int, int, str]] = {}
    if not root.exists():
        return state
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            info = path.lstat()
            if path.is_symlink():
                state[str(path)] = ("link", 0, info.st_mtime_ns, os.readlink(path))
            elif path.is_dir():
                state[str(path)] = ("dir", 0, info.st_mtime_ns, "")
            else:
                state[str(path)] = ("file", info.st_size, info.st_mtime_ns, hashlib.sha1(path.read_bytes()).hexdigest())
    return state


def tree_changes(before: dict[str, tuple[str, int, int, str]], after: dict[str, tuple[str, int, int, str]]) -> list[str]:
    """Paths created, removed or changed between two ``tree_state`` readings."""
    changed = [f"created {p}" for p in after if p not in before]
    changed += [f"removed {p}" for p in before if p not in after]
    changed += [f"changed {p}" for p in before if p in after and before[p] != after[p] and before[p][0] != "dir"]
    return sorted(changed)
