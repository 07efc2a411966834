"""``planner submit defrag|preempt|allocate`` against a real service in a subprocess: with each option
of each kind, the plan the service returns is the plan the local command makes (same seed), option by
option; every option of the local commands is covered by a case (``test_every_option_has_a_case``).
The requests' policy documents, ``serve --default-policy`` and the refusal of ``options.executor``
over REST are here too."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
import typer

from planner.cli import app
from planner.cli.submit import CLI_ONLY, LOCAL_ONLY
from tests.support.harness import Server
from tests.support.planner_in_process import planner, strip

REPO = Path(__file__).resolve().parents[2]
KUBECTL_LIST = REPO / "instances" / "kubernetes" / "gpu-cluster.json"
STANDBY = REPO / "tests" / "data" / "standby-reactivate.json"

POLICY = """apiVersion: planner.io/v1
kind: DefragPolicy
metadata: {name: nightly}
spec:
  method: heuristic
  budgets: {maxNodesPerWave: "25%", maxMoves: 6}
  scope:
    namespaces: {exclude: [team-b]}
  solver: {seed: 4}
"""

PREEMPT_POLICY = "apiVersion: planner.io/v1\nkind: PreemptPolicy\nspec: {method: flextopo, heuristic: {alpha: 0.3}}\n"
ALLOCATE_POLICY = (
    "apiVersion: planner.io/v1\nkind: AllocatePolicy\n"
    "spec: {method: exact, objective: {entropy: false}, solver: {name: highs, workers: 1, timeLimitSeconds: 20}}\n"
)

SOLVE = ("--solver-workers", "1", "--time-limit", "20")
DEFRAG_CASES: list[tuple[str, ...]] = [
    (),
    ("--large-requests", "16g64c,32g128c"),
    ("--objective", "room", "--requests", "32g128c,16g64c", "--level", "asw"),
    ("--objective", "room", "--for-pending"),
    ("--objective", "room", "--requests", "32g128c,16g64c", "--weights", "16g64c=2,32g128c=1"),
    ("--method", "random", "--seed", "5"),
    ("--method", "descheduler", "--threshold", "0.7"),
    ("--method", "repack"),
    ("--trim", "off"),
    ("--trim", "exact", *SOLVE),
    ("--partition-size", "8"),
    ("--depth", "2"),
    ("--rounds", "2"),
    ("--min-round-yield", "0"),
    ("--seed", "9"),
    ("--max-moves", "3"),
    ("--max-moves-per-node", "1"),
    ("--same-asw",),
    ("--max-moves-per-wave", "1"),
    ("--max-nodes-per-wave", "25%"),
    ("--max-nodes-per-wave", "4"),
    ("--max-moves-per-node-per-wave", "1"),
    ("--max-unavailable-per-job", "0"),
    ("--max-moves-per-namespace", "1"),
    ("--no-move-once",),
    ("--only-namespace", "team-a"),
    ("--exclude-namespace", "team-a,team-b"),
    ("--allow-product-change",),
    ("--allow-cpu-pods-on-gpu-nodes",),
    ("--node-selector", "pool=a"),
    ("--limit-costs", "--max-moves", "3"),
    ("--method", "exact", *SOLVE),
    ("--method", "exact", "--solver", "cpsat", "--deterministic", *SOLVE),
    ("--method", "exact", "--formulation", "class", "--lexicographic", "weighted", *SOLVE),
    ("--method", "exact", "--force", *SOLVE),
    ("--method", "compare", *SOLVE),
    ("--method", "auto", *SOLVE),
    ("--make-room", "{pending}"),
    ("--policy", "{policy}"),
    ("--policy", "{policy}", "--max-moves", "2"),
    ("--from", "kubernetes", "--import-config", "{import_config}"),
    ("-o", "json"),
]
PREEMPT_CASES: list[tuple[str, ...]] = [
    ("--job", "hp-new-0", "--large-requests", "16g64c"),
    ("--job", "hp-new-0"),
    ("--job", "hp-new-0", "--method", "spotgpu-paper"),
    ("--job", "hp-new-0", "--method", "flextopo", "--alpha", "0.8"),
    ("--job", "hp-new-0", "--method", "random", "--seed", "3"),
    ("--job", "hp-new-0", "--now", "604900"),
    ("--job", "hp-new-0", "--method", "exact", *SOLVE),
    ("--job", "hp-new-0", "--method", "compare", "--heuristic", "volcano", "--solver", "highs", *SOLVE),
    ("--reactivate", "s", "{standby}"),
    ("--job", "hp-new-0", "-o", "json"),
    ("--job", "hp-new-0", "--policy", "{preempt_policy}"),
    ("--job", "research/Job/train-big", "--from", "kubernetes", "--import-config", "{import_config}"),
]
ALLOCATE_CASES: list[tuple[str, ...]] = [
    ("--large-requests", "16g64c"),
    ("--method", "largest-first"),
    ("--method", "alg2"),
    ("--method", "random", "--seed", "2"),
    ("--method", "exact", "--solver", "highs", *SOLVE),
    ("--method", "exact", "--solver", "cpsat", "--no-entropy", *SOLVE),
    ("--method", "largest-first", "--jobs", "{pending}"),
    ("--method", "largest-first", "-o", "json"),
    ("--policy", "{allocate_policy}"),
    ("--method", "largest-first", "--from", "kubernetes", "--import-config", "{import_config}"),
]
CASES = [("defrag", c) for c in DEFRAG_CASES] + [("preempt", c) for c in PREEMPT_CASES] + [("allocate", c) for c in ALLOCATE_CASES]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Tiny snapshots: a 24-node ASI-like cluster with two pending jobs, node pools and namespaces; a
    10-node spot cluster; the standby example; a kubectl List with an import configuration; a policy."""
    where = tmp_path_factory.mktemp("submit")
    asi, spot = where / "asi.json", where / "spot.json"
    planner(("generate", "asi", "--nodes", "24", "--seed", "3", "--pending-jobs", "2", "--out", str(asi)))
    planner(("generate", "spot", "--nodes", "10", "--seed", "1", "--pending-jobs", "2", "--out", str(spot)))
    data = json.loads(asi.read_text())
    for i, node in enumerate(data["nodes"]):
        node["labels"] = {**node.get("labels", {}), "pool": "a" if i % 2 else "b"}
    for i, pod in enumerate(data["pods"]):
        pod["namespace"] = ("team-a", "team-b", "default")[i % 3]
    asi.write_text(json.dumps(data))
    config = where / "import.yaml"
    config.write_text(planner(("import", "kubernetes", "--print-config")))
    policies = {"policy": POLICY, "preempt_policy": PREEMPT_POLICY, "allocate_policy": ALLOCATE_POLICY}
    for name, text in policies.items():
        (where / f"{name}.yaml").write_text(text)
    pending = sorted({p["job"] for p in data["pods"] if p.get("node") is None and p.get("job")})
    return {
        "asi": str(asi),
        "spot": str(spot),
        "standby": str(STANDBY),
        "kubectl": str(KUBECTL_LIST),
        "import_config": str(config),
        **{name: str(where / f"{name}.yaml") for name in policies},
        "pending": pending[0],
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("submit-server") / "planner.db", None, "--workers", "1", "--allow-force").start()
    yield srv
    srv.stop()


