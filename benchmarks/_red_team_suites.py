"""The red team's categories (``benchmarks/red_team.py``): what each sends, to which command or route, and how
its cases are judged. ``Context`` holds what the categories share: the fixture files, the child
environment, and one ``planner serve`` on a free loopback port (started on first use)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import httpx
from _measure import REPO
from _red_team_inputs import (
    ARG_MAX_BYTES,
    IMPORT_CONFIG,
    INVALID_QUANTITIES,
    KUBE_LIST,
    MIB,
    NAME_FORMS,
    NAME_SIZES,
    PLAN,
    POLICY,
    QUANTITIES,
    SHAPES,
    SNAPSHOT,
    as_argument,
    fill,
    hostile_name,
    make_piece,
    quantity_list,
)
from _red_team_measure import (
    GROWTH_MIB,
    SAMPLE_S,
    TIME_SLACK_S,
    TRACEBACK,
    Case,
    Finished,
    ServerWatch,
    first_line,
    judge_command,
    judge_response,
    peak_process_mib,
    run_command,
    timed_request,
    tree_changes,
    tree_state,
)

from tests.support.harness import PLANNER, Server, free_port

CATEGORIES = ("yaml", "http", "names", "files", "quantities", "burst")
CLI_LIMIT_S = 10.0
"""A command on these tiny inputs (or a hostile file of at most 5 MB) answers within this, start-up included."""
from planner.api.route_rules import ROUTE_RULES  # the service's own limit of each body route

HTTP_LIMIT_S = 10.0
"""A body route the service gives no rule (none today): the limit the harness holds it to."""
ID_LIMIT_S = 5.0
HEALTH_LIMIT_S = 1.0
TOKEN = "red-team-token-0123456789abcdef"
BURST = 100
BURST_QUICK = 12
FIG15 = REPO / "instances" / "fig15-ejection-chain.json"
ASI = REPO / "instances" / "asi-500.json"
PLAIN_SNAPSHOT = fill(SNAPSHOT).decode()


def _rng(seed: int, *parts: object) -> random.Random:
    return random.Random("red-team/" + "/".join(map(str, [seed, *parts])))


class Context:
    """Fixtures, the child environment and the service the categories share."""

    def __init__(self, root: Path, quick: bool, exhaustive: bool = False):
        self.root, self.quick, self.exhaustive = root, quick, exhaustive
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANNER_", "DATABASE_URL"))}
        self.fixtures = root / "fixtures"
        self.fixtures.mkdir(parents=True)
        self.snap = self._fixture("snap.json", fill(SNAPSHOT))
        self.kube = self._fixture("list.json", fill(KUBE_LIST))
        self._counter = 0
        self._plans: dict[str, Path] = {}
        self.server: Server | None = None
        self.watch: ServerWatch | None = None
        self.client: httpx.Client | None = None
        self._stored: tuple[str, str] | None = None

    def _fixture(self, name: str, data: bytes) -> Path:
        path = self.fixtures / name
        path.write_bytes(data)
        return path

    def work(self) -> Path:
        """A fresh directory for one case (removed by ``done``)."""
        self._counter += 1
        path = self.root / "work" / str(self._counter)
        path.mkdir(parents=True)
        return path

    def plan(self, snapshot: Path, *options: str) -> Path:
        """A defrag plan of ``snapshot`` made by the CLI once."""
        key = f"{snapshot.name}{options}"
        if key not in self._plans:
            out = self.fixtures / f"plan-{len(self._plans)}.json"
            subprocess.run(
                [sys.executable, "-m", "planner", "defrag", str(snapshot), *options, "--out", str(out)],
                env=self.env,
                check=True,
                capture_output=True,
                timeout=300,
            )
            self._plans[key] = out
        return self._plans[key]

    def kubernetes_named_fig15(self) -> Path:
        """The Fig. 15 snapshot with its names lower-cased: Kubernetes outputs need DNS-1123 names."""
        path = self.fixtures / "fig15-lower.json"
        if not path.exists():
            data = json.loads(FIG15.read_text())
            for item in (*data["pods"], *data.get("jobs", [])):
                item["name"] = item["name"].lower()
                if item.get("job"):
                    item["job"] = item["job"].lower()
            path.write_text(json.dumps(data))
        return path

    def cli(self, case: Case, args: list[str], cwd: Path | None = None) -> Finished:
        done = run_command([sys.executable, "-m", "planner", *args], case.limit_s, env=self.env, cwd=str(cwd or self.root))
        judge_command(case, done)
        return done

    # -- the service --------------------------------------------------------------------------

    def service(self) -> httpx.Client:
        if self.client is None:
            self.server = Server(self.root / "service.sqlite", TOKEN, "--workers", "1", "--max-job-s", "120").start(timeout_s=120)
            assert self.server.process is not None
            self.watch = ServerWatch(self.server.process.pid)
            self.client = httpx.Client(
                base_url=self.server.url,
                headers={"Authorization": f"Bearer {TOKEN}"},
                limits=httpx.Limits(max_connections=BURST + 10, max_keepalive_connections=BURST + 10),
            )
        return self.client

    def request(self, case: Case, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        client = self.service()
        assert self.watch is not None
        self.watch.window()
        wall, status, answer, error = timed_request(client, method, path, case.limit_s, body, {"Content-Type": "application/json", **(headers or {})})
        judge_response(case, wall, status, answer, error, self.watch.window())
        return status, answer

    def stored(self) -> tuple[str, str]:
        """The id of a stored job and of its plan (submitted again when a case lost them)."""
        if self._stored is None or not self.intact(*self._stored):
            client = self.service()
            body = json.dumps({"snapshot": json.loads(FIG15.read_text()), "options": {"method": "heuristic", "seed": int(time.time())}})
            answer = client.post("/v1/defrag?wait=120", content=body, headers={"Content-Type": "application/json"}, timeout=180)
            job_id = answer.headers.get("X-Job-Id") or answer.json()["job_id"]
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                job = client.get(f"/v1/jobs/{job_id}").json()
                if job.get("plan_id"):
                    break
                time.sleep(0.2)
            self._stored = (job_id, job["plan_id"])
        return self._stored

    def intact(self, job_id: str, plan_id: str) -> bool:
        client = self.service()
        return client.get(f"/v1/jobs/{job_id}").status_code == 200 and client.get(f"/v1/plans/{plan_id}").status_code == 200

    def close(self) -> list[Case]:
        """Stop the service; one case for its log: a traceback there is a violation."""
        cases = []
        if self.server is not None:
            assert self.watch is not None
            case = Case("burst", "server log and memory over the whole run", "planner serve", 0, 0.0)
            case.peak_rss_mib = self.watch.high_water_mib()
            self.watch.stop()
            self.server.stop()
            log = self.server.log.read_text(errors="replace")
            count = log.count(TRACEBACK)
            case.outcome = f"{count} tracebacks in {len(log):,} bytes of log"
            case.output_bytes = len(log)
            case.flag("traceback", count > 0)
            case.flag("over-1GiB", case.peak_rss_mib > 1024)
            if count:
                case.note = first_line(log[log.index(TRACEBACK) : log.index(TRACEBACK) + 4000])
            cases.append(case)
        if self.client is not None:
            self.client.close()
        return cases


def done(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# -- 1. YAML and JSON of every shape as files -------------------------------------------------------

SURFACES: dict[str, tuple[str, str, str]] = {
    "snapshot": (SNAPSHOT, "json", "report FILE"),
    "list-import": (KUBE_LIST, "yaml", "import kubernetes FILE --out S"),
    "list-defrag": (KUBE_LIST, "yaml", "defrag FILE --from kubernetes -o json"),
    "policy": (POLICY, "yaml", "defrag SNAPSHOT --policy FILE -o json"),
    "plan-validate": (PLAN, "json", "validate SNAPSHOT FILE"),
    "plan-render": (PLAN, "json", "render FILE --snapshot SNAPSHOT -o kubectl"),
    "import-config": (IMPORT_CONFIG, "yaml", "import kubernetes LIST --config FILE --out S"),
    "serve-policy": (POLICY, "yaml", "serve --default-policy FILE"),
}
SURFACES_PER_SHAPE = 3
"""Each seed sends each shape to this many surfaces, drawn by the seed (``--exhaustive``: to all of them)."""
QUICK_YAML = (("list-import", "alias-bomb"), ("snapshot", "deep-nesting"), ("policy", "huge-number"), ("plan-validate", "unknown-fields"))


def yaml_cases(ctx: Context, seed: int) -> list[Case]:
    if ctx.quick:
        pairs: tuple[tuple[str, str], ...] = QUICK_YAML
    else:
        count = len(SURFACES) if ctx.exhaustive else SURFACES_PER_SHAPE
        pairs = tuple((surface, shape) for shape in SHAPES for surface in _rng(seed, "surfaces", shape).sample(list(SURFACES), count))
    cases = []
    for surface, shape in pairs:
        template, syntax, command = SURFACES[surface]
        rng = _rng(seed, "yaml", surface, shape)
        piece = make_piece(shape, rng, syntax, ctx.quick) or make_piece(shape, rng, "yaml", ctx.quick)
        if piece is None:
            continue
        data = fill(template, piece)
        work = ctx.work()
        path = work / ("in.json" if syntax == "json" else "in.yaml")
        path.write_bytes(data)
        case = Case("yaml", f"{shape}: {piece.note}", f"planner {command}", len(data), CLI_LIMIT_S)
        args = {
            "snapshot": ["report", str(path)],
            "list-import": ["import", "kubernetes", str(path), "--out", str(work / "s.json")],
            "list-defrag": ["defrag", str(path), "--from", "kubernetes", "-o", "json"],
            "policy": ["defrag", str(ctx.snap), "--policy", str(path), "-o", "json"],
            "plan-validate": ["validate", str(ctx.snap), str(path)],
            "plan-render": ["render", str(path), "--snapshot", str(ctx.snap), "-o", "kubectl"],
            "import-config": ["import", "kubernetes", str(ctx.kube), "--config", str(path), "--out", str(work / "s.json")],
        }.get(surface)
        if args is None:
            serve_with_policy(ctx, case, path, work)
        else:
            ctx.cli(case, args, work)
        cases.append(case)
        done(work)
    return cases


def serve_with_policy(ctx: Context, case: Case, policy: Path, work: Path) -> None:
    """``planner serve --default-policy FILE``: the time until it exits refusing the file (or is ready)."""
    port = free_port()
    argv = [PLANNER, "serve", "--port", str(port), "--db", str(work / "db.sqlite"), "--default-policy", str(policy)]
    with (work / "serve.log").open("w") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=ctx.env, start_new_session=True)
        peak, outcome = 0.0, ""
        deadline = start + case.limit_s + TIME_SLACK_S + 10
        while proc.poll() is None and time.perf_counter() < deadline:
            peak = max(peak, peak_process_mib(proc.pid))
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=0.5).status_code == 200:
                    outcome = "ready (the policy was accepted)"
                    break
            except httpx.HTTPError:
                pass
            time.sleep(SAMPLE_S * 2)
        wall = time.perf_counter() - start
        if proc.poll() is None:
            outcome = outcome or f"killed after {wall:.0f} s"
            os.killpg(proc.pid, 9)
        proc.wait()
    text = (work / "serve.log").read_text(errors="replace")
    judge_command(case, Finished(wall, peak, proc.returncode if not outcome else 0, outcome, 0, text[: 4 * MIB], len(text.encode())))


# -- 2. the same shapes as HTTP bodies --------------------------------------------------------------

ROUTES: dict[str, str] = {
    "POST /v1/defrag": '{"snapshot": ' + SNAPSHOT + ', "options": {"method": "heuristic"}}',
    "POST /v1/defrag (policy)": '{"snapshot": ' + PLAIN_SNAPSHOT + ', "policy": ' + POLICY + "}",
    "POST /v1/preempt": '{"snapshot": ' + SNAPSHOT + ', "job": "wait"}',
    "POST /v1/allocate": '{"snapshot": ' + SNAPSHOT + "}",
    "POST /v1/validate": '{"snapshot": ' + PLAIN_SNAPSHOT + ', "plan": ' + PLAN + "}",
    "POST /v1/report": '{"snapshot": ' + SNAPSHOT + ', "shape": "8g8c"}',
    "POST /v1/explain": '{"snapshot": ' + SNAPSHOT + ', "job": "wait"}',
}
ROUTES_PER_SHAPE = 4
"""Each seed sends each shape to this many routes, drawn by the seed (``--exhaustive``: to all of them)."""
QUICK_HTTP = (("POST /v1/explain", "deep-nesting"), ("POST /v1/defrag (policy)", "huge-number"))


def route_limit(route: str) -> float:
    """The whole-request time the service gives a body route (``planner/api/route_rules.py``): ``route`` is a
    label such as ``POST /v1/explain`` or ``POST /v1/defrag (policy)``."""
    path = next((word for word in route.split() if word.startswith("/v1/")), "")
    rule = ROUTE_RULES.get(path)
    return rule.time_s if rule is not None else HTTP_LIMIT_S


def http_cases(ctx: Context, seed: int) -> list[Case]:
    if ctx.quick:
        pairs: tuple[tuple[str, str], ...] = QUICK_HTTP
    else:
        count = len(ROUTES) if ctx.exhaustive else ROUTES_PER_SHAPE
        pairs = tuple((route, shape) for shape in SHAPES for route in _rng(seed, "routes", shape).sample(list(ROUTES), count))
    cases = []
    for route, shape in pairs:
        piece = make_piece(shape, _rng(seed, "http", route, shape), "json", ctx.quick)
        if piece is None:
            continue  # YAML only (aliases, tags, streams): request bodies are JSON
        body = fill(ROUTES[route], piece)
        case = Case("http", f"{shape}: {piece.note}", route, len(body), route_limit(route))
        ctx.request(case, "POST", route.split()[1], body)
        cases.append(case)
    return cases


# -- 3. names and ids up to 1 MB --------------------------------------------------------------------


def _renamed_snapshot(which: str, name: str) -> bytes:
    data = json.loads(PLAIN_SNAPSHOT)
    if which == "pod":
        data["pods"][0]["name"] = name
    elif which == "node":
        data["nodes"][0]["name"] = name
        data["pods"][0]["node"] = name
    else:
        data["jobs"][0]["name"] = name
        data["pods"][0]["job"] = name
    return json.dumps(data).encode()


QUICK_NAME = 1 << 10
"""A quick run's unknown names (1 KiB: the 26 KiB ones of a full run cost the did-you-mean seconds each on main)."""


