"""Load on the planning service: SQLite with one replica, and two replicas on one PostgreSQL with one
killed with -9 halfway.

Each scenario sends 1,000 `POST /v1/defrag?wait=60` requests for 25-node ASI-like snapshots (ten
seeds, default IPC options) from 20 concurrent clients, each request with its own Idempotency-Key:

* sqlite: `planner serve` on a SQLite file (one replica, concurrency = cores);
* postgresql: two `planner serve` replicas on one throwaway PostgreSQL server (each concurrency =
  cores), clients spread over both. When half the requests are answered, one replica is killed with
  SIGKILL (with its workers); its clients fail over to the other replica with the same key, as a
  load balancer or `planner submit` would. Afterwards every job in the database must end
  `succeeded`; no job may have run on two replicas at once (from both replicas' logs: each run's
  start and end, a killed run ending at the kill); no idempotency key may have two plans;
* burst: 200 requests at once (no wait) against a SQLite server whose queue holds 16: 202 or 429
  with Retry-After, never errors or timeouts;
* healthz (``--scenario healthz`` runs only this one): ``GET /healthz`` latency (p50/p99) while 4
  clients send ~1 MiB bodies back to back: idle, ``POST /v1/report``, and ``POST /v1/defrag``
  against a queue of 1 (nearly every submission ends in 429). The load runs in a separate process
  so that the probe's own client does not compete with it for the interpreter lock. Writes
  benchmarks/results/service_healthz.md, one row per ``--label`` (a rerun replaces its row).

`/metrics` of each server is parsed with `prometheus_client.parser`. Writes
benchmarks/results/service_load.md and service_load.png.

    .venv/bin/python benchmarks/service_load.py [--requests 1000] [--clients 20] [--lease-s 30]
    .venv/bin/python benchmarks/service_load.py --scenario healthz --label after [--healthz-s 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support
from _measure import RESULTS, machine

from planner.instances.asi import generate_asi
from planner.snapshot import cluster_to_dict
from tests.support.harness import Server, rss_mib
from tests.support.harness_postgres import ThrowawayPostgres

TOKEN = "load-test-token-0123456789"


class MemorySampler(threading.Thread):
    """Resident memory of each server process (and of its whole tree) every ``every_s`` seconds."""

    def __init__(self, servers: list[Server], every_s: float = 1.0):
        super().__init__(daemon=True)
        self.servers = servers
        self.every_s = every_s
        self.samples: list[list[tuple[float, float, float]]] = [[] for _ in servers]
        self.stopping = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stopping.is_set():
            for k, server in enumerate(self.servers):
                if server.process.poll() is not None:
                    continue
                try:
                    own = rss_mib(server.process.pid)
                    tree = own + sum(_safe_rss(p) for p in server.descendants())
                    self.samples[k].append((time.monotonic() - start, own, tree))
                except FileNotFoundError:
                    pass
            self.stopping.wait(self.every_s)


def _safe_rss(pid: int) -> float:
    try:
        return rss_mib(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0


@dataclass
class Outcome:
    status: int
    latency_s: float
    error: str
    job_id: str | None
    key: str
    answered_by: int | None
    failovers: int


@dataclass
class Scenario:
    name: str
    servers: list[Server]
    outcomes: list[Outcome]
    wall_s: float
    samples: list[list[tuple[float, float, float]]]
    metrics: dict[int, str]
    killed: int | None = None
    killed_at: float | None = None
    """Unix time of the kill."""
    checks: dict[str, str] = field(default_factory=dict)


async def load(urls: list[str], snapshots: list[dict], requests: int, clients: int, run: str, kill_at: int | None = None, kill=None) -> list[Outcome]:  # type: ignore[no-untyped-def]
    """Every request's outcome. Client c starts on ``urls[c % len(urls)]``; a transport error sends
    the request, with the same Idempotency-Key, to the next server (up to 3 rounds). With ``kill_at``,
    ``kill()`` runs once that many requests have been answered."""
    outcomes: list[Outcome] = []
    counter = iter(range(requests))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    killed = asyncio.Event()

    async def client_loop(c: int) -> None:
        sessions = [httpx.AsyncClient(base_url=url, headers=headers, timeout=120.0) for url in urls]
        try:
            for i in counter:
                key = f"{run}-{i}"
                start = time.perf_counter()
                outcome = None
                for attempt in range(3 * len(urls)):
                    k = (c + attempt) % len(urls)
                    try:
                        response = await sessions[k].post(
                            "/v1/defrag", params={"wait": 60}, json={"snapshot": snapshots[i % len(snapshots)]}, headers={"Idempotency-Key": key}
                        )
                    except httpx.TransportError as err:
                        outcome = Outcome(0, time.perf_counter() - start, type(err).__name__, None, key, None, attempt)
                        await asyncio.sleep(0.2)
                        continue
                    job_id = response.headers.get("x-job-id") if response.status_code == 200 else None
                    if response.status_code == 202:
                        job_id = response.json()["job_id"]
                    outcome = Outcome(response.status_code, time.perf_counter() - start, "", job_id, key, k, attempt)
                    break
                outcomes.append(outcome)
                if kill_at is not None and len(outcomes) >= kill_at and not killed.is_set():
                    killed.set()
                    await asyncio.get_running_loop().run_in_executor(None, kill)
        finally:
            for session in sessions:
                await session.aclose()

    await asyncio.gather(*(client_loop(c) for c in range(clients)))
    return outcomes


async def burst(url: str, snapshot: dict, count: int) -> list[tuple[int, str, str]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60.0, limits=httpx.Limits(max_connections=count)) as client:

        async def one() -> tuple[int, str, str]:
            try:
                response = await client.post("/v1/defrag", json={"snapshot": snapshot})
                return response.status_code, response.headers.get("retry-after", ""), ""
            except httpx.HTTPError as err:
                return 0, "", type(err).__name__

        return list(await asyncio.gather(*(one() for _ in range(count))))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_scenario(name: str, servers: list[Server], snapshots: list[dict], args: argparse.Namespace, kill: bool) -> Scenario:
    for server in servers:
        with server.client() as client:  # warm up: the fork server and a first job
            client.post("/v1/defrag", params={"wait": 60}, json={"snapshot": snapshots[0]})
    sampler = MemorySampler(servers)
    sampler.start()
    time.sleep(1.5)
    scenario = Scenario(name, servers, [], 0.0, sampler.samples, {})

    def kill_first() -> None:
        scenario.killed, scenario.killed_at = 0, time.time()
        servers[0].kill()

    start = time.perf_counter()
    scenario.outcomes = asyncio.run(
        load([s.url for s in servers], snapshots, args.requests, args.clients, name, args.requests // 2 if kill else None, kill_first)
    )
    scenario.wall_s = time.perf_counter() - start
    time.sleep(1.5)
    sampler.stopping.set()
    sampler.join()
    for k, server in enumerate(servers):
        if server.process.poll() is None:
            with server.client() as client:
                scenario.metrics[k] = client.get("/metrics").text
    return scenario


def audit(scenario: Scenario, url: str, lease_s: float) -> None:
    """Wait until every job in the database has ended, then check: all succeeded, one plan per
    idempotency key, no job running on two replicas at once (from their logs)."""
    engine = sa.create_engine(url)
    deadline = time.monotonic() + 6 * lease_s + 300
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            open_jobs = conn.execute(sa.text("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")).scalar_one()
        if open_jobs == 0:
            break
        time.sleep(1.0)
    with engine.connect() as conn:
        statuses = dict(conn.execute(sa.text("SELECT status, count(*) FROM jobs GROUP BY status")).all())
        twice = conn.execute(
            sa.text(
                "SELECT count(*) FROM (SELECT j.idempotency_key FROM jobs j JOIN plans p ON p.job_id = j.id "
                "WHERE j.idempotency_key IS NOT NULL GROUP BY j.idempotency_key HAVING count(*) > 1) x"
            )
        ).scalar_one()
        attempts = dict(conn.execute(sa.text("SELECT attempts, count(*) FROM jobs GROUP BY attempts")).all())
        snapshots, raw, stored = conn.execute(sa.text("SELECT count(*), sum(raw_bytes), sum(length(body)) FROM snapshots")).one()
        errors = [e for (e,) in conn.execute(sa.text("SELECT error FROM jobs WHERE status <> 'succeeded'"))]
    engine.dispose()
    accepted = {o.job_id for o in scenario.outcomes if o.status in (200, 202) and o.job_id}
    scenario.checks = {
        "jobs in the database by status": ", ".join(f"{k}: {v:,}" for k, v in sorted(statuses.items())),
        "jobs by attempts": ", ".join(f"{k}: {v:,}" for k, v in sorted(attempts.items())),
        "accepted jobs (200 or 202 seen by a client)": f"{len(accepted):,}",
        "idempotency keys with more than one plan": str(twice),
        "jobs run on two replicas at once": str(overlaps(scenario)),
        "errors of jobs that did not succeed": "; ".join(sorted({e or "-" for e in errors})) or "none",
        "snapshots stored": f"{snapshots:,} ({(raw or 0) / 1024:,.0f} KiB as received, {(stored or 0) / 1024:,.0f} KiB stored)",
    }


def _runs(log: Path, until: float | None) -> dict[str, list[tuple[float, float]]]:
    """Each job's runs on one replica (start, end) from its JSON log; a run still open ends at ``until``."""
    runs: dict[str, list[tuple[float, float]]] = {}
    started: dict[str, float] = {}
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        words = entry.get("message", "").split()
        if len(words) < 3 or words[0] != "job":
            continue
        at = datetime.fromisoformat(entry["ts"]).timestamp()
        job_id = words[1]
        if words[2] == "started":
            started[job_id] = at
        elif job_id in started and words[2] in ("succeeded", "failed:", "is", "cancelled;", "plan"):
            runs.setdefault(job_id, []).append((started.pop(job_id), at))
    for job_id, at in started.items():
        runs.setdefault(job_id, []).append((at, until if until is not None else time.time()))
    return runs


