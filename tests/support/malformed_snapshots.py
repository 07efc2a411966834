"""Malformed snapshots, each with a fragment of the message that must name its field: the snapshot
tests parse every one, the command-line tests run ``planner report`` and ``planner defrag`` on them."""

from __future__ import annotations

from tests.support.clusters import node, pod

GOOD = {"nodes": [node("n-0", gpu_model="A100", asw="asw-0"), node("n-1", gpu_model="A100", asw="asw-1")]}


def with_pods(*pods: dict, jobs: list[dict] = (), **top: object) -> dict:
    return {**GOOD, "pods": list(pods), "jobs": list(jobs), **top}


MALFORMED = [
    # (case, snapshot, expected fragment of a message)
    ("truncated JSON", '{"nodes": [{"name": "n-0", "gpus": 8', "snap.json: not valid JSON"),
    ("empty file", "", "snap.json: not valid JSON"),
    ("top level is a list", "[]", "(top level): must be an object"),
    ("nodes not a list", {"nodes": {"name": "n-0"}}, "nodes: must be a list"),
    ("missing nodes", {"pods": []}, "nodes: required field is missing"),
    ("missing node cpus", {"nodes": [{"name": "n-0", "gpus": 8, "memory_gib": 1}]}, "nodes[0].cpus: required field is missing"),
    ("string where a number belongs", {"nodes": [node("n-0", gpus="8")]}, "nodes[0].gpus: must be a whole number, got '8'"),
    ("fractional node gpus", {"nodes": [node("n-0", gpus=7.5)]}, "nodes[0].gpus"),
    ("negative cpus", {"nodes": [node("n-0", cpus=-4)]}, "nodes[0].cpus: input should be greater than 0"),
    ("zero cpus", {"nodes": [node("n-0", cpus=0)]}, "nodes[0].cpus: input should be greater than 0"),
    ("negative memory", {"nodes": [node("n-0", memory_gib=-1)]}, "nodes[0].memory_gib: input should be greater than or equal to 0"),
    ("non-finite number", '{"nodes": [{"name": "n-0", "gpus": 8, "cpus": Infinity, "memory_gib": 1}]}', "nodes[0].cpus: must be a finite number"),
    ("NaN memory", '{"nodes": [{"name": "n-0", "gpus": 8, "cpus": 8, "memory_gib": NaN}]}', "nodes[0].memory_gib: must be a finite number"),
    ("label value not a string", {"nodes": [node("n-0", labels={"zone": 1})]}, "nodes[0].labels.zone: must be a string, got 1"),
    ("unknown field with a typo", {"nodes": [node("n-0", memory_gb=4)]}, "nodes[0].memory_gb: unknown field; did you mean 'memory_gib'?"),
    ("unsupported version", {**GOOD, "version": 2}, "version: unsupported version 2"),
    ("duplicate node", {"nodes": [node("n-0"), node("n-0")]}, "nodes[1].name: duplicate name 'n-0'"),
    ("duplicate pod", with_pods(pod("p", "n-0"), pod("p", "n-1")), "pods[1].name: duplicate name 'p'"),
    ("duplicate job", with_pods(jobs=[{"name": "j"}, {"name": "j"}]), "jobs[1].name: duplicate name 'j'"),
    ("unknown node", with_pods(pod("p", "n-0"), pod("q", "n-9")), "pods[1].node: unknown node 'n-9'"),
    ("unknown job", with_pods(pod("p", "n-0", job="train")), "pods[0].job: unknown job 'train'"),
    ("gpus above one not whole", with_pods(pod("p", "n-0", gpus=1.5)), "pods[0].gpus: 1.5 is neither a whole number nor a share below 1"),
    ("negative pod gpus", with_pods(pod("p", "n-0", gpus=-1)), "pods[0].gpus: input should be greater than or equal to 0"),
    ("unknown priority", with_pods(pod("p", "n-0", priority="MID")), "pods[0].priority: input should be 'HP' or 'LP'"),
    ("missing pod cpus", with_pods({"name": "p", "node": "n-0", "gpus": 1}), "pods[0].cpus: required field is missing"),
    ("bad topology level", with_pods(jobs=[{"name": "j", "topology": {"level": "rack", "mode": "required"}}]), "jobs[0].topology.level"),
    ("checkpoint in the future", with_pods(pod("p", "n-0", checkpoint_s=50), time_s=10), "pods[0].checkpoint_s: 50 is later than the snapshot time_s 10"),
    ("over-capacity node", with_pods(pod("a", "n-0", gpus=6), pod("b", "n-0", gpus=4)), "nodes[0]: over capacity in the snapshot itself: needs 10 GPUs"),
    ("over-capacity CPUs", with_pods(pod("a", "n-0", cpus=40), pod("b", "n-0", cpus=40)), "needs 80 CPUs, node 'n-0' has 64"),
    (
        "shares need more devices than the node has",
        {"nodes": [node("n-0", gpus=1)], "pods": [pod("a", "n-0", gpus=0.6), pod("b", "n-0", gpus=0.6)]},
        "needs 2 GPUs, node 'n-0' has 1",
    ),
    ("pod on a GPU model it does not allow", with_pods(pod("p", "n-0", gpu_models=["H800"])), "pods[0].node: pod 'p' allows GPU models ['H800']"),
    ("pod on a node its selector rejects", with_pods(pod("p", "n-0", node_selector={"pool": "infer"})), "pods[0].node: node 'n-0' labels"),
    (
        "anti-affinity pair on one node",
        with_pods(pod("a", "n-0", anti_affinity=["svc"]), pod("b", "n-0", anti_affinity=["svc"])),
        "pods[1].node: pods 'a' and 'b' share anti_affinity group 'svc'",
    ),
    (
        "required job topology broken",
        with_pods(pod("a", "n-0", job="j"), pod("b", "n-1", job="j"), jobs=[{"name": "j", "topology": {"level": "asw", "mode": "required"}}]),
        "jobs[0].topology: job 'j' requires one asw but its pods span asw:asw-0, asw:asw-1",
    ),
]
