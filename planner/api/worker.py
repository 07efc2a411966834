"""Background execution: every job runs in its own worker process, never on the event loop.

A ``Dispatcher`` thread in the server process claims queued jobs from the store (at most
``concurrency`` at a time), starts one child process per job, and is the only writer of a job's
outcome: the child reads its snapshot from the database, plans, and sends the plan (or an error)
back through a pipe. The dispatcher stops a child that outlives the job's time limit, terminates one
whose job is cancelled, and marks the job ``failed`` with the reason when a child dies without an
answer, so no job is ever left ``running``. Children are started by a fork server preloaded with the
planner, so a job costs a process start of milliseconds, and memory a job allocates is returned to
the system when its process ends. A child exits by itself if the server process disappears.

Replicas sharing one database: the dispatcher claims jobs under a lease in its own name (``owner``:
host, pid and a random part). A lease-keeper thread renews the leases of its jobs (running, or
being started) every third of ``lease_s`` whatever the dispatcher is waiting for, and re-queues
other replicas' jobs whose leases expired; the dispatcher stops a worker whose job it no longer
holds (cancelled through another replica, or taken over after this replica stalled past its lease).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from typing import Any

from planner.cluster import SnapshotError
from planner.engine.common import PlanOptionError
from planner.kinds import KINDS, JobRun
from planner.plans import plan_to_dict
from planner.provenance import stamp_option_sources
from planner.service.store import LEASE_S, MAX_ATTEMPTS, Job, Store
from planner.snapshot import parse_cluster

log = logging.getLogger("planner.api")


@dataclass
class Running:
    job: Job
    process: Any
    conn: Connection
    deadline: float
    died_at: float | None = None
    """When the worker was first seen dead without an answer (its failure is recorded a grace later)."""


DEATH_GRACE_S = 1.0
"""A worker killed by a signal is recorded as failed this long after its death, not at once: when the
whole replica is being killed (``kill -9`` of its process group, a pod deleted), the signal can reach
the worker first, and the replica must not record a failure in its last moments; the job's lease then
expires and another replica runs it."""


OPTION_SOURCES = "option_sources"
"""The key of a stored job's options that holds where each value came from (when a policy was in
play: ``requests.request_options``); the job's plan gets it as ``report.provenance.option_sources``."""


def job_time_limit_s(options: dict[str, Any], max_job_s: float) -> float:
    """The wall time a job may take: its time limit (options as given) plus slack, never above the
    service's cap."""
    requested = float(options.get("time_limit_s", 60.0))
    return min(max_job_s, 2 * requested + 30.0)


