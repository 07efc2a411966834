"""The deployment files (deploy/): every Kubernetes manifest against the Kubernetes API's own models
(the official ``kubernetes`` client: unknown or misspelled fields, wrong types and missing required
fields are caught), the ServiceMonitor against the Prometheus Operator's required fields, the
Dockerfile's instructions linted, and every flag the manifests pass to ``planner`` checked against
the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.harness import PLANNER

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes client (test extra) is not installed")


def documents() -> list[dict[str, Any]]:
    return [doc for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def by_kind(kind: str) -> dict[str, Any]:
    return next(doc for doc in documents() if doc["kind"] == kind)


def _model_name(doc: dict[str, Any]) -> str:
    version = doc["apiVersion"].rsplit("/", 1)[-1]
    return f"{version.capitalize()}{doc['kind']}"


def _normalised(value: Any) -> Any:
    """YAML as the API serialises it back (numbers that are strings stay strings)."""
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


@pytest.mark.parametrize("doc", [d for d in documents() if d["kind"] != "ServiceMonitor"], ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_manifest_is_a_valid_kubernetes_object(doc: dict[str, Any]) -> None:
    client = kubernetes.client.ApiClient()
    model = client.deserialize(json.dumps(doc), _model_name(doc), "application/json")  # raises on a missing required field or a wrong type
    assert client.sanitize_for_serialization(model) == _normalised(doc)  # nothing dropped: no unknown or misspelled field


def test_the_service_monitor_has_what_the_prometheus_operator_requires() -> None:
    monitor = by_kind("ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    service = by_kind("Service")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    ports = {p["name"] for p in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert set(endpoint) <= {"port", "path", "interval", "scheme", "bearerTokenSecret", "scrapeTimeout"}
        assert endpoint["port"] in ports and endpoint["path"] == "/metrics" and re.fullmatch(r"\d+[smh]", endpoint["interval"])


def test_the_deployment_runs_two_replicas_on_postgresql_with_probes_the_service_answers() -> None:
    deployment = by_kind("Deployment")
    spec = deployment["spec"]
    container = spec["template"]["spec"]["containers"][0]
    # two replicas sharing the queue through leases (tests/service/test_service_replicas.py), rolled one at a time
    assert spec["replicas"] == 2 and spec["strategy"]["type"] == "RollingUpdate"
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    assert {"DATABASE_URL", "PLANNER_API_TOKEN", "PLANNER_API_READ_TOKEN"} <= set(env)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz" and container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]) and "memory" in container["resources"]["limits"]
    assert "--metrics-public" in container["args"]  # the ServiceMonitor scrapes without a token


def test_the_cron_job_may_list_what_it_snapshots() -> None:
    rules = by_kind("ClusterRole")["rules"]
    allowed = {(group, resource) for rule in rules for group in rule["apiGroups"] for resource in rule["resources"] if "list" in rule["verbs"]}
    assert {("", "nodes"), ("", "pods"), ("policy", "poddisruptionbudgets")} <= allowed
    assert not any(verb in rule["verbs"] for rule in rules for verb in ("create", "update", "patch", "delete"))  # read-only
    cron = by_kind("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert cron["serviceAccountName"] == by_kind("ServiceAccount")["metadata"]["name"]
    assert "kubectl get nodes,pods,pdb" in " ".join(cron["initContainers"][0]["command"])


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", text))


def _help(*command: str) -> str:
    done = subprocess.run(
        [PLANNER, *command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "200", "PATH": "", **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_flag_the_manifests_pass_is_a_real_planner_option() -> None:
    container = by_kind("Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "serve" and _flags(" ".join(container["args"])) <= _flags(_help("serve"))
    script = by_kind("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    submit, *steps = [part.strip() for part in script.split("&&")]
    assert submit.startswith("planner submit defrag ") and _flags(submit) <= _flags(_help("submit", "defrag"))
    for step in steps:  # the apply step (planner apply --policy)
        assert step.startswith("planner apply ") and _flags(step) <= _flags(_help("apply"))
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", dockerfile, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert cmd[0] == "serve" and _flags(" ".join(cmd)) <= _flags(_help("serve"))


def test_the_dockerfile_is_multi_stage_pinned_and_runs_as_a_non_root_user() -> None:
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ").splitlines() if line.strip() and not line.startswith("#")]
    instructions = [(line.split()[0].upper(), line) for line in lines]
    bases = [line.split()[1] for op, line in instructions if op == "FROM"]
    assert len(bases) >= 2  # build and run stages
    assert all(re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*(@sha256:[0-9a-f]{64})?", base) for base in bases), bases  # exact versions
    last_from = max(i for i, (op, _) in enumerate(instructions) if op == "FROM")
    users = [line.split()[1] for op, line in instructions[last_from:] if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert not any(op == "ADD" and re.search(r"https?://", line) for op, line in instructions)  # no remote ADD
    assert all(line.split(maxsplit=1)[1].lstrip().startswith("[") for op, line in instructions if op in ("CMD", "ENTRYPOINT"))  # exec form
    assert any(op == "HEALTHCHECK" for op, _ in instructions)
    assert any(op == "COPY" and "--from=" in line for op, line in instructions[last_from:])  # only the built environment is carried over


def test_the_cron_job_plans_with_the_policy_of_its_config_map(tmp_path: Path) -> None:
    """The nightly CronJob mounts the DefragPolicy of deploy/kubernetes/defrag-policy.yaml and passes
    it to ``planner submit defrag --policy``; the policy reads as ``planner defrag`` reads it, with a
    budget per wave."""
    config_map = by_kind("ConfigMap")
    pod = by_kind("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v.get("configMap", {}).get("name") == config_map["metadata"]["name"])
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"])
    (file_name, text), *_ = config_map["data"].items()
    assert f"--policy {mount['mountPath']}/{file_name}" in pod["containers"][0]["args"][0] and "--from kubernetes" in pod["containers"][0]["args"][0]
    policy = yaml.safe_load(text)
    assert policy["apiVersion"] == "planner.io/v1" and policy["kind"] == "DefragPolicy" and policy["spec"]["budgets"]["maxNodesPerWave"] == "10%"
    (tmp_path / file_name).write_text(text)
    snapshot = Path(__file__).resolve().parents[2] / "instances" / "fig15-ejection-chain.json"
    done = subprocess.run(
        [PLANNER, "defrag", str(snapshot), "--policy", str(tmp_path / file_name), "--time-limit", "5", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    provenance = json.loads(done.stdout)["report"]["provenance"]
    assert provenance["options"]["method"] == "hybrid" and provenance["option_sources"]["max_nodes_per_wave"] == "policy"
    assert provenance["option_sources"]["time_limit_s"] == "given"


def test_the_standalone_policy_is_the_config_maps() -> None:
    """deploy/policies/defrag-policy.yaml (what the operator guide runs locally) is the document the
    nightly CronJob's ConfigMap holds, so a policy tried by hand is the one cron applies."""
    config_map = yaml.safe_load((DEPLOY / "kubernetes" / "defrag-policy.yaml").read_text())
    standalone = yaml.safe_load((DEPLOY / "policies" / "defrag-policy.yaml").read_text())
    assert yaml.safe_load(config_map["data"]["defrag-policy.yaml"]) == standalone
    assert standalone["apiVersion"] == "planner.io/v1" and standalone["kind"] == "DefragPolicy"