def names_cases(ctx: Context, seed: int) -> list[Case]:
    cases: list[Case] = []
    commands = {"report": ["report"], "defrag -o kubectl": ["defrag", "-o", "kubectl"], "defrag -o podmigrationjob": ["defrag", "-o", "podmigrationjob"]}
    for length in NAME_SIZES[1:2] if ctx.quick else NAME_SIZES:  # names in a snapshot file
        rng = _rng(seed, "names", "snapshot", length)
        for label in rng.sample(list(commands), 1 if ctx.quick else 2):
            which, form = rng.choice(["pod", "node", "job"]), rng.choice(NAME_FORMS)
            work = ctx.work()
            path = work / "snap.json"
            path.write_bytes(_renamed_snapshot(which, hostile_name(rng, length, form)))
            case = Case("names", f"{which} name, {form}", f"planner {label} SNAPSHOT", length, CLI_LIMIT_S)
            args = commands[label]
            ctx.cli(case, [args[0], str(path), *args[1:]], work)
            cases.append(case)
            done(work)
    plan = ctx.plan(ASI, "--max-moves", "100")
    options = {
        "explain --job": lambda n: ["explain", str(ASI), "--job", n],
        "explain --pod": lambda n: ["explain", str(ASI), "--pod", n],
        "explain --node --plan": lambda n: ["explain", str(ASI), "--node", n, "--plan", str(plan)],
        "defrag --make-room": lambda n: ["defrag", str(ASI), "--make-room", n, "-o", "json"],
        "preempt --job": lambda n: ["preempt", str(ASI), "--job", n, "-o", "json"],
        "allocate --jobs": lambda n: ["allocate", str(ASI), "--jobs", n, "-o", "json"],
    }
    for label, make in list(options.items())[: 1 if ctx.quick else None]:  # unknown names against asi-500's 1,176 pods
        rng = _rng(seed, "names", "option", label)
        length, form = QUICK_NAME if ctx.quick else rng.choice([26 << 10, ARG_MAX_BYTES]), rng.choice(NAME_FORMS)
        case = Case("names", f"unknown name, {form}", f"planner {label} NAME (asi-500)", length, CLI_LIMIT_S)
        ctx.cli(case, make(as_argument(hostile_name(rng, length, form))))
        cases.append(case)
    cases += client_id_cases(ctx, seed)
    cases += http_name_cases(ctx, seed)
    return cases


