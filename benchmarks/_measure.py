"""Shared benchmark plumbing: run a command as a child process and measure wall time and peak memory."""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
CACHE = REPO / "benchmarks" / ".cache"
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


@dataclass
class Run:
    wall_s: float
    peak_rss_mib: float
    """Peak resident memory of the command's own process: its VmHWM at exit for a Python script (see
    ``_PEAK_WRAPPER``), else wait4's ru_maxrss."""
    peak_tree_rss_mib: float
    """Peak of the summed resident memory of the process and all its descendants (sampled every 50 ms)."""
    returncode: int
    stdout: str
    stderr: str


def _tree_rss_kib(root: int) -> int:
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE_KIB
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


_PEAK_MARK = "@@peak_rss_kib "
_PEAK_WRAPPER = f"""
import atexit, runpy, sys
def _peak():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            sys.stderr.write('\\n{_PEAK_MARK}' + line.split()[1] + '\\n')
atexit.register(_peak)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')
"""
"""Runs a Python script and reports its own peak RSS at exit. wait4's ru_maxrss cannot be used for it:
a child spawned (vfork, then exec) by a large benchmark process inherits the parent's high-water mark
in ``ru_maxrss``, so a small command run after a large one read as large. VmHWM is the high-water
mark of the program's own address space."""


def _python_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return b"python" in f.readline()
    except OSError:
        return False


def run_measured(argv: list[str]) -> Run:
    """Run ``argv`` to completion: wall time, its own peak RSS and the peak RSS of its process tree."""
    wrapped = _python_script(argv[0])
    if wrapped:
        argv = [_interpreter(argv[0]), "-c", _PEAK_WRAPPER, *argv]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _tree_rss_kib(proc.pid))
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stderr, own_kib = err.read(), usage.ru_maxrss
        if wrapped and _PEAK_MARK in stderr:
            stderr, _, mark = stderr.rpartition(_PEAK_MARK)
            stderr, own_kib = stderr.rstrip("\n"), int(mark.split()[0])
        return Run(wall, own_kib / 1024, peak[0] / 1024, proc.returncode, out.read(), stderr)


def _interpreter(script: str) -> str:
    """The interpreter a script's shebang names."""
    with open(script) as f:
        return f.readline()[2:].strip().split()[0]


def machine() -> str:
    """One line describing where the numbers were measured."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def cached_asi(nodes: int, seed: int, allocation: float = 0.7) -> Path:
    """A generated ASI-like snapshot file, cached by its arguments and the generator's source."""
    import hashlib

    from planner.instances import asi
    from planner.snapshot import write_cluster

    version = hashlib.sha1(Path(asi.__file__).read_bytes()).hexdigest()[:8]
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"asi-{nodes}-seed{seed}-alloc{allocation:g}-{version}.json"
    if not path.exists():
        write_cluster(asi.generate_asi(nodes=nodes, seed=seed, allocation=allocation), path)
    return path


def code_version() -> str:
    """The planner's commit, and the files under planner/ that differ from it (numbers describe the tree that ran)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False).stdout

    changed = [line for line in git("status", "--porcelain", "--", "planner").splitlines() if line.strip()]
    return f"commit {git('rev-parse', '--short', 'HEAD').strip()}" + (
        f" with uncommitted changes to {', '.join(line[3:] for line in changed)}" if changed else ""
    )
