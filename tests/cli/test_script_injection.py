"""Issue 40, item 1: names from the input never run as shell code in a generated script.

Two layers, each tested on its own: names Kubernetes would refuse are refused at import and before a
script is rendered (exit 2 naming the field and the rule), and the renderers quote every value from
the input anyway, so a script built from hostile names (bypassing the check) runs nothing injected and
hands each name to kubectl as one argument. Scripts run with bash against a fake ``kubectl`` that
records its argv, one ``<argument>`` per argument.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Job, Node, Pod, Toleration
from planner.plans import AllocationPlan, DefragPlan, Move, Placement, PreemptPlan, Victim
from planner.render.kubernetes import placement_script, pod_migration_jobs
from planner.render.kubernetes_waves import kubectl_script

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"

FAKE_KUBECTL = r"""#!/usr/bin/env bash
# one line per call: each argument as <argument>; what an apply or create reads follows, then a blank line.
# `get pods NAME...` answers "name uid node" (padded, as custom-columns prints) per name found in
# $FAKE_PODS, NUL-separated name, uid, node triples (any bytes but NUL)
for arg in "$@"; do printf '<%s>' "$arg" >> "$FAKE_LOG"; done
echo >> "$FAKE_LOG"
if [[ "$1" == "apply" || "$1" == "create" ]]; then cat >> "$FAKE_LOG"; echo >> "$FAKE_LOG"; fi
if [[ "$1" == "get" && "$2" == "pods" ]]; then
  shift 2
  while [[ "$1" != -* ]]; do
    while IFS= read -r -d '' name && IFS= read -r -d '' uid && IFS= read -r -d '' node; do
      if [[ "$name" == "$1" ]]; then printf '%s   %s   %s\n' "$name" "$uid" "$node"; fi
    done < "${FAKE_PODS:-/dev/null}"
    shift
  done