def overlaps(scenario: Scenario) -> int:
    """Jobs whose runs on two different replicas overlap in time."""
    per_replica = [_runs(server.log, scenario.killed_at if k == scenario.killed else None) for k, server in enumerate(scenario.servers)]
    bad = 0
    for job_id in set().union(*per_replica):
        spans = [(start, end, k) for k, runs in enumerate(per_replica) for start, end in runs.get(job_id, [])]
        if any(a[2] != b[2] and a[0] < b[1] and b[0] < a[1] for a in spans for b in spans):
            bad += 1
    return bad


HEALTHZ_NODES = 1400
"""An ASI-like snapshot of this many nodes is a ~1 MiB body (just under the service's large-body threshold)."""
HEALTHZ_CLIENTS = 4


def _send_bodies(url: str, path: str, body: bytes, clients: int, seconds: float, counts) -> None:  # type: ignore[no-untyped-def]
    """(In a child process.) ``clients`` clients POST ``body`` to ``path`` back to back for ``seconds``;
    ``counts`` (a shared dict) gets the responses by status."""

    async def run() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        deadline = time.monotonic() + seconds
        seen: dict[int, int] = {}

        async def one(client: httpx.AsyncClient) -> None:
            while time.monotonic() < deadline:
                try:
                    status = (await client.post(path, content=body, headers=headers)).status_code
                except httpx.HTTPError:
                    status = 0
                seen[status] = seen.get(status, 0) + 1

        async with httpx.AsyncClient(base_url=url, timeout=60.0) as client:
            await asyncio.gather(*(one(client) for _ in range(clients)))
        counts.update(seen)

    asyncio.run(run())