ID_FORMS = ("traversal to a stored job", "traversal to the job list", "percent-encoded traversal", "CR/LF", "query and fragment", "100 KiB", "slash")


def hostile_id(form: str, job_id: str, plan_id: str, seed: int) -> str:
    """An id of one hostile form; the traversals lead to the stored job ``job_id``."""
    return {
        "traversal to a stored job": f"../jobs/{job_id}",
        "traversal to the job list": "../../v1/jobs",
        "percent-encoded traversal": f"%2e%2e%2fjobs%2f{job_id}",
        "CR/LF": f"{plan_id}\r\nX-Injected: 1",
        "query and fragment": f"{plan_id}?x=1#y",
        "100 KiB": hostile_name(_rng(seed, "id"), 100 << 10, "plain"),
        "slash": f"{plan_id}/view",
    }[form]


CLIENT_IDS_PER_COMMAND = 3
"""Each seed gives each client command this many of the hostile id forms, drawn by the seed."""


def client_id_cases(ctx: Context, seed: int) -> list[Case]:
    cases = []
    commands = (("jobs", "get"), ("jobs", "cancel"), ("jobs", "delete"), ("plans", "get"), ("plans", "delete"))
    for group, verb in commands[-1:] if ctx.quick else commands:
        forms = ID_FORMS[:2] if ctx.quick else _rng(seed, "client", group, verb).sample(ID_FORMS, CLIENT_IDS_PER_COMMAND)
        for form in forms:
            stored = ctx.stored()
            given = as_argument(hostile_id(form, *stored, seed))
            assert ctx.server is not None
            case = Case("names", f"id: {form}", f"planner {group} {verb} ID", len(given.encode()), CLI_LIMIT_S)
            ctx.cli(case, [group, verb, given, "--server", ctx.server.url, "--token", TOKEN])
            case.flag("store-lost", not ctx.intact(*stored))
            if "store-lost" in case.flags:
                case.note = f"the stored job or its plan is gone after {group} {verb} '{given[:60]}'"
            cases.append(case)
    return cases


