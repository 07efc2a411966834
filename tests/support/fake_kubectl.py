"""A fake ``kubectl`` that records every call in order (and the objects applied), answers the kubectl
script's pod check from a file of pods, and runs a generated script with it first on PATH: the render
tests, the stale-plan tests, the round trip and benchmarks/kubernetes.py use it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from planner.cluster import Cluster
from planner.render.kubernetes import kubernetes_name

FAKE_KUBECTL = r"""#!/usr/bin/env bash
# records each call (and the objects applied); answers `get pods NAME... -n NS` from $FAKE_PODS (lines
# "namespace name uid node", as custom-columns prints them: padded) and status queries from $FAKE_FAIL
echo "$*" >> "$FAKE_LOG"
if [[ "$1" == "apply" ]]; then
  cat | grep -E '^  name: ' | sed 's/^  name: /  applied /' >> "$FAKE_LOG"
  exit 0
fi
if [[ "$1" == "get" && "$2" == "pods" ]]; then
  shift 2
  names=()
  while [[ "$1" != -* ]]; do names+=("$1"); shift; done
  while (($#)); do if [[ "$1" == "-n" ]]; then ns=$2; fi; shift; done
  # the asked pods of namespace ns, padded as custom-columns prints them (awk: one pass over the pods file)
  printf '%s\n' "${names[@]}" | awk -v ns="$ns" 'NR == FNR { want[$1] = 1; next } $1 == ns && ($2 in want) { printf "%s   %s   %s\n", $2, $3, $4 }' - "${FAKE_PODS:-/dev/null}"
  exit 0
fi
if [[ "$1" == "get" ]]; then
  name="${2#podmigrationjob/}"
  if [[ -n "${FAKE_FAIL:-}" && "$name" == *"$FAKE_FAIL"* ]]; then echo -n Failed; else echo -n Succeeded; fi
  exit 0
fi
exit 1
"""


def pod_state(cluster: Cluster, **changes: tuple[str, str]) -> str:
    """The fake's pods: every placed pod of ``cluster`` as "namespace name uid node" (a pod without a
    UID gets one), with ``changes``: pod name -> (uid, node) as the cluster has it now."""
    lines = []
    for pod in cluster.pods:
        uid, node = changes.get(pod.name, (pod.uid or f"uid-{pod.name}", pod.node))
        if node is not None and uid is not None:
            lines.append(f"{pod.namespace or 'default'} {kubernetes_name(pod)} {uid} {node}\n")
    return "".join(lines)


def run_script(
    tmp_path: Path, script: str, fake_kubectl: str = FAKE_KUBECTL, cluster: Cluster | None = None, pods: str | None = None, timeout_s: float = 60.0, **env: str
) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``script`` with ``fake_kubectl`` first on PATH, the cluster's pods as ``pods`` says (else as in
    ``cluster``); its recorded calls (non-empty lines)."""
    fake = tmp_path / "bin" / "kubectl"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(fake_kubectl)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    path = tmp_path / "plan.sh"
    path.write_text(script)
    log = tmp_path / "calls.log"
    log.write_text("")
    state = tmp_path / "pods.txt"
    state.write_text(pods if pods is not None else pod_state(cluster) if cluster is not None else "")
    environment = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "FAKE_LOG": str(log), "FAKE_PODS": str(state), "POLL_S": "0", **env}
    done = subprocess.run(["bash", str(path)], env=environment, capture_output=True, text=True, timeout=timeout_s)
    return done, [line for line in log.read_text().splitlines() if line]