def probe_healthz(url: str, seconds: float, every_s: float = 0.02) -> list[float]:
    """Latencies (s) of sequential ``GET /healthz`` requests for ``seconds``, one every ``every_s``."""
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=30.0) as client:
        while time.monotonic() < deadline:
            start = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - start)
            time.sleep(every_s)
    return latencies


def healthz_scenario(tmp: Path, seconds: float) -> dict[str, dict[str, float]]:
    """``/healthz`` p50/p99/max (ms) idle and under each load, and the load's responses by status."""
    import multiprocessing

    body = json.dumps({"snapshot": cluster_to_dict(generate_asi(nodes=HEALTHZ_NODES, seed=1))}).encode()
    server = Server(tmp / "healthz.db", TOKEN, "--workers", "1", "--max-queue", "1").start()
    results: dict[str, dict[str, float]] = {}
    try:
        with server.client() as client:  # warm up: the first parse of a large body (parser processes ready)
            assert client.post("/v1/report", content=body, headers={"Content-Type": "application/json"}).status_code == 200
        probe_healthz(server.url, 1.0)
        for name, path in (("idle", None), ("report", "/v1/report"), ("defrag", "/v1/defrag")):
            with multiprocessing.Manager() as manager:
                counts = manager.dict()
                load = None
                if path is not None:
                    load = multiprocessing.get_context("spawn").Process(
                        target=_send_bodies, args=(server.url, path, body, HEALTHZ_CLIENTS, seconds + 2.0, counts)
                    )
                    load.start()
                    time.sleep(2.0)  # the load under way
                latencies = probe_healthz(server.url, seconds)
                if load is not None:
                    load.join(timeout=120)
                statuses = dict(counts)
            results[name] = {
                "p50_ms": percentile(latencies, 0.5) * 1000,
                "p99_ms": percentile(latencies, 0.99) * 1000,
                "max_ms": max(latencies) * 1000,
                "probes": len(latencies),
                "responses": ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items())) or "-",
            }
    finally:
        server.stop()
    return results