URL_ID_CHARS = 60_000
"""An id in a URL is cut to this: the client refuses URLs above 64 KiB."""
ID_ROUTES = (
    "GET /v1/jobs/{}",
    "GET /v1/jobs/{}/plan",
    "GET /v1/jobs/{}/view",
    "GET /v1/plans/{}",
    "GET /v1/plans/{}/view",
    "DELETE /v1/jobs/{}",
    "DELETE /v1/plans/{}",
)


def http_name_cases(ctx: Context, seed: int) -> list[Case]:
    cases = []
    for route in ID_ROUTES[-1:] if ctx.quick else ID_ROUTES:
        method, template = route.split()
        for form in ID_FORMS[:2] if ctx.quick else ID_FORMS:
            for encoded in (False, True):
                stored = ctx.stored()
                given = hostile_id(form, *stored, seed)[:URL_ID_CHARS]
                path = template.format(quote(given, safe="") if encoded else quote(given, safe="/%"))
                case = Case("names", f"id: {form}{' (encoded)' if encoded else ''}", route, len(path), ID_LIMIT_S)
                ctx.request(case, method, path)
                # unencoded, '/v1/plans/../jobs/ID' is '/v1/jobs/ID' (RFC 3986 removes dot segments): deleting it is right
                case.flag("store-lost", encoded and not ctx.intact(*stored))
                if "store-lost" in case.flags:
                    case.note = f"the stored job or its plan is gone after {method} {path[:60]}"
                cases.append(case)
    asi = ASI.read_text()
    plan = ctx.plan(ASI, "--max-moves", "100").read_text()
    bodies: dict[str, Callable[[str], str]] = {
        "POST /v1/explain job": lambda n: f'{{"snapshot": {asi}, "job": {json.dumps(n)}}}',
        "POST /v1/explain pod": lambda n: f'{{"snapshot": {asi}, "pod": {json.dumps(n)}}}',
        "POST /v1/explain node": lambda n: f'{{"snapshot": {asi}, "node": {json.dumps(n)}, "plan": {plan}}}',
        "POST /v1/preempt job": lambda n: f'{{"snapshot": {asi}, "job": {json.dumps(n)}}}',
        "POST /v1/defrag make_room": lambda n: f'{{"snapshot": {asi}, "options": {{"make_room": [{json.dumps(n)}]}}}}',
        "POST /v1/allocate jobs": lambda n: f'{{"snapshot": {asi}, "options": {{"jobs": [{json.dumps(n)}]}}}}',
        "POST /v1/report pod name": lambda n: '{"snapshot": ' + _renamed_snapshot("pod", n).decode() + "}",
    }
    for label, make in list(bodies.items())[: 1 if ctx.quick else None]:
        rng = _rng(seed, "body-name", label)
        length, form = QUICK_NAME if ctx.quick else rng.choice([26 << 10, MIB]), rng.choice(NAME_FORMS)
        body = make(hostile_name(rng, length, form)).encode()
        case = Case("names", f"unknown name, {form}", label + " (asi-500)", length, route_limit(label))
        ctx.request(case, "POST", label.split()[1], body)
        cases.append(case)
    return cases