def arguments(kind: str, case: tuple[str, ...], inputs: dict[str, str]) -> tuple[str, list[str]]:
    """(the snapshot, the case's flags) with the inputs filled in."""
    args = [arg.format(**inputs) for arg in case]
    if kind == "preempt" and "{standby}" in case:
        args.remove(inputs["standby"])
        return inputs["standby"], args
    if "--from" in case:
        return inputs["kubectl"], args
    return (inputs["spot"] if kind == "preempt" else inputs["asi"]), args


def comparable(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan without what differs between two runs of the same plan (durations, the machine) and
    between this machine and a service job: where it ran (``workers``: one process per job)."""
    plan = strip(plan)
    reports = [plan["report"]] if "report" in plan else [plan[k]["report"] for k in ("heuristic", "greedy", "exact") if k in plan]
    for report in reports:
        report.pop("executor", None)
        for record in ("options", "option_sources"):
            report["provenance"].get(record, {}).pop("workers", None)
            report["provenance"].get(record, {}).pop("executor", None)
    return plan


@pytest.mark.parametrize(("kind", "case"), CASES, ids=[f"{k}:{' '.join(c) or 'defaults'}" for k, c in CASES])
def test_submit_plans_as_the_local_command(kind: str, case: tuple[str, ...], inputs: dict[str, str], server: Server, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PLANNER_API_TOKEN", raising=False)
    monkeypatch.delenv("PLANNER_API_TOKEN_FILE", raising=False)
    snapshot, args = arguments(kind, case, inputs)
    local_out, remote_out = tmp_path / "local.json", tmp_path / "remote.json"
    where = ("--executor", "inline") if kind == "defrag" else ()  # a local choice: same seed, same plan
    planner((kind, snapshot, *args, *where, "--out", str(local_out)))
    planner(("submit", kind, snapshot, *args, "--server", server.url, "--wait", "120", "--out", str(remote_out)))
    local, remote = json.loads(local_out.read_text()), json.loads(remote_out.read_text())
    assert comparable(remote) == comparable(local)
    if "--policy" in case:
        sources = local["report"]["provenance"]["option_sources"]
        assert sources["method"] == "policy"
    if "--policy" in case and kind == "defrag":
        assert sources["max_nodes_per_wave"] == "policy" and sources["exclude_namespaces"] == "policy" and sources["seed"] == "policy"
        assert sources["max_moves"] == ("given" if "--max-moves" in case else "policy") and sources["depth"] == "default"
        assert local["report"]["provenance"]["options"]["max_moves"] == (2 if "--max-moves" in case else 6)


def test_submit_writes_the_same_wave_files_as_the_local_command(server: Server, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PLANNER_API_TOKEN", raising=False)
    monkeypatch.delenv("PLANNER_API_TOKEN_FILE", raising=False)
    args = (str(KUBECTL_LIST), "--from", "kubernetes")
    planner(("defrag", *args, "--executor", "inline", "--out-dir", str(tmp_path / "local")))
    planner(("submit", "defrag", *args, "--server", server.url, "--wait", "120", "--out-dir", str(tmp_path / "remote")))
    local = {f.name: f.read_text() for f in (tmp_path / "local").iterdir()}
    remote = {f.name: f.read_text() for f in (tmp_path / "remote").iterdir()}
    assert "index.txt" in local and any(name.startswith("wave-") for name in local)
    assert remote == local


def test_every_option_has_a_case() -> None:
    """Each option of each local command is in a case above, or it is one ``submit`` does not take."""
    group = typer.main.get_command(app)
    for kind, cases in (("defrag", DEFRAG_CASES), ("preempt", PREEMPT_CASES), ("allocate", ALLOCATE_CASES)):
        used = {arg for case in cases for arg in case if arg.startswith("-")}
        for param in group.commands[kind].params:  # type: ignore[attr-defined]
            if param.name in LOCAL_ONLY[kind] or param.param_type_name == "argument" or param.name in ("out", "out_dir"):
                continue  # the cases all write --out; --out-dir has its own test below
            flags = set(param.opts) | set(getattr(param, "secondary_opts", []))
            assert flags & used, f"planner submit {kind}: no case gives {'/'.join(sorted(flags))}"


def test_the_submit_commands_take_the_local_options_but_the_local_only(tmp_path: Path) -> None:
    group = typer.main.get_command(app)
    submit = group.commands["submit"]  # type: ignore[attr-defined]
    for kind in ("defrag", "preempt", "allocate"):
        local = {p.name for p in group.commands[kind].params}  # type: ignore[attr-defined]
        remote = {p.name for p in submit.commands[kind].params}
        assert remote - local == {"server", "token", "wait", "idempotency_key"}
        assert local - remote == set(LOCAL_ONLY[kind])
        assert set(CLI_ONLY) >= {"snapshot", "out", "output_format", "source", "import_config", "policy"}


def test_the_form_without_a_kind_submits_defrag(inputs: dict[str, str], server: Server, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("PLANNER_API_TOKEN", raising=False)
    out = tmp_path / "plan.json"
    planner(("submit", inputs["asi"], "--server", server.url, "--wait", "60", "--max-moves", "2", "--out", str(out)))
    plan = json.loads(out.read_text())
    assert plan["kind"] == "defrag" and plan["report"]["provenance"]["options"]["max_moves"] == 2


def test_executor_and_workers_are_refused_over_rest_and_absent_from_the_schema(inputs: dict[str, str], server: Server) -> None:
    snapshot = json.loads(Path(inputs["asi"]).read_text())
    for name, value in (("executor", "ray"), ("workers", 4)):
        refused = httpx.post(f"{server.url}/v1/defrag", json={"snapshot": snapshot, "options": {name: value}})
        assert refused.status_code == 422 and refused.json()["problems"][0].startswith(f"options.{name}: the server decides where a job runs")
    schema = httpx.get(f"{server.url}/openapi.json").json()["components"]["schemas"]["ServiceDefragOptions"]
    assert "executor" not in schema["properties"] and "workers" not in schema["properties"] and "max_nodes_per_wave" in schema["properties"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"options": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"budgets": {"maxMoves": -1}}}},
            "options.spec.budgets.maxMoves: input should be",
        ),
        (
            {"policy": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"budgets": {"maxNodesPerWave": "0%"}}}},
            "policy.spec.budgets.maxNodesPerWave: give a node count",
        ),
        ({"policy": {"apiVersion": "planner.io/v2", "kind": "DefragPolicy"}}, "policy.apiVersion: input should be 'planner.io/v1'"),
        ({"policy": {"apiVersion": "planner.io/v1", "kind": "PreemptPolicy"}}, "policy.kind: a PreemptPolicy configures planner preempt"),
        ({"policy": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"scope": {"pool": "a"}}}}, "policy.spec.scope.pool: unknown field"),
        (
            {"policy": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"method": "exact"}}, "options": {"threshold": 0.3}},
            "options.threshold: method 'exact'",
        ),
        (
            {"options": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy"}, "policy": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy"}},
            "options: is a policy document and policy",
        ),
        ({"options": [1]}, "options: must be an object"),
    ],
)
def test_a_bad_policy_over_rest_is_422_naming_the_path(body: dict[str, Any], expected: str, inputs: dict[str, str], server: Server) -> None:
    snapshot = json.loads(Path(inputs["asi"]).read_text())
    refused = httpx.post(f"{server.url}/v1/defrag", json={"snapshot": snapshot, **body})
    assert refused.status_code == 422, refused.text
    assert any(problem.startswith(expected) for problem in refused.json()["problems"]), refused.json()


def test_the_servers_default_policy_fills_what_a_request_leaves_out(inputs: dict[str, str], tmp_path: Path) -> None:
    policy = tmp_path / "default.yaml"
    policy.write_text(
        POLICY
        + "---\napiVersion: planner.io/v1\nkind: AllocatePolicy\nspec: {method: largest-first}\n"
        + "---\napiVersion: planner.io/v1\nkind: PreemptPolicy\nspec: {method: exact, solver: {timeLimitSeconds: 5}}\n"
    )
    srv = Server(tmp_path / "planner.db", None, "--workers", "1", "--default-policy", str(policy)).start()
    try:
        snapshot = json.loads(Path(inputs["asi"]).read_text())
        done = httpx.post(f"{srv.url}/v1/defrag", params={"wait": 60}, json={"snapshot": snapshot, "options": {"max_moves": 3}}, timeout=90).json()
        provenance = done["report"]["provenance"]
        assert provenance["options"]["max_moves"] == 3 and provenance["options"]["max_nodes_per_wave"] == "25%" and provenance["options"]["seed"] == 4
        assert provenance["option_sources"]["max_moves"] == "given" and provenance["option_sources"]["max_nodes_per_wave"] == "server-policy"
        # a method that does not read the server's values is not refused for them: they give way
        spot = json.loads(Path(inputs["spot"]).read_text())
        body = {"snapshot": spot, "job": "hp-new-0", "options": {"method": "spotgpu"}}
        plan = httpx.post(f"{srv.url}/v1/preempt", params={"wait": 60}, json=body, timeout=90).json()
        assert plan["report"]["provenance"]["options"]["time_limit_s"] == 10.0 and plan["report"]["provenance"]["option_sources"]["method"] == "given"
    finally:
        srv.stop()


def test_a_bad_default_policy_stops_serve_with_exit_2_naming_the_path(tmp_path: Path) -> None:
    policy = tmp_path / "default.yaml"
    policy.write_text("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec:\n  budgets: {maxMovesPerWave: 0}\n")
    done = planner_exit(("serve", "--db", str(tmp_path / "p.db"), "--default-policy", str(policy)))
    assert done[0] == 2 and f"--default-policy {policy}: spec.budgets.maxMovesPerWave: input should be greater than or equal to 1" in done[1]


def planner_exit(args: tuple[str, ...]) -> tuple[int, str]:
    """``planner ARGS`` in this process: (exit code, standard error)."""
    err = io.StringIO()
    with mock.patch.object(sys, "argv", ["planner", *args]), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            app()
        except SystemExit as done:
            return int(done.code or 0), err.getvalue()
    return 0, err.getvalue()