def write_healthz(results: dict[str, dict[str, float]], label: str, seconds: float, body_bytes: int, commit: str | None) -> None:
    """Add (or replace) this label's row in benchmarks/results/service_healthz.md."""
    import subprocess

    path = RESULTS / "service_healthz.md"
    commit = (
        commit
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,  # no git: an empty commit cell
        ).stdout.strip()
    )
    row = (
        f"| {label} | {commit} | "
        + " | ".join(f"{results[name]['p50_ms']:.1f} / {results[name]['p99_ms']:.1f} / {results[name]['max_ms']:.0f}" for name in ("idle", "report", "defrag"))
        + f" | {results['report']['responses']} | {results['defrag']['responses']} |"
    )
    rows = []
    if path.exists():
        rows = [
            line for line in path.read_text().splitlines() if line.startswith("| ") and not line.startswith("| run ") and not line.startswith(f"| {label} |")
        ]
    lines = [
        "# /healthz latency under large bodies",
        "",
        (
            f"Machine: {machine()} (shared: other work ran at the same time). Reproduce: "
            "`.venv/bin/python benchmarks/service_load.py --scenario healthz --label NAME`."
        ),
        "",
        (
            f"`planner serve --workers 1 --max-queue 1` on SQLite. One client sends `GET /healthz` one after another "
            f"(20 ms apart) for {seconds:g} s (after one report of the body, as a warm-up) while {HEALTHZ_CLIENTS} clients (another process) send the same "
            f"{body_bytes / 2**20:.2f} MiB body ({HEALTHZ_NODES}-node ASI snapshot) back to back: to `/v1/report`, then "
            "to `/v1/defrag` (the queue holds one job, so nearly every submission is refused with 429)."
        ),
        "",
        (
            "| run | commit | idle p50 / p99 / max (ms) | 4 x report p50 / p99 / max (ms) | 4 x defrag p50 / p99 / max (ms) "
            "| report responses | defrag responses |"
        ),
        "|---|---|---:|---:|---:|---|---|",
        *rows,
        row,
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--lease-s", type=float, default=30.0, help="The replicas' --lease-s (the default of planner serve).")
    parser.add_argument("--scenario", choices=("all", "healthz"), default="all", help="healthz: only the /healthz latency scenario.")
    parser.add_argument("--healthz-s", type=float, default=20.0, help="Seconds of /healthz probing per load.")
    parser.add_argument("--label", default="current", help="The row of service_healthz.md this run writes.")
    parser.add_argument(
        "--commit", help="The commit of the planner measured (default: this checkout's HEAD; give it when PYTHONPATH points at another copy of the code)."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = healthz_scenario(Path(tmp), args.healthz_s)
    body_bytes = len(json.dumps({"snapshot": cluster_to_dict(generate_asi(nodes=HEALTHZ_NODES, seed=1))}))
    write_healthz(results, args.label, args.healthz_s, body_bytes, args.commit)
    if args.scenario == "healthz":
        return
    snapshots = [cluster_to_dict(generate_asi(nodes=25, seed=s)) for s in range(10)]
    scenarios = []
    with tempfile.TemporaryDirectory() as tmp:
        postgres = ThrowawayPostgres().start()
        try:
            url = postgres.create_database()
            replicas = [
                Server(Path(tmp) / f"replica{k}.db", TOKEN, "--max-queue", "64", "--lease-s", str(args.lease_s), env={"DATABASE_URL": url}).start()
                for k in range(2)
            ]
            try:
                scenario = run_scenario("postgresql", replicas, snapshots, args, kill=True)
                audit(scenario, url, args.lease_s)
                scenarios.append(scenario)
            finally:
                for server in replicas:
                    server.stop()
        finally:
            postgres.stop()
        db = Path(tmp) / "load.db"
        server = Server(db, TOKEN, "--max-queue", "64").start()
        try:
            scenario = run_scenario("sqlite", [server], snapshots, args, kill=False)
            audit(scenario, f"sqlite:///{db}", args.lease_s)
            scenarios.append(scenario)
        finally:
            server.stop()
        burst_server = Server(Path(tmp) / "burst.db", TOKEN, "--max-queue", "16").start()
        try:
            burst_results = asyncio.run(burst(burst_server.url, snapshots[0], 200))
        finally:
            burst_server.stop()
    write_results(args, scenarios, burst_results)


def _metrics_check(text: str) -> str:
    from prometheus_client.parser import text_string_to_metric_families

    families = {f.name: f for f in text_string_to_metric_families(text)}
    finished = families.get("planner_jobs_finished")
    succeeded = sum(s.value for s in finished.samples if s.name.endswith("_total") and s.labels.get("status") == "succeeded") if finished else 0
    return f"parses: {len(families)} families, planner_jobs_finished_total{{status=succeeded}} {succeeded:,.0f}"


def scenario_rows(scenario: Scenario) -> list[str]:
    outcomes = scenario.outcomes
    codes: dict[int, int] = {}
    for o in outcomes:
        codes[o.status] = codes.get(o.status, 0) + 1
    latencies = [o.latency_s for o in outcomes if o.status in (200, 202)]
    errors = sum(1 for o in outcomes if o.status == 0 or o.status >= 500)
    failed_over = sum(1 for o in outcomes if o.failovers > 0)
    rows = [
        f"| requests | {len(outcomes):,} |",
        f"| responses by status | {', '.join(f'{code}: {n}' for code, n in sorted(codes.items()))} |",
        f"| 5xx, or transport errors after failing over | {errors} |",
        f"| requests that failed over to the other replica | {failed_over} |",
        (
            f"| p50 / p90 / p99 / max latency | {percentile(latencies, 0.5) * 1000:.0f} / {percentile(latencies, 0.9) * 1000:.0f} / "
            f"{percentile(latencies, 0.99) * 1000:.0f} / {max(latencies) * 1000:.0f} ms |"
        ),
        f"| mean latency | {statistics.mean(latencies) * 1000:.0f} ms |",
        f"| throughput | {len(outcomes) / scenario.wall_s:.1f} requests/s ({scenario.wall_s:.1f} s in all) |",
    ]
    for k, samples in enumerate(scenario.samples):
        if not samples:
            continue
        label = f"replica {k}" + (" (killed halfway)" if k == scenario.killed else "") if len(scenario.servers) > 1 else "server"
        rows.append(f"| {label}: process RSS start -> end (max) | {samples[0][1]:.0f} -> {samples[-1][1]:.0f} MiB ({max(s[1] for s in samples):.0f}) |")
        rows.append(f"| {label}: with fork server and workers | {samples[0][2]:.0f} -> {samples[-1][2]:.0f} MiB ({max(s[2] for s in samples):.0f}) |")
        answered = sum(1 for o in outcomes if o.answered_by == k)
        rows.append(f"| {label}: requests answered | {answered:,} |")
    rows += [f"| {what} | {value} |" for what, value in scenario.checks.items()]
    rows += [
        f"| `/metrics` of {'replica ' + str(k) if len(scenario.servers) > 1 else 'the server'} | {_metrics_check(text)} |"
        for k, text in sorted(scenario.metrics.items())
    ]
    return rows


def write_results(args, scenarios, burst_results) -> None:  # type: ignore[no-untyped-def]
    burst_codes: dict[int, int] = {}
    for code, _, _ in burst_results:
        burst_codes[code] = burst_codes.get(code, 0) + 1
    retry_after_ok = all(retry.isdigit() for code, retry, _ in burst_results if code == 429)
    lines = [
        "# Planning service under load",
        "",
        f"Machine: {machine()}. Reproduce: `.venv/bin/python benchmarks/service_load.py` (about 5 minutes).",
        "",
        (
            f"{args.requests:,} `POST /v1/defrag?wait=60` requests for 25-node ASI-like snapshots (10 different seeds, "
            f"default IPC options) from {args.clients} concurrent clients, each request with its own Idempotency-Key. "
            "Latency is request to response (the plan is in the 200 response; a 202 means the job was still running "
            "after 60 s). Every job is then awaited in the database."
        ),
        "",
    ]
    for scenario in scenarios:
        if scenario.name == "postgresql":
            lines += [
                "## Two replicas on PostgreSQL, one killed with -9 halfway",
                "",
                (
                    f"Two `planner serve` replicas (each concurrency = cores, `--lease-s {args.lease_s:g}`) on one PostgreSQL 15 "
                    "database (a throwaway server, fsync off); client c starts on replica c mod 2. When half the requests "
                    "have been answered, replica 0 is killed with SIGKILL together with its workers; a request that meets "
                    "a refused or dropped connection goes to the other replica with the same Idempotency-Key. Jobs replica 0 "
                    "was running are re-queued by replica 1 once their leases expire."
                ),
                "",
            ]
        else:
            lines += ["## One replica on SQLite", "", "`planner serve` on a SQLite file (concurrency = cores), the same load, no kill.", ""]
        lines += ["| measure | value |", "|---|---:|", *scenario_rows(scenario), ""]
    lines += [
        "## Burst beyond the queue",
        "",
        "200 requests at once (no wait) against a SQLite server whose queue holds 16 jobs:",
        "",
        f"* responses by status: {', '.join(f'{code}: {n}' for code, n in sorted(burst_codes.items()))}",
        f"* every 429 carries a numeric Retry-After: {'yes' if retry_after_ok else 'NO'}",
        f"* errors or timeouts: {sum(1 for code, _, _ in burst_results if code == 0 or code >= 500)}",
        "",
        "The docs page rendered offline in headless Chromium: `benchmarks/results/docs.png` (`.venv/bin/python benchmarks/docs_screenshot.py`).",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "service_load.md").write_text("\n".join(lines) + "\n")
    plot(scenarios)
    print("\n".join(lines))


def plot(scenarios) -> None:  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    longest = max(o.latency_s for scenario in scenarios for o in scenario.outcomes)
    bins = [longest * i / 70 for i in range(71)]  # one set of bins: the scenarios' bars compare
    for scenario in scenarios:
        for k, samples in enumerate(scenario.samples):
            label = f"{scenario.name} replica {k}" if len(scenario.servers) > 1 else scenario.name
            axes[0].plot([s[0] for s in samples], [s[2] for s in samples], label=label)
        axes[1].hist([o.latency_s for o in scenario.outcomes if o.status in (200, 202)], bins=bins, alpha=0.6, label=scenario.name)
    axes[0].set_xlabel("seconds")
    axes[0].set_ylabel("RSS with fork server and workers (MiB)")
    axes[0].set_ylim(bottom=0)
    axes[0].set_title("Server memory during the load")
    axes[0].legend()
    axes[1].set_xlabel("latency (s)")
    axes[1].set_ylabel("requests")
    axes[1].set_yscale("log")
    axes[1].set_title("Latency of ?wait requests")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "service_load.png", dpi=110)


if __name__ == "__main__":
    main()