# -- 4. --out-dir and --out beside symlinks pointing outside ---------------------------------------


LINK_LAYOUTS = ("dangling", "live", "mixed")
"""Every planted name a link to a missing file outside, every one a link to a file outside, or each drawn by the seed
(dangling, to a file, to a directory, or no link)."""


def files_cases(ctx: Context, seed: int) -> list[Case]:
    cases = []
    snapshot = ctx.kubernetes_named_fig15()
    plan = ctx.plan(snapshot)
    runs: list[tuple[str, Callable[[Path], list[str]], bool]] = [
        (
            "render --out-dir DIR --force",
            lambda d: ["render", str(plan), "--snapshot", str(snapshot), "-o", "podmigrationjob", "--out-dir", str(d), "--force"],
            True,
        ),
        ("defrag -o podmigrationjob --out-dir DIR", lambda d: ["defrag", str(snapshot), "-o", "podmigrationjob", "--out-dir", str(d)], True),
        ("defrag --out DIR/plan.json", lambda d: ["defrag", str(snapshot), "--out", str(d / "plan.json")], True),
        ("defrag --out DIR/LINK", lambda d: ["defrag", str(snapshot), "--out", str(d / "wave-1.yaml")], False),
        ("import kubernetes --out DIR/LINK", lambda d: ["import", "kubernetes", str(ctx.kube), "--out", str(d / "wave-1.yaml")], False),
        ("report -o html --out DIR/LINK", lambda d: ["report", str(snapshot), "-o", "html", "--out", str(d / "wave-1.yaml")], False),
    ]
    names = ["index.txt", "wave-1.yaml", "wave-2.yaml", "wave-3.yaml", "plan.json.tmp", ".plan.json"]
    for label, make, judged in runs[:1] if ctx.quick else runs:
        for layout in LINK_LAYOUTS[:1] if ctx.quick else LINK_LAYOUTS:
            rng = _rng(seed, "files", label, layout)
            work = ctx.work()
            named, outside = work / "named", work / "outside"
            named.mkdir()
            (outside / "deep").mkdir(parents=True)
            (outside / "live.txt").write_text("outside, must not change\n")
            links = []
            for name in names:
                kind = layout if layout != "mixed" else rng.choice(["dangling", "live", "live-dir", "none"])
                target = {"dangling": outside / f"created-{name}", "live": outside / "live.txt", "live-dir": outside / "deep"}.get(kind)
                if target is not None:
                    (named / name).symlink_to(target)
                    links.append(f"{name}->{kind}")
            before = tree_state(outside)
            case = Case("files", "symlinks " + ", ".join(links), f"planner {label}", 0, CLI_LIMIT_S)
            ctx.cli(case, make(named), work)
            changes = tree_changes(before, tree_state(outside))
            if judged:
                case.flag("outside-dir", bool(changes))
                if changes:
                    case.note = "; ".join(c.replace(str(work), "") for c in changes[:4])
            elif changes:
                case.note = "followed the symlink given as --out (not counted): " + "; ".join(c.replace(str(work), "") for c in changes[:2])
            cases.append(case)
            done(work)
    return cases