class Dispatcher(threading.Thread):
    def __init__(
        self,
        store: Store,
        concurrency: int,
        max_job_s: float = 900.0,
        on_finish: Callable[[str], None] | None = None,
        poll_s: float = 0.02,
        memory_bytes: int | None = None,
        executor: str = "process",
        lease_s: float = LEASE_S,
    ):
        super().__init__(name="planner-dispatcher", daemon=True)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"
        """This replica's name on the leases of the jobs it runs."""
        self.lease_s = lease_s
        self.claimed: set[str] = set()
        """Jobs claimed whose worker is being started (their leases are renewed too)."""
        self.lost: set[str] = set()
        """Jobs the lease keeper found no longer ours; the dispatcher stops their workers."""
        self.keeper = threading.Thread(target=self._keep_leases, name="planner-lease-keeper", daemon=True)
        self.store = store
        self.concurrency = concurrency
        self.max_job_s = max_job_s
        self.on_finish = on_finish or (lambda job_id: None)
        self.poll_s = poll_s
        self.memory_bytes = memory_bytes
        self.executor = executor
        self.running: dict[str, Running] = {}
        self.to_cancel: set[str] = set()
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.keep_s: float | None = None
        """Finished jobs older than this are purged with their snapshots and plans (None: kept)."""
        self.next_purge = 0.0
        self.metrics: Any = None
        """The app's ``ServiceMetrics`` (set by ``create_app``): told of every job that succeeds or fails."""
        self.context = multiprocessing.get_context("forkserver")
        # the planner and both solvers imported once, in the fork server: a job process starts warm
        # (planner.cli too: a job process re-imports the main script, the `planner` console script;
        # the store's database driver too: importing psycopg cost each PostgreSQL job 0.19 s)
        driver = ["psycopg", "sqlalchemy.dialects.postgresql.psycopg"] if store.dialect == "postgresql" else []
        self.context.set_forkserver_preload(["planner.api.worker", "planner.kinds", "planner.cli", "highspy", "ortools.sat.python.cp_model", *driver])
        self.lock = threading.Lock()
        self.alive = True
        self.unrecorded: dict[str, tuple[Job, tuple]] = {}
        """Outcomes the store refused to record (full disk, read-only database): retried every turn
        until it accepts them, so no job is left ``running``."""
        self.threads_per_job = max(1, (os.cpu_count() or 1) // max(1, concurrency))
        """HiGHS threads a job gets unless it asks: concurrent jobs share the cores (HiGHS's threads
        spin, and oversubscribed solves overran their time limits several-fold)."""

    # -- control from request handlers --------------------------------------------------------------

    def poke(self) -> None:
        """A job was queued: look now rather than at the next poll."""
        self.wake.set()

    def cancel(self, job_id: str) -> None:
        """Ask for the job's worker to be stopped (the store has already marked the job cancelled).

        Only the dispatcher thread touches worker processes and their pipes; it stops the worker on
        its next turn, which this call brings forward.
        """
        with self.lock:
            self.to_cancel.add(job_id)
        self.wake.set()

    def _stop_cancelled(self) -> None:
        with self.lock:
            cancelled, self.to_cancel = self.to_cancel, set()
            stopped = [self.running.pop(job_id) for job_id in cancelled if job_id in self.running]
        self._stop_workers(stopped, logging.INFO, "job %s cancelled; its worker was stopped")

    def _stop_workers(self, stopped: list[Running], level: int, message: str) -> None:
        """Stop these workers (already taken out of ``running``), log ``message`` with each job id."""
        for running in stopped:
            _stop(running.process)
            running.conn.close()
            log.log(level, message, running.job.id)
            self.on_finish(running.job.id)

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        self.join(timeout=10)
        with self.lock:
            for running in self.running.values():
                _stop(running.process)
            self.running.clear()

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        self.keeper.start()
        try:  # start the fork server (and its imports) now, not on the first job
            forkserver.ensure_running()
        except Exception:
            log.exception("could not start the fork server early")
        while not self.stopping.is_set():
            try:
                self._stop_cancelled()
                self._stop_lost()
                self._reap()
                self._record_unrecorded()
                if not self.unrecorded:  # a store that cannot record outcomes gets no new jobs
                    self._start_queued()
                self._purge()
            except Exception:
                log.exception("dispatcher loop failed; retrying")
                time.sleep(0.5)
            self.wake.wait(self.poll_s)
            self.wake.clear()
        self.alive = False

    def _keep_leases(self) -> None:
        """Its own thread, so that nothing the dispatcher waits for (a fork server still importing
        the solvers, a slow store write) lets a lease lapse: every third of the lease, renew ours
        (running jobs and jobs being started), mark the ones we no longer hold as lost, and re-queue
        other replicas' jobs whose leases expired."""
        while not self.stopping.wait(self.lease_s / 3):
            try:
                with self.lock:
                    mine = sorted(self.claimed | set(self.running))
                held = self.store.renew(self.owner, mine, self.lease_s)
                if set(mine) - held:
                    with self.lock:
                        self.lost |= set(mine) - held
                    self.wake.set()
                reclaimed = self.store.reclaim_expired()
                if reclaimed["requeued"] or reclaimed["failed"]:
                    log.warning(
                        "jobs whose replica stopped renewing their lease: %d re-queued, %d failed (interrupted %d times)",
                        reclaimed["requeued"],
                        reclaimed["failed"],
                        MAX_ATTEMPTS,
                    )
                    self.wake.set()
            except Exception:
                log.exception("could not renew leases; retrying")

    def _stop_lost(self) -> None:
        """Stop the workers of jobs that are no longer ours (cancelled through another replica, or
        taken over after this replica stalled past its lease)."""
        with self.lock:
            stopped = [self.running.pop(job_id) for job_id in self.lost if job_id in self.running]
            self.lost &= self.claimed  # a job still being started is stopped once it runs
        self._stop_workers(stopped, logging.WARNING, "job %s is no longer ours (cancelled or taken over by another replica); its worker was stopped")

    def _purge(self) -> None:
        """Retention: every quarter of the keeping time (at most hourly), delete what finished before it."""
        if self.keep_s is None or time.monotonic() < self.next_purge:
            return
        self.next_purge = time.monotonic() + min(3600.0, max(0.2, self.keep_s / 4))
        purged = self.store.purge_finished(time.time() - self.keep_s)
        if purged:
            log.info("purged %d finished job(s) older than %.6g days with their snapshots and plans", purged, self.keep_s / 86400)
            if self.metrics is not None:
                self.metrics.purged.inc(purged)

    def _start_queued(self) -> None:
        while len(self.running) < self.concurrency and not self.stopping.is_set():
            job = self.store.claim_next(self.owner, self.lease_s)
            if job is None:
                return
            with self.lock:
                self.claimed.add(job.id)
            parent, child = self.context.Pipe(duplex=False)
            process = self.context.Process(
                target=run_job,
                args=(job.id, self.store.url, child, os.getpid(), self.threads_per_job, self.memory_bytes, self.executor),
                name=f"planner-job-{job.id[:8]}",
                daemon=True,
            )
            try:
                process.start()
            except Exception as err:
                parent.close()
                child.close()
                with self.lock:
                    self.claimed.discard(job.id)
                if self.store.fail(job.id, f"could not start a worker process: {type(err).__name__}: {err}", self.owner):
                    log.exception("job %s: could not start a worker process", job.id)
                self.on_finish(job.id)
                continue
            child.close()
            with self.lock:
                self.running[job.id] = Running(job, process, parent, time.monotonic() + job_time_limit_s(job.options, self.max_job_s))
                self.claimed.discard(job.id)
            log.info("job %s started (%s, attempt %d)", job.id, job.kind, job.attempts)

    def _reap(self) -> None:
        with self.lock:
            items = list(self.running.items())
        for job_id, running in items:
            message = None
            try:
                while running.conn.poll():
                    message = running.conn.recv()
                    if message[0] == "progress":
                        self._set_progress(job_id, float(message[1]))
                        message = None
                    else:
                        break
            except (EOFError, OSError):
                message = None
            if message is not None:
                self._finish(job_id, running, message)
            elif not running.process.is_alive():
                running.process.join(timeout=1)
                code = running.process.exitcode
                if code is not None and code < 0:
                    now = time.monotonic()
                    if running.died_at is None:
                        running.died_at = now
                    if now - running.died_at < DEATH_GRACE_S:
                        continue
                if code == FORK_SERVER_GONE:  # the fork server died: its pipe closed, the worker may live on
                    _kill_pid(running.process.pid)
                why = f"worker process died without an answer (exit code {code})"
                if self.memory_bytes is not None and code is not None and code < 0:
                    why += f"; a native library may have run out of the job's memory cap of {self.memory_bytes / 2**30:.1f} GiB"
                self._finish(job_id, running, ("error", why))
            elif time.monotonic() > running.deadline:
                _stop(running.process)
                limit = job_time_limit_s(running.job.options, self.max_job_s)
                self._finish(job_id, running, ("error", f"exceeded the job time limit of {limit:g} s and was stopped"))

    def _finish(self, job_id: str, running: Running, message: tuple) -> None:
        with self.lock:
            self.running.pop(job_id, None)
        running.conn.close()
        running.process.join(timeout=5)
        self.unrecorded[job_id] = (running.job, message)
        self._record_unrecorded()

    def _record_unrecorded(self) -> None:
        """Write every pending outcome; one the store refuses stays pending for the next turn."""
        for job_id, (job, message) in list(self.unrecorded.items()):
            try:
                if message[0] == "plan":
                    _, body, summary, wall_s = message
                    if self.store.succeed(job_id, body, summary, self.owner) is not None:
                        if self.metrics is not None:
                            self.metrics.succeeded(job.kind, wall_s, summary, body)
                        log.info("job %s succeeded in %.2f s", job_id, wall_s)
                    else:
                        log.warning("job %s: plan discarded, the job is no longer ours (cancelled or taken over)", job_id)
                elif self.store.fail(job_id, message[1], self.owner):
                    if self.metrics is not None:
                        self.metrics.ended(job.kind, "failed")
                    log.error("job %s failed: %s", job_id, message[1], extra={"traceback": message[2]} if len(message) > 2 else None)
            except Exception:
                log.exception("job %s: could not record its outcome; retrying", job_id)
                return
            del self.unrecorded[job_id]
            self.on_finish(job_id)

    def _set_progress(self, job_id: str, progress: float) -> None:
        try:
            self.store.set_progress(job_id, progress)
        except Exception:  # noqa: BLE001 - progress is advisory; the outcome is what must be written
            log.warning("job %s: could not record progress", job_id)


FORK_SERVER_GONE = 255
"""The exit code multiprocessing reports for a fork-server child once the fork server has died."""


def _kill_pid(pid: int | None) -> None:
    """SIGKILL a worker by pid. When the fork server dies, multiprocessing reports its workers dead
    (exit code 255) while they may still run, outside the concurrency bound; this makes them so."""
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(process: Any) -> None:
    if process.is_alive():
        process.terminate()
        process.join(timeout=3)
        if process.is_alive():
            process.kill()
            process.join(timeout=3)
    if process.exitcode == FORK_SERVER_GONE:
        _kill_pid(process.pid)


# ----------------------------------------------------------------------------------------------
# The child
# ----------------------------------------------------------------------------------------------


def run_job(
    job_id: str,
    url: str,
    conn: Connection,
    server_pid: int,
    threads_per_job: int = 1,
    memory_bytes: int | None = None,
    executor: str = "process",
) -> None:
    """Worker-process entry: plan the job and send ('plan', body, summary, wall_s) or ('error', text).

    With ``memory_bytes`` the process's address space is capped (``RLIMIT_AS``): a job that needs
    more fails with that reason instead of taking the machine's memory from the other jobs. With
    ``executor`` 'ray' a defrag job's pieces run as tasks on the server's Ray (``RAY_ADDRESS``,
    set and checked by ``serve``); else in the job's own process.
    """
    threading.Thread(target=_exit_with_server, args=(server_pid,), daemon=True).start()
    start = time.perf_counter()
    if memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        store = Store(url, create=False)  # the server created the tables
        job = store.get_job(job_id)
        text = store.snapshot_of(job_id)
        store.close()
        if job is None or text is None:
            conn.send(("error", "job vanished from the store"))
            return
        try:
            cluster = parse_cluster(text)

            def progress(what: str, done: int, total: int) -> None:
                # rounds from 0.1 up; the phases after them (trim, finish) never move the fraction back
                conn.send(("progress", {"trim": 0.9, "finish": 0.95}.get(what, min(0.9, 0.1 + 0.1 * done))))

            options = dict(job.options)
            sources = options.pop(OPTION_SOURCES, None)
            plan = KINDS[job.kind].plan_job(cluster, options, JobRun(threads_per_job, executor, progress))
            if sources is not None:
                stamp_option_sources(plan, sources)
        except (SnapshotError, PlanOptionError, ValueError) as err:
            conn.send(("error", f"bad request: {err}"))
            return
        report = plan.exact.report if hasattr(plan, "exact") else plan.report
        summary = {"kind": job.kind, "method": report.method, "status": report.status, "objective": report.objective}
        conn.send(("plan", plan_to_dict(plan), summary, time.perf_counter() - start))
    except MemoryError:
        cap = f" of {memory_bytes / 2**30:.1f} GiB" if memory_bytes is not None else ""
        conn.send(("error", f"the job ran out of memory (its cap{cap}); plan a smaller part of the cluster or use method 'hybrid'"))
    except Exception as err:  # noqa: BLE001 - reported to the dispatcher, logged there with the job id and the traceback
        # (by the server's log formatter, which escapes it: this process's logging is not configured)
        conn.send(("error", f"internal error: {type(err).__name__}: {err}", traceback.format_exc()))
    finally:
        conn.close()


def _exit_with_server(server_pid: int) -> None:
    while True:
        time.sleep(1.0)
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            os._exit(3)
        except PermissionError:
            pass
