"""``planner explain``: hand-made clusters where each reason is the true one, with its numbers; a brute
force (written here, independent of the planner) that the proofs agree with; the remedy against
make-room's own outcome; the node a plan left busy; bad input."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, SnapshotError
from planner.engine import DefragOptions, plan_defrag
from planner.engine.explain import ALL_CODES, ExplainOptions, explain_job, explain_node, explain_pod
from planner.engine.explain.codes import JOB_CODES, NODE_CODES, REMEDY_CODES
from planner.plans import DefragPlan, dump_plan
from tests.support.paths import REPO

runner = CliRunner()


def cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], jobs: list[dict[str, Any]] | None = None) -> Cluster:
    """nodes: dicts with name and gpus (96 CPUs, 512 GiB by default); pods: name, gpus, node (None: pending)."""
    return Cluster.model_validate(
        {
            "nodes": [{"cpus": 96, "memory_gib": 512, **n} for n in nodes],
            "pods": [{"cpus": 1, **p} for p in pods],
            "jobs": jobs or [],
        }
    )


def gang(name: str, count: int, gpus: float, **extra: Any) -> list[dict[str, Any]]:
    return [{"name": f"{name}-{i}", "job": name, "gpus": gpus, "node": None, **extra} for i in range(count)]


def reason(result: dict[str, Any]) -> str:
    return result["reason"]["code"]


def test_capacity_total_is_a_proof_with_the_numbers():
    c = cluster([{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}], gang("big", 3, 8), [{"name": "big"}])
    out = explain_job(c, "big")
    assert reason(out) == "capacity_total" and out["reason"]["proof"]
    assert out["reason"]["numbers"] == {"requested_gpus": 24, "gpus_of_allowed_models": 16, "free_gpus_schedulable": 16}
    assert out["remedy"]["code"] == "capacity"


def test_capacity_free_gpus_short():
    c = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "a", "gpus": 6, "node": "n0"}, {"name": "b", "gpus": 6, "node": "n1"}, *gang("j", 1, 8)],
        [{"name": "j"}],
    )
    out = explain_job(c, "j")
    assert reason(out) == "capacity"
    assert out["reason"]["numbers"]["free_gpus_schedulable"] == 4
    assert out["remedy"]["code"] == "capacity"


def test_gpu_model_binds():
    c = cluster(
        [{"name": "h0", "gpus": 8, "gpu_model": "H800"}, {"name": "a0", "gpus": 8, "gpu_model": "A100"}],
        [{"name": "x", "gpus": 4, "node": "h0", "locked": True}, *gang("j", 1, 8, gpu_models=["H800"])],
        [{"name": "j"}],
    )
    out = explain_job(c, "j")
    assert reason(out) == "gpu_model"
    assert out["reason"]["numbers"]["free_gpus_on_allowed_models"] == 4
    assert out["reason"]["numbers"]["by_model"] == {"H800": 4}
    assert out["remedy"]["code"] == "no_room_after_any_moves" and out["remedy"]["proof"]


def test_taint_binds_with_the_excluded_gpus():
    taint = [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]
    c = cluster(
        [{"name": "n0", "gpus": 8, "taints": taint}, {"name": "n1", "gpus": 8, "taints": taint}, {"name": "n2", "gpus": 8}],
        [{"name": "a", "gpus": 4, "node": "n2"}, *gang("j", 2, 8)],
        [{"name": "j"}],
    )
    out = explain_job(c, "j")
    assert reason(out) == "taint"
    assert out["reason"]["numbers"]["free_gpus_excluded_by_rule"] == {"taint": 16}
    assert out["reason"]["numbers"]["free_gpus_it_may_use"] == 4


def test_switch_binds_for_a_required_job():
    c = cluster(
        [{"name": f"n{i}", "gpus": 8, "asw": f"s{i // 2}"} for i in range(4)],
        [{"name": "a", "gpus": 8, "node": "n0", "locked": True}, {"name": "b", "gpus": 8, "node": "n2", "locked": True}, *gang("j", 2, 8)],
        [{"name": "j", "topology": {"level": "asw", "mode": "required"}}],
    )
    out = explain_job(c, "j")
    assert reason(out) == "switch"
    assert out["reason"]["numbers"]["free_gpus_in_roomiest"] == 8 and out["reason"]["numbers"]["domains"] == 2
    assert out["remedy"]["code"] == "no_room_after_any_moves"
    assert explain_job(Cluster.model_validate({**c.model_dump(), "jobs": [{"name": "j"}]}), "j")["reason"]["code"] == "fits_now"  # not required: it fits


def test_fragmentation_by_cause_and_make_room_remedy():
    c = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "a", "gpus": 4, "node": "n0"}, {"name": "b", "gpus": 4, "node": "n1"}, *gang("big", 1, 8)],
        [{"name": "big"}],
    )
    out = explain_job(c, "big")
    assert reason(out) == "fragmentation"
    numbers = out["reason"]["numbers"]
    assert numbers["pods_that_fit_now"] == 0 and numbers["free_gpus"] == 8 and numbers["usable_gpus"] == 0
    assert numbers["stranded_by_cause"]["hole_smaller_than_pod"] == 8
    assert out["remedy"]["code"] == "make_room" and out["remedy"]["numbers"]["moves"] == 1


def test_fragmentation_by_cpu():
    c = cluster(
        [{"name": "n0", "gpus": 8, "cpus": 10}],
        [{"name": "a", "gpus": 1, "cpus": 8, "node": "n0", "locked": True}, *gang("j", 1, 4, cpus=4)],
        [{"name": "j"}],
    )
    out = explain_job(c, "j")
    assert reason(out) == "fragmentation"
    assert out["reason"]["numbers"]["stranded_by_cause"]["insufficient_cpu"] == 7


def test_budget_stops_the_remedy():
    # two 8-GPU pods: n2 is empty, n0 and n1 hold two 2-GPU pods each; emptying one takes two moves, one is allowed
    c = cluster(
        [{"name": f"n{i}", "gpus": 8} for i in range(3)],
        [*({"name": f"p{i}", "gpus": 2, "node": f"n{i % 2}"} for i in range(4)), *gang("j", 2, 8)],
        [{"name": "j"}],
    )
    out = explain_job(c, "j", ExplainOptions(max_moves=1))
    assert reason(out) == "fragmentation"
    assert out["remedy"]["code"] == "budget" and not out["remedy"]["proof"]
    assert out["remedy"]["numbers"]["moves"] == 2 and out["remedy"]["budgets"] == {"max_moves": 1}
    assert explain_job(c, "j")["remedy"]["code"] == "make_room"


def test_disruption_budgets_stop_the_remedy():
    c = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "w-0", "job": "w", "gpus": 4, "node": "n0"}, {"name": "b", "gpus": 4, "node": "n1"}, *gang("big", 1, 8)],
        [{"name": "w", "disruption": {"max_unavailable": 0}}, {"name": "big"}],
    )
    out = explain_job(c, "big")
    assert reason(out) == "fragmentation"
    assert out["remedy"]["code"] == "make_room" and out["remedy"]["numbers"]["moves"] == 1  # b moves; w is held by its budget
    held = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "w-0", "job": "w", "gpus": 4, "node": "n0"}, {"name": "v-0", "job": "v", "gpus": 4, "node": "n1"}, *gang("big", 1, 8)],
        [{"name": "w", "disruption": {"max_unavailable": 0}}, {"name": "v", "disruption": {"max_unavailable": 0}}, {"name": "big"}],
    )
    out = explain_job(held, "big")
    assert out["remedy"]["code"] == "disruption" and out["remedy"]["numbers"]["moves"] == 1 and out["remedy"]["jobs_with_budgets"] == 2


def test_the_time_limit_skips_the_remedys_plans_and_names_them():
    # the budget path: two make-room plans (within max_moves 1, then without); a limit that has passed
    # skips both, the reason is computed in full all the same
    c = cluster(
        [{"name": f"n{i}", "gpus": 8} for i in range(3)],
        [*({"name": f"p{i}", "gpus": 2, "node": f"n{i % 2}"} for i in range(4)), *gang("j", 2, 8)],
        [{"name": "j"}],
    )
    out = explain_job(c, "j", ExplainOptions(max_moves=1, time_limit_s=1e-9))
    assert reason(out) == "fragmentation" and out["time_limit_s"] == 1e-9
    remedy = out["remedy"]
    assert remedy["code"] == "time_limit" and not remedy["proof"] and remedy["skipped"] == ["make_room", "without_budgets"]
    assert remedy["numbers"]["time_limit_s"] == 1e-9 and remedy["numbers"]["elapsed_s"] >= 0 and remedy["budgets"] == {"max_moves": 1}
    roomy = explain_job(c, "j", ExplainOptions(max_moves=1, time_limit_s=600))
    assert roomy["remedy"]["code"] == "budget" and roomy["time_limit_s"] == 600
    assert explain_job(c, "j")["time_limit_s"] is None
    proofs = cluster([{"name": "n0", "gpus": 8}], gang("big", 2, 8), [{"name": "big"}])  # proofs need no plan: never cut
    assert explain_job(proofs, "big", ExplainOptions(time_limit_s=1e-9))["remedy"]["code"] == "capacity"


def test_a_pod_of_a_job_is_explained_by_its_job_and_a_running_pod_is_refused():
    c = cluster([{"name": "n0", "gpus": 8}], [{"name": "a", "gpus": 2, "node": "n0"}, *gang("j", 1, 8)], [{"name": "j"}])
    assert explain_pod(c, "j-0")["job"] == "j"
    with pytest.raises(SnapshotError, match="runs on node 'n0'"):
        explain_pod(c, "a")
    lone = cluster([{"name": "n0", "gpus": 8}], [{"name": "a", "gpus": 4, "node": "n0"}, {"name": "solo", "gpus": 8, "node": None}])
    out = explain_pod(lone, "solo")
    assert out["job"] == "solo" and reason(out) == "capacity" and out["reason"]["numbers"]["free_gpus_schedulable"] == 4


def test_a_job_at_its_min_available_is_already_running():
    c = cluster(
        [{"name": "n0", "gpus": 8}],
        [{"name": "j-0", "job": "j", "gpus": 8, "node": "n0"}, {"name": "j-1", "job": "j", "gpus": 8, "node": None}],
        [{"name": "j", "min_available": 1}],
    )
    out = explain_job(c, "j")
    assert reason(out) == "already_running" and out["pods_needed"] == 0 and out["running_pods"] == 1


def test_reason_codes_are_documented():
    text = (REPO / "docs" / "explain.md").read_text()
    for code in ALL_CODES:
        assert f"`{code}`" in text, code
    assert {c.code for c in JOB_CODES} | {c.code for c in REMEDY_CODES} | {c.code for c in NODE_CODES} == set(ALL_CODES)


# ----------------------------------------------------------------------------------------------
# brute force on tiny clusters (independent of the planner): can the job start now, after any moves?
# ----------------------------------------------------------------------------------------------


def _fits(node: dict[str, Any], pods: list[dict[str, Any]], arriving: list[dict[str, Any]]) -> bool:
    everyone = pods + arriving
    if sum(p["gpus"] for p in everyone) > node["gpus"] or sum(p["cpus"] for p in everyone) > node["cpus"]:
        return False
    if any(p.get("gpu_models") and node.get("gpu_model") not in p["gpu_models"] for p in arriving):
        return False
    return not any(node.get("taints") and not p.get("tolerations") for p in arriving)


def _starts(nodes: list[dict[str, Any]], placed: dict[str, list[dict[str, Any]]], job: list[dict[str, Any]], asw: bool) -> bool:
    for where in itertools.product(range(len(nodes)), repeat=len(job)):
        if asw and len({nodes[w]["asw"] for w in where}) > 1:
            continue
        if all(_fits(nodes[n], placed[nodes[n]["name"]], [job[i] for i, w in enumerate(where) if w == n]) for n in set(where)):
            return True
    return False


def brute(spec: dict[str, Any]) -> tuple[bool, bool]:
    """(starts now, starts in some end state where every movable pod is somewhere legal)."""
    nodes, pods, asw = spec["nodes"], spec["pods"], bool(spec["jobs"][0].get("topology"))
    job = [p for p in pods if p["node"] is None]
    placed = [p for p in pods if p["node"] is not None]
    now = {n["name"]: [p for p in placed if p["node"] == n["name"]] for n in nodes}
    movable = [p for p in placed if not p.get("locked")]
    later = False
    for where in itertools.product(range(len(nodes)), repeat=len(movable)):
        state = {n["name"]: [p for p in placed if p.get("locked") and p["node"] == n["name"]] for n in nodes}
        for p, w in zip(movable, where):
            state[nodes[w]["name"]].append(p)
        if all(_fits(n, [], state[n["name"]]) or state[n["name"]] == now[n["name"]] for n in nodes) and _starts(nodes, state, job, asw):
            later = True
            break
    return _starts(nodes, now, job, asw), later


@st.composite
def tiny(draw: Any) -> dict[str, Any]:
    count = draw(st.integers(2, 3))
    nodes = [
        {
            "name": f"n{i}",
            "gpus": draw(st.sampled_from([4, 8])),
            "cpus": 16,
            "memory_gib": 512,
            "gpu_model": draw(st.sampled_from(["H", "A"])),
            "asw": f"s{i % 2}",
            **({"taints": [{"key": "k", "effect": "NoSchedule"}]} if draw(st.booleans()) and i else {}),
        }
        for i in range(count)
    ]
    pods = []
    for i in range(draw(st.integers(0, 3))):
        n = draw(st.integers(0, count - 1))
        gpus = draw(st.integers(1, 4))
        used = sum(p["gpus"] for p in pods if p["node"] == f"n{n}")
        if used + gpus <= nodes[n]["gpus"]:
            pods.append({"name": f"p{i}", "gpus": gpus, "cpus": draw(st.sampled_from([1, 8])), "node": f"n{n}", "locked": draw(st.booleans())})
    size, gpus = draw(st.integers(1, 2)), draw(st.sampled_from([2, 4, 8]))
    models = draw(st.sampled_from([None, ["H"]]))
    pods += [{"name": f"j-{i}", "job": "j", "gpus": gpus, "cpus": 2, "node": None, **({"gpu_models": models} if models else {})} for i in range(size)]
    required = draw(st.booleans())
    return {"nodes": nodes, "pods": pods, "jobs": [{"name": "j", **({"topology": {"level": "asw", "mode": "required"}} if required else {})}]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_proofs_agree_with_a_brute_force(spec):
    c = Cluster.model_validate(spec)
    out = explain_job(c, "j")
    now, later = brute(spec)
    assert (out["reason"]["code"] == "fits_now") == now, out["reason"]
    if out["remedy"]["proof"] and out["remedy"]["code"] != "none_needed":
        assert not later, out["remedy"]  # a proof that no moves start it: no end state starts it
    if out["remedy"]["code"] in ("make_room", "budget"):
        assert later


@pytest.mark.parametrize("seed", [1, 2])
def test_remedy_agrees_with_make_room_on_generated_clusters(seed):
    from planner.instances.asi import generate_asi  # deferred: only this test generates clusters
    from planner.instances.batch import add_large_jobs  # deferred: as above

    c = add_large_jobs(generate_asi(60, seed=seed, pending_jobs=3, allocation=0.5), 2, seed)
    pending = list(dict.fromkeys(p.job for p in c.pods if p.node is None and p.job))
    remedies = []
    for name in pending:
        out = explain_job(c, name)
        remedies.append(out["remedy"]["code"])
        plan = plan_defrag(c, DefragOptions(make_room=[name], executor="inline"))
        assert isinstance(plan, DefragPlan) and plan.metrics is not None
        job = plan.metrics.per_job[name]
        if out["remedy"]["code"] == "make_room":  # startable after k moves: make-room starts it with k or fewer
            k = out["remedy"]["numbers"]["moves"]
            assert job["placed"] and job["moves"] <= k
            if k:  # one move fewer than it took: the budget stops the heuristic, and explain says so
                tight = explain_job(c, name, ExplainOptions(max_moves=k - 1))
                assert tight["remedy"]["code"] in ("budget", "make_room")
                if tight["remedy"]["code"] == "make_room":
                    assert tight["remedy"]["numbers"]["moves"] <= k - 1
        elif out["remedy"]["code"] == "none_needed":
            assert job["placed"] and job["moves"] == 0
        else:
            assert not job["placed"], (name, out["remedy"])
    assert "make_room" in remedies


# ----------------------------------------------------------------------------------------------
# a node a plan left busy
# ----------------------------------------------------------------------------------------------

BUSY = cluster(
    [{"name": "n0", "gpus": 8, "gpu_model": "A"}, {"name": "n1", "gpus": 8, "gpu_model": "A"}, {"name": "n2", "gpus": 8, "gpu_model": "B"}],
    [
        {"name": "lock", "gpus": 1, "node": "n0", "locked": True},
        {"name": "free", "gpus": 1, "node": "n0"},
        {"name": "only", "gpus": 7, "node": "n1", "gpu_models": ["A"]},
        {"name": "aa1", "gpus": 1, "node": "n2", "anti_affinity": ["g"]},
    ],
)


def test_node_left_busy_names_the_rule_per_pod():
    plan = plan_defrag(BUSY, DefragOptions(executor="inline"))
    assert isinstance(plan, DefragPlan)
    busy = [n for n in ("n0", "n1", "n2") if any(p.node == n for p in BUSY.pods) and n not in plan.vacated_nodes]
    assert "n0" in busy
    out = explain_node(BUSY, "n0", plan)
    codes = {p["pod"]: p["code"] for p in out["pods"]}
    assert codes["lock"] == "locked" and out["reason"]["code"] == "locked"
    empty_plan = DefragPlan(waves=[], vacated_nodes=[])
    out = explain_node(BUSY, "n1", empty_plan)
    assert {p["pod"]: p["code"] for p in out["pods"]} == {"only": "no_destination_with_room"}
    assert explain_node(BUSY, "n0", empty_plan)["pods"][1]["code"] == "heuristic_choice"


def test_node_with_no_eligible_destination():
    c = cluster(
        [{"name": "n0", "gpus": 8, "gpu_model": "H"}, {"name": "n1", "gpus": 8, "gpu_model": "A"}],
        [{"name": "h", "gpus": 1, "node": "n0", "gpu_models": ["H"]}],
    )
    out = explain_node(c, "n0", DefragPlan(waves=[], vacated_nodes=[]))
    assert out["pods"][0]["code"] == "no_eligible_destination" and out["pods"][0]["proof"]


def test_node_kept_by_anti_affinity_topology_and_the_plans_limits():
    empty = DefragPlan(waves=[], vacated_nodes=[])
    groups = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "a", "gpus": 1, "node": "n0", "anti_affinity": ["g"]}, {"name": "b", "gpus": 1, "node": "n1", "anti_affinity": ["g"]}],
    )
    assert explain_node(groups, "n0", empty)["pods"][0]["code"] == "anti_affinity"
    switch = cluster(
        [{"name": "n0", "gpus": 8, "asw": "s0"}, {"name": "n1", "gpus": 8, "asw": "s0", "schedulable": False}, {"name": "n2", "gpus": 8, "asw": "s1"}],
        [{"name": "t-0", "job": "t", "gpus": 4, "node": "n0"}, {"name": "t-1", "job": "t", "gpus": 8, "node": "n1"}],
        [{"name": "t", "topology": {"level": "asw", "mode": "required"}}],
    )
    out = explain_node(switch, "n0", empty)["pods"][0]
    assert out["code"] == "topology" and out["numbers"] == {"other_nodes": 2, "static_rules": 1, "topology": 1}
    scoped = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "k", "gpus": 2, "node": "n0", "namespace": "keep"}, {"name": "m", "gpus": 2, "node": "n1"}],
    )
    plan = plan_defrag(scoped, DefragOptions(exclude_namespaces=["keep"], executor="inline"))
    assert isinstance(plan, DefragPlan) and plan.vacated_nodes == ["n1"]
    out = explain_node(scoped, "n0", plan)
    assert out["pods"][0]["code"] == "limits" and "exclude_namespaces" in out["pods"][0]["detail"]


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------


def test_cli_json_and_table(tmp_path):
    c = cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "a", "gpus": 4, "node": "n0"}, {"name": "b", "gpus": 4, "node": "n1"}, *gang("big", 1, 8)],
        [{"name": "big"}],
    )
    path = tmp_path / "s.json"
    path.write_text(c.model_dump_json())
    result = runner.invoke(app, ["explain", str(path), "--job", "big", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["reason"]["code"] == "fragmentation" and data["remedy"]["numbers"]["moves"] == 1
    result = runner.invoke(app, ["explain", str(path), "--job", "big"])
    assert result.exit_code == 0 and "fragmentation" in result.stdout and "1 move(s)" in result.stdout
    result = runner.invoke(app, ["explain", str(path), "--job", "big", "--time-limit", "1e-9"])
    assert result.exit_code == 0 and "remedy: time_limit" in result.stdout and "not tried: make_room" in result.stdout, result.output
    for bad in ("0", "-1", "nan"):
        result = runner.invoke(app, ["explain", str(path), "--job", "big", "--time-limit", bad])
        assert result.exit_code == 2 and "--time-limit: must be above 0" in result.stderr, result.output


def test_cli_unknown_names_exit_2_with_close_names_and_pending_jobs(tmp_path):
    c = cluster([{"name": "node-a", "gpus": 8}], [*gang("train-1", 1, 8), {"name": "x", "gpus": 8, "node": "node-a"}], [{"name": "train-1"}])
    path = tmp_path / "s.json"
    path.write_text(c.model_dump_json())
    result = runner.invoke(app, ["explain", str(path), "--job", "train-l"])
    assert result.exit_code == 2
    assert "did you mean 'train-1'" in result.stderr and "pending jobs (and pending pods of no job): train-1" in result.stderr
    result = runner.invoke(app, ["explain", str(path), "--node", "node-b", "--plan", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    plan = tmp_path / "p.json"
    plan.write_text(dump_plan(DefragPlan(waves=[], vacated_nodes=[])))
    result = runner.invoke(app, ["explain", str(path), "--node", "node-b", "--plan", str(plan)])
    assert result.exit_code == 2 and "did you mean 'node-a'" in result.stderr
    result = runner.invoke(app, ["explain", str(path)])
    assert result.exit_code == 2 and "exactly one of --job, --pod or --node" in result.stderr