# -- 5. quantities -----------------------------------------------------------------------------------


def quantity_cases(ctx: Context, seed: int) -> list[Case]:
    cases = []
    values = (QUANTITIES[0], QUANTITIES[12]) if ctx.quick else QUANTITIES
    for value in values:
        rng = _rng(seed, "quantity", value)
        where, command = rng.choice(["node", "pod"]), rng.choice(["import", "defrag"])
        work = ctx.work()
        path = work / "list.json"
        path.write_bytes(quantity_list(value, where))
        args = ["import", "kubernetes", str(path), "--out", str(work / "s.json")] if command == "import" else ["defrag", str(path), "--from", "kubernetes"]
        shown = repr(value) if len(value) < 24 else repr(value[:12]) + f"... ({len(value):,} chars)"
        label = "import kubernetes LIST" if command == "import" else "defrag LIST --from kubernetes"
        case = Case("quantities", f"{where} cpu {shown}", f"planner {label}", len(value), CLI_LIMIT_S)
        finished = ctx.cli(case, args, work)
        case.flag("accepted-invalid", value in INVALID_QUANTITIES and finished.code == 0)
        if "accepted-invalid" in case.flags:
            case.note = f"{shown} accepted; Kubernetes refuses it"
        cases.append(case)
        done(work)
    return cases


