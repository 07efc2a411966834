"""Load on the planning service: 1,000 requests for 25-node defrag plans from 20 concurrent clients.

Starts `planner serve` (uvicorn, SQLite file, one worker process per job, concurrency = cores) in a
subprocess and drives it over HTTP:

* load: 1,000 `POST /v1/defrag?wait=60` (each answered with the plan, 200, or the job, 202) from 20
  concurrent clients, over ten different seeded 25-node ASI-like snapshots; status codes, latency
  percentiles, throughput, and the server's resident memory sampled every second (start and end);
* burst: 200 requests at once (no wait) against a server whose queue holds 16: they must come back as
  202 or 429 with Retry-After, never as errors or timeouts.

Writes benchmarks/results/service_load.md and service_load.png.

    .venv/bin/python benchmarks/service_load.py [--requests 1000] [--clients 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import RESULTS, machine  # noqa: E402

from planner.api.harness import Server, rss_mib  # noqa: E402
from planner.instances.asi import generate_asi  # noqa: E402
from planner.snapshot import cluster_to_dict  # noqa: E402

TOKEN = "load-test-token"


class MemorySampler(threading.Thread):
    """Resident memory of the server process (and of its whole tree) every ``every_s`` seconds."""

    def __init__(self, server: Server, every_s: float = 1.0):
        super().__init__(daemon=True)
        self.server = server
        self.every_s = every_s
        self.samples: list[tuple[float, float, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stopping.is_set():
            pid = self.server.process.pid
            try:
                own = rss_mib(pid)
                tree = own + sum(_safe_rss(p) for p in self.server.descendants())
                self.samples.append((time.monotonic() - start, own, tree))
            except FileNotFoundError:
                pass
            self.stopping.wait(self.every_s)


def _safe_rss(pid: int) -> float:
    try:
        return rss_mib(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0


async def load(url: str, snapshots: list[dict], requests: int, clients: int) -> list[tuple[int, float, str]]:
    """(status code, latency s, error) for every request."""
    results: list[tuple[int, float, str]] = []
    counter = iter(range(requests))
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async def client_loop() -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120.0) as client:
            for i in counter:
                start = time.perf_counter()
                try:
                    response = await client.post("/v1/defrag", params={"wait": 60}, json={"snapshot": snapshots[i % len(snapshots)]})
                    results.append((response.status_code, time.perf_counter() - start, ""))
                except httpx.HTTPError as err:
                    results.append((0, time.perf_counter() - start, type(err).__name__))

    await asyncio.gather(*(client_loop() for _ in range(clients)))
    return results


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    args = parser.parse_args()
    snapshots = [cluster_to_dict(generate_asi(nodes=25, seed=s)) for s in range(10)]
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "load.db", TOKEN, "--max-queue", "64").start()
        try:
            with server.client() as client:  # warm up: the fork server and the first job
                client.post("/v1/defrag", params={"wait": 60}, json={"snapshot": snapshots[0]})
            sampler = MemorySampler(server)
            sampler.start()
            time.sleep(1.5)
            start = time.perf_counter()
            results = asyncio.run(load(server.url, snapshots, args.requests, args.clients))
            wall = time.perf_counter() - start
            time.sleep(1.5)
            sampler.stopping.set()
            sampler.join()
            with server.client() as client:
                metrics = client.get("/metrics").text
        finally:
            server.stop()
        burst_server = Server(Path(tmp) / "burst.db", TOKEN, "--max-queue", "16").start()
        try:
            burst_results = asyncio.run(burst(burst_server.url, snapshots[0], 200))
        finally:
            burst_server.stop()
    write_results(args, results, wall, sampler.samples, burst_results, metrics)


def write_results(args, results, wall, samples, burst_results, metrics) -> None:  # type: ignore[no-untyped-def]
    codes: dict[int, int] = {}
    for code, _, _ in results:
        codes[code] = codes.get(code, 0) + 1
    latencies = [latency for code, latency, _ in results if code in (200, 202)]
    errors = sum(1 for code, _, _ in results if code == 0 or code >= 500)
    own_start, own_end = samples[0][1], samples[-1][1]
    tree_start, tree_end = samples[0][2], samples[-1][2]
    burst_codes: dict[int, int] = {}
    for code, _, _ in burst_results:
        burst_codes[code] = burst_codes.get(code, 0) + 1
    retry_after_ok = all(retry.isdigit() for code, retry, _ in burst_results if code == 429)
    jobs_line = next((line for line in metrics.splitlines() if 'status="succeeded"' in line), "")
    lines = [
        "# Planning service under load",
        "",
        f"Machine: {machine()}. Reproduce: `.venv/bin/python benchmarks/service_load.py`.",
        "",
        f"`planner serve` (uvicorn, SQLite, concurrency = cores, one worker process per job), {args.requests:,} "
        f"`POST /v1/defrag?wait=60` requests for 25-node ASI-like snapshots (10 different seeds, default IPC "
        f"options) from {args.clients} concurrent clients. Latency is request to response (the plan is in "
        "the 200 response).",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| requests | {len(results):,} |",
        f"| responses by status | {', '.join(f'{code}: {n}' for code, n in sorted(codes.items()))} |",
        f"| 5xx or transport errors | {errors} |",
        f"| p50 latency | {percentile(latencies, 0.5) * 1000:.0f} ms |",
        f"| p90 latency | {percentile(latencies, 0.9) * 1000:.0f} ms |",
        f"| p99 latency | {percentile(latencies, 0.99) * 1000:.0f} ms |",
        f"| max latency | {max(latencies) * 1000:.0f} ms |",
        f"| mean latency | {statistics.mean(latencies) * 1000:.0f} ms |",
        f"| throughput | {len(results) / wall:.1f} requests/s ({wall:.1f} s in all) |",
        f"| server process RSS, start -> end | {own_start:.0f} -> {own_end:.0f} MiB (max {max(s[1] for s in samples):.0f}) |",
        f"| server + fork server + workers RSS, start -> end | {tree_start:.0f} -> {tree_end:.0f} MiB (max {max(s[2] for s in samples):.0f}) |",
        f"| metrics after the run | `{jobs_line}` |",
        "",
        "## Burst beyond the queue",
        "",
        "200 requests at once (no wait) against a server whose queue holds 16 jobs:",
        "",
        f"* responses by status: {', '.join(f'{code}: {n}' for code, n in sorted(burst_codes.items()))}",
        f"* every 429 carries a numeric Retry-After: {'yes' if retry_after_ok else 'NO'}",
        f"* errors or timeouts: {sum(1 for code, _, _ in burst_results if code == 0 or code >= 500)}",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "service_load.md").write_text("\n".join(lines) + "\n")
    plot(samples, results)
    print("\n".join(lines))


def plot(samples, results) -> None:  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    axes[0].plot([s[0] for s in samples], [s[1] for s in samples], label="server process")
    axes[0].plot([s[0] for s in samples], [s[2] for s in samples], label="with fork server and workers")
    axes[0].set_xlabel("seconds")
    axes[0].set_ylabel("RSS (MiB)")
    axes[0].set_ylim(bottom=0)
    axes[0].set_title("Server memory during the load")
    axes[0].legend()
    axes[1].hist([latency * 1000 for code, latency, _ in results if code in (200, 202)], bins=50)
    axes[1].set_xlabel("latency (ms)")
    axes[1].set_ylabel("requests")
    axes[1].set_title("Latency of ?wait requests")
    fig.tight_layout()
    fig.savefig(RESULTS / "service_load.png", dpi=110)


if __name__ == "__main__":
    main()
