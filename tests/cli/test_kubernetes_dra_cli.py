"""``planner generate kubernetes-dra`` and ``planner import kubernetes`` on DRA Lists as users run them: the
bundled example, a pod locked with the reason, exit 2 when no claim of the List can be modelled."""

from __future__ import annotations

import json

from tests.support.dra_lists import edited, fleet, items_of
from tests.support.paths import INSTANCES
from tests.support.planner_here import planner

EXAMPLE = INSTANCES / "kubernetes" / "dra-fleet.json"


def test_the_bundled_example_is_the_generators_output_and_imports_cleanly(tmp_path):
    out = tmp_path / "list.json"
    assert planner("generate", "kubernetes-dra", "--nodes", "15", "--seed", "64", "--out", str(out)).returncode == 0
    assert json.loads(out.read_text()) == json.loads(EXAMPLE.read_text())
    snap = tmp_path / "snap.json"
    done = planner("import", "kubernetes", str(EXAMPLE), "--out", str(snap))
    assert done.returncode == 0, done.stderr
    assert "locked pods: 4 shared or named resource claim" in done.stdout
    assert done.stderr.count("holds devices on its node; a replacement needs a new claim") == 4
    cluster = json.loads(snap.read_text())
    assert sum(1 for n in cluster["nodes"] if n.get("devices")) == 12  # 3 of the 15 are device-plugin only
    assert sum(1 for p in cluster["pods"] if p.get("device_claims")) == 55
    plan = planner("defrag", str(snap), "-o", "json")
    assert plan.returncode == 0, plan.stderr


def test_an_unknown_cel_function_is_a_warning_naming_the_pod_and_the_function(tmp_path):
    doc = edited(fleet(5, 3))
    for t in items_of(doc, "ResourceClaimTemplate"):
        t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": 'ip("10.0.0.1").family() == 4'}}]
    for c in items_of(doc, "ResourceClaim"):
        c["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": 'ip("10.0.0.1").family() == 4'}}]
    doc["items"].append(
        {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {
                "name": "plain",
                "namespace": "ml",
                "ownerReferences": [{"kind": "Job", "name": "j", "uid": "u", "controller": True, "apiVersion": "batch/v1"}],
            },
            "spec": {"nodeName": "node-00000", "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running"},
        }
    )
    path = tmp_path / "list.json"
    path.write_text(json.dumps(doc))
    done = planner("import", "kubernetes", str(path), "--out", str(tmp_path / "s.json"))
    assert done.returncode == 2, done.stderr
    assert "no pod's resource claims can be modelled" in done.stderr and "calls family, ip" in done.stderr
    assert "Traceback" not in done.stderr


def test_one_bad_claim_locks_its_pod_and_the_import_goes_on(tmp_path):
    doc = edited(fleet(10, 3))
    pod = next(p for p in items_of(doc, "Pod") if p["spec"].get("nodeName") == "node-00002")
    claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    claim = next(c for c in items_of(doc, "ResourceClaim") if c["metadata"]["name"] == claim_name)
    claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": "device.driver == " * 1000 + '"x"'}}]
    path = tmp_path / "list.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "s.json"
    done = planner("import", "kubernetes", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(out.read_text())
    locked = next(p for p in snapshot["pods"] if p["name"] == pod["metadata"]["name"])
    assert locked["locked"] is True
    assert "1 resource claim the planner cannot model" in done.stdout
    assert (
        f"Pod ml/{pod['metadata']['name']}: spec.resourceClaims: claim ml/{claim_name}: spec.devices.requests[0].exactly.selectors[0].cel.expression:"
        in done.stderr
    )
    assert "the pod is locked where it stands" in done.stderr


def test_generate_refuses_a_fleet_of_no_nodes():
    done = planner("generate", "kubernetes-dra", "--nodes", "0")
    assert done.returncode == 2 and "nodes: 0 is not in 1..20,000" in done.stderr


def test_podmigrationjobs_never_ask_for_the_planners_own_resource_names(tmp_path):
    snap = tmp_path / "snap.json"
    assert planner("import", "kubernetes", str(EXAMPLE), "--out", str(snap)).returncode == 0
    done = planner("defrag", str(snap), "-o", "kubectl")
    assert done.returncode == 0, done.stderr
    assert "kind: PodMigrationJob" in done.stdout and "planner.io/to: node-" in done.stdout
    assert "dra.planner.io" not in done.stdout


def test_export_refuses_dra_snapshots_naming_the_field(tmp_path):
    snap = tmp_path / "snap.json"
    assert planner("import", "kubernetes", str(EXAMPLE), "--out", str(snap)).returncode == 0
    done = planner("export", "kubernetes", str(snap), "--out", str(tmp_path / "out.json"))
    assert done.returncode == 2
    assert "nodes[0].devices: DRA devices and claims are not exported" in done.stderr
    assert not (tmp_path / "out.json").exists()