fi
exit 0
"""


def _payloads(marker: Path) -> list[str]:
    """Names that would run ``touch marker`` (or break out of a quote, heredoc or path) if pasted raw."""
    return [
        f"$(touch {marker})",
        f"`touch {marker}`",
        f'"; touch {marker}; echo "',
        f"'; touch {marker}; echo '",
        f"x\nPLANNER_EOF\ntouch {marker}\n",
        f"x\nPLANNER_WAVE_EOF\ntouch {marker}\n",
        "../../kube-system/pods/victim",
        "x/evil",
        "x;touch${IFS}" + str(marker),
    ]


def _run(tmp_path: Path, script: str, pods: list[tuple[str, str, str]] = ()) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``script`` (DRY_RUN=1) with the fake ``kubectl``, the cluster's ``pods`` (name, uid, node)."""
    (tmp_path / "pods").write_bytes(b"".join(f"{n}\0{u}\0{d}\0".encode() for n, u, d in pods))
    fake = tmp_path / "bin" / "kubectl"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE_KUBECTL)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "plan.sh").write_text(script)
    log = tmp_path / "calls.log"
    log.write_text("")
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "FAKE_LOG": str(log), "FAKE_PODS": str(tmp_path / "pods"), "DRY_RUN": "1"}
    done = subprocess.run(["bash", str(tmp_path / "plan.sh")], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    return done, log.read_text()


def _hostile_cluster(marker: Path) -> tuple[Cluster, list[str]]:
    """One node per payload (named by it) holding a pod named by it, in a namespace named by it."""
    names = _payloads(marker)
    nodes = [Node(name=n, gpus=8, cpus=64, memory_gib=512) for n in names] + [Node(name="spare", gpus=8, cpus=64, memory_gib=512)]
    pods = [
        Pod(name=n, namespace=n, gpus=1, cpus=1, memory_gib=1, node=n, tolerations=[Toleration(key="k", operator="Equal", value=n, effect="NoSchedule")])
        for n in names
    ]
    pending = [Pod(name=f"{n}-pending", namespace=n, job="j", gpus=1, cpus=1, memory_gib=1) for n in names]
    return Cluster(nodes=nodes, pods=pods + pending, jobs=[Job(name="j")]), names


def test_a_placement_script_from_hostile_names_runs_nothing_and_passes_each_name_whole(tmp_path: Path) -> None:
    marker = tmp_path / "INJECTED"
    cluster, names = _hostile_cluster(marker)
    victims = [Victim(pod=n, node=n, lost_gpu_s=0) for n in names]
    placements = [Placement(pod=f"{n}-pending", node=n) for n in names]
    for plan in (PreemptPlan(job="j", now_s=0, placements=placements, victims=victims, reactivate=names[4]), AllocationPlan(placements=placements)):
        done, log = _run(tmp_path, placement_script(plan, cluster))
        assert done.returncode == 0, done.stderr
        assert not marker.exists(), "a name ran as a command"
        calls = [line for line in log.splitlines() if line.startswith("<")]
        expected = [
            f"<create><--raw></api/v1/namespaces/{quote(n, safe='')}/pods/{quote(n, safe='')}/eviction?dryRun=All><-f><->"
            for n in names
            if isinstance(plan, PreemptPlan)
        ]
        expected += [f"<create><--raw></api/v1/namespaces/{quote(n, safe='')}/pods/{quote(n + '-pending', safe='')}/binding?dryRun=All><-f><->" for n in names]
        assert calls == expected
        bodies = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        assert [b["metadata"]["name"] for b in bodies if b["kind"] == "Binding"] == [f"{n}-pending" for n in names]
        assert [b["target"]["name"] for b in bodies if b["kind"] == "Binding"] == names


def _hostile_defrag(marker: Path) -> tuple[Cluster, DefragPlan, list[str]]:
    """Every hostile name moves to 'spare' in wave 1, with a hostile UID (quotes, commands that would
    touch the marker in the script's directory, a newline)."""
    cluster, names = _hostile_cluster(marker)
    uids = [f"'$(touch {marker.name})' `touch {marker.name}`\n{i}" for i in range(len(names))]
    plan = DefragPlan(
        waves=[
            [Move(pod=n, **{"from": n}, to="spare", uid=u) for n, u in zip(names, uids)],
            [Move(pod=names[0] + "-pending", **{"from": "spare"}, to=names[1])],
        ],
        vacated_nodes=[],
    )
    pods = [p.model_copy(update={"uid": u}) for p, u in zip(cluster.pods, uids)]
    cluster = cluster.model_copy(update={"pods": [*pods, cluster.pods[len(names)].model_copy(update={"node": "spare"})]})
    return cluster, plan, uids


def _calls(log: str) -> list[str]:
    """Each call's line and what it read: chunks of the log, one per call."""
    return ["<" + chunk for chunk in ("\n" + log).split("\n<")[1:]]


def test_a_defrag_script_and_its_objects_hold_against_hostile_names(tmp_path: Path) -> None:
    marker = tmp_path / "INJECTED"
    cluster, plan, uids = _hostile_defrag(marker)
    names = [m.pod for m in plan.waves[0]]
    state = [(n, u, n) for n, u in zip(names, uids)] + [(plan.waves[1][0].pod, "u", "spare")]
    done, log = _run(tmp_path, kubectl_script(plan, cluster), state)
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "a name or a UID ran as a command"
    calls = _calls(log)
    for n in names:  # one check per namespace and wave, each name and namespace one argument
        assert f"<get><pods><{n}><-n><{n}><--ignore-not-found>" in log
    assert sum(c.startswith("<get><pods>") for c in calls) == len(names) + 1
    streams = [c.split("\n", 1)[1] for c in calls if c.startswith("<apply>")]  # what each apply read
    assert len(streams) == 2 and calls[len(names)].startswith("<apply><--dry-run=server><-f><->")
    applied = [doc for stream in streams for doc in yaml.safe_load_all(stream) if doc]
    assert applied == pod_migration_jobs(plan, cluster), "the objects kubectl received differ from the plan's"
    assert [o["spec"]["podRef"]["name"] for o in applied[: len(names)]] == names
    assert [o["metadata"]["annotations"]["planner.io/pod-uid"] for o in applied[: len(names)]] == uids


def test_hostile_names_and_uids_the_check_reports_are_printed_quoted_and_run_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "INJECTED"
    cluster, plan, _uids = _hostile_defrag(marker)
    names = [m.pod for m in plan.waves[0]]
    now = "$(touch${IFS}" + marker.name + ")"  # a UID holds no blank: custom-columns separates by blanks
    done, log = _run(tmp_path, kubectl_script(plan, cluster), [(n, now, n) for n in names])  # every pod replaced
    assert done.returncode == 3, done.stderr
    assert not marker.exists(), "a name or a UID ran as a command"
    assert not [c for c in _calls(log) if c.startswith("<apply>")], "nothing applied"
    assert done.stderr.count(": replaced (UID now ") == len(names)
    assert "replaced (UID now \\$\\(touch\\$\\{IFS\\}INJECTED\\)," in done.stderr, "the UID the cluster answered is printed as printf %q quotes it"
    assert "$'x\\nPLANNER_EOF" in done.stderr and "\nPLANNER_EOF" not in done.stderr, "no raw newline from a name reaches the terminal"


def _snapshot(tmp_path: Path, pod: str = "train-0", namespace: str | None = "team-a", node: str = "n0") -> Path:
    nodes = [Node(name=node, gpus=8, cpus=64, memory_gib=512), Node(name="n1", gpus=4, cpus=64, memory_gib=512, schedulable=False)]
    pods = [Pod(name=pod, namespace=namespace, job="j", gpus=4, cpus=1, memory_gib=1)]
    path = tmp_path / "s.json"
    path.write_text(Cluster(nodes=nodes, pods=pods, jobs=[Job(name="j")]).model_dump_json())
    return path


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("pod", "$(touch INJECTED)", "DNS-1123 subdomain"),
        ("pod", "x/evil", "DNS-1123 subdomain"),
        ("pod", "Train-0", "DNS-1123 subdomain"),
        ("namespace", "../kube-system", "DNS-1123 label"),
        ("namespace", "a" * 64, "DNS-1123 label"),
        ("node", "n0;id", "DNS-1123 subdomain"),
    ],
)
@pytest.mark.parametrize("output", ["kubectl", "podmigrationjob"])
def test_a_script_from_a_plain_snapshot_with_names_kubernetes_refuses_is_exit_2(tmp_path: Path, field: str, value: str, rule: str, output: str) -> None:
    path = _snapshot(tmp_path, **{field: value})
    if output == "kubectl":
        done = runner.invoke(app, ["allocate", str(path), "--jobs", "j", "-o", "kubectl"])
        where = {"pod": "pods[0].name", "namespace": "pods[0].namespace", "node": "nodes[0].name"}[field]
    else:  # a defrag plan: the pod on n1 moves next to the locked filler on n0, emptying n1
        cluster = json.loads(path.read_text())
        cluster["pods"][0].update(node="n1", job=None)
        cluster["pods"].append({"name": "filler", "gpus": 4, "cpus": 1, "node": value if field == "node" else "n0", "locked": True})
        cluster["jobs"] = []
        path.write_text(json.dumps(cluster))
        done = runner.invoke(app, ["defrag", str(path), "-o", "podmigrationjob"])
        where = {"pod": "pods[0].name", "namespace": "pods[0].namespace", "node": "nodes[0].name"}[field]
    assert done.exit_code == 2, done.output
    assert f"error: {where}: " in done.output and rule in done.output, done.output
    assert "Traceback" not in done.output and not (tmp_path / "INJECTED").exists()