# -- 6. concurrent requests --------------------------------------------------------------------------


def burst_cases(ctx: Context, seed: int) -> list[Case]:
    """``BURST`` requests at once (hostile names, bodies and ids, and ``/healthz``), each against its limit."""
    rng = _rng(seed, "burst")
    length = QUICK_NAME if ctx.quick else 26 << 10
    asi = ASI.read_text()
    plan = ctx.plan(ASI, "--max-moves", "100").read_text()
    job_id, plan_id = ctx.stored()
    busy = next(n["name"] for n in json.loads(asi)["nodes"] if n["name"] not in json.loads(plan).get("vacated_nodes", []))
    makers: list[tuple[int, str, Callable[[], tuple[str, str, bytes | None]]]] = [
        (
            25,
            "POST /v1/explain unknown name",
            lambda: ("POST", "/v1/explain", f'{{"snapshot": {asi}, "{rng.choice(["job", "pod"])}": {json.dumps(hostile_name(rng, length))}}}'.encode()),
        ),
        (4, "POST /v1/explain node+plan", lambda: ("POST", "/v1/explain", f'{{"snapshot": {asi}, "node": "{busy}", "plan": {plan}}}'.encode())),
        (
            15,
            "POST /v1/preempt unknown job",
            lambda: ("POST", "/v1/preempt", f'{{"snapshot": {asi}, "job": {json.dumps(hostile_name(rng, length))}}}'.encode()),
        ),
        (
            15,
            "POST /v1/report hostile body",
            lambda: (
                "POST",
                "/v1/report",
                fill(ROUTES["POST /v1/report"], make_piece(rng.choice(["unknown-fields", "deep-nesting", "huge-number", "duplicate-keys"]), rng, "json", True)),
            ),
        ),
        (10, "POST /v1/validate bad items", lambda: ("POST", "/v1/validate", fill(ROUTES["POST /v1/validate"], make_piece("bad-items", rng, "json", False)))),
        (
            6,
            "POST /v1/defrag unknown make_room",
            lambda: ("POST", "/v1/defrag", f'{{"snapshot": {asi}, "options": {{"make_room": [{json.dumps(hostile_name(rng, length))}]}}}}'.encode()),
        ),
        (
            10,
            "GET /v1/plans/{hostile id}",
            lambda: ("GET", "/v1/plans/" + quote(rng.choice([f"../jobs/{job_id}", f"{plan_id}\r\nX: 1", "%2e%2e%2f"]), safe=""), None),
        ),
        (15, "GET /healthz", lambda: ("GET", "/healthz", None)),
    ]
    scale = (BURST_QUICK if ctx.quick else BURST) / sum(count for count, _, _ in makers)
    planned = [(label, *make()) for count, label, make in makers for _ in range(max(1, round(count * scale)))][: BURST_QUICK if ctx.quick else BURST]
    rng.shuffle(planned)
    client = ctx.service()
    assert ctx.watch is not None
    ctx.watch.window()
    barrier = threading.Barrier(len(planned))

    def send(item: tuple[str, str, str, bytes | None]) -> Case:
        label, method, path, body = item
        limit = HEALTH_LIMIT_S if path == "/healthz" else ID_LIMIT_S if method == "GET" else route_limit(path.split("?")[0])
        case = Case("burst", label, f"{method} {path.split('?')[0][:40]}", len(body or b""), limit)
        barrier.wait(timeout=120)
        wall, status, answer, error = timed_request(client, method, path, limit, body, {"Content-Type": "application/json"})
        judge_response(case, wall, status, answer, error)
        return case

    with ThreadPoolExecutor(max_workers=len(planned)) as pool:
        cases = list(pool.map(send, planned))
    memory = Case("burst", f"server memory during {len(planned)} concurrent requests", "planner serve", 0, 0.0)
    start_mib, memory.peak_rss_mib = ctx.watch.window()
    memory.outcome = f"largest process {memory.peak_rss_mib:.0f} MiB (when the burst began {start_mib:.0f} MiB)"
    memory.flag("over-1GiB", memory.peak_rss_mib > 1024 and (start_mib <= 1024 or memory.peak_rss_mib > start_mib + GROWTH_MIB))
    return [*cases, memory]


RUNNERS: dict[str, Callable[[Context, int], list[Case]]] = {
    "yaml": yaml_cases,
    "http": http_cases,
    "names": names_cases,
    "files": files_cases,
    "quantities": quantity_cases,
    "burst": burst_cases,
}


def run_category(ctx: Context, category: str, seed: int) -> list[Case]:
    return RUNNERS[category](ctx, seed)


# -- the harness checks itself ----------------------------------------------------------------------

PLANTED = """
import sys, time, traceback
open(sys.argv[1], "w").write("planted")
held = b"x" * (1200 << 20)
time.sleep(float(sys.argv[2]) + 3.5)
try:
    raise RuntimeError("planted")
except RuntimeError:
    traceback.print_exc()
sys.exit(3)
"""


class _Planted(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, body = (500, f"{TRACEBACK}:\n  planted\n".encode()) if self.path == "/500" else (400, b"x" * (100 << 10))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def self_check(root: Path) -> tuple[bool, list[Case]]:
    """Planted violations through the same measuring and judging: (every one flagged, the cases)."""
    named, outside = root / "named", root / "outside"
    named.mkdir()
    outside.mkdir()
    before = tree_state(outside)
    case = Case("self-check", "dummy over time and memory, exit 3, traceback, file outside", "python -c PLANTED", 0, 1.0)
    judge_command(case, run_command([sys.executable, "-c", PLANTED, str(outside / "planted.txt"), "1.0"], case.limit_s))
    case.flag("outside-dir", bool(tree_changes(before, tree_state(outside))))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Planted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cases = [case]
    expected = [{"over-time", "over-1GiB", "exit-3", "traceback", "outside-dir"}]
    with httpx.Client(base_url=f"http://127.0.0.1:{server.server_address[1]}") as client:
        for path, kinds in (("/500", {"http-500", "traceback"}), ("/long", {"long-message"})):
            planted = Case("self-check", f"stub server {path}", f"GET {path}", 0, 5.0)
            wall, status, body, error = timed_request(client, "GET", path, 5.0)
            judge_response(planted, wall, status, body, error)
            cases.append(planted)
            expected.append(kinds)
    server.shutdown()
    return all(set(c.flags) == kinds for c, kinds in zip(cases, expected, strict=True)), cases