def _example_with(change: str) -> dict:
    data = json.loads(EXAMPLE.read_text())
    items = copy.deepcopy(data["items"])
    pod = next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "pretrain-workers-0-0")
    node = next(i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == "h100-7")
    if change == "pod":
        pod["metadata"]["name"] = "$(id > /tmp/x)"
    elif change == "namespace":
        pod["metadata"]["namespace"] = "../kube-system"
    elif change == "node":
        node["metadata"]["name"] = "H100_7"
    return {**data, "items": items}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("pod", "Pod research/$(id > /tmp/x): metadata.name: '$(id > /tmp/x)' is not a valid pod name"),
        ("namespace", "metadata.namespace: '../kube-system' is not a valid namespace"),
        ("node", "Node H100_7: metadata.name: 'H100_7' is not a valid node name"),
    ],
)
@pytest.mark.parametrize("command", [["import", "kubernetes"], ["allocate", "--from", "kubernetes", "-o", "kubectl"]])
def test_the_importer_refuses_names_kubernetes_refuses(tmp_path: Path, change: str, message: str, command: list[str]) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps(_example_with(change)))
    done = runner.invoke(app, [*command[:2], str(path), *command[2:]] if command[0] == "import" else [command[0], str(path), *command[1:]])
    assert done.exit_code == 2, done.output
    assert message in done.output and "DNS-1123" in done.output, done.output


def test_two_snapshot_pods_that_are_one_kubernetes_pod_are_refused() -> None:
    from planner.render.kubernetes import script_name_problems

    nodes = [Node(name="n0", gpus=8, cpus=64, memory_gib=512)]
    pods = [
        Pod(name="x", namespace="team-a", gpus=1, cpus=1, job="j"),
        Pod(name="team-a/x", namespace="team-a", gpus=1, cpus=1, job="j"),
        Pod(name="team-b/x", namespace="team-b", gpus=1, cpus=1, job="j"),
    ]
    cluster = Cluster(nodes=nodes, pods=pods, jobs=[Job(name="j")])
    plan = AllocationPlan(placements=[Placement(pod=p.name, node="n0") for p in pods])
    assert script_name_problems(plan, cluster) == ["pods[1].name: is Kubernetes pod team-a/x, as pods[0] is"]
