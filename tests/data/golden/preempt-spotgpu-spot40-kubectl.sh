#!/usr/bin/env bash
# PreemptPlan: 1 eviction(s), then 3 binding(s), written by `planner`.
# Evictions go through the Eviction API, so PodDisruptionBudgets apply (a refused eviction stops the
# script). Evicted pods stop before anything starts: a preemption is break-before-make. The pending pods
# are then bound to their planned nodes with a Binding, as a scheduler does; a pod some scheduler bound
# in the meantime makes its binding fail, which stops the script (run it again after planning again).
# Usage: bash SCRIPT  |  DRY_RUN=1 bash SCRIPT (every request with dryRun=All, nothing changes)  (SCRIPT: this file)
set -euo pipefail
KUBECTL="${KUBECTL:-kubectl}"
QUERY=""
if [[ "${DRY_RUN:-0}" == "1" ]]; then QUERY="?dryRun=All"; fi
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-1800}"

echo 'evict default/lp-00007-0 (on node-3542)' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/lp-00007-0/eviction"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "lp-00007-0", "namespace": "default"}}
PLANNER_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then
  "$KUBECTL" wait --for=delete pod/lp-00007-0 -n default --timeout="${WAIT_TIMEOUT_S}s"
fi
echo 'bind default/hp-new-0-0 to node-3542' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/hp-new-0-0/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "hp-new-0-0", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-3542"}}
PLANNER_EOF
echo 'bind default/hp-new-0-1 to node-3542' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/hp-new-0-1/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "hp-new-0-1", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-3542"}}
PLANNER_EOF
echo 'bind default/hp-new-0-2 to node-3542' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/hp-new-0-2/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "hp-new-0-2", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-3542"}}
PLANNER_EOF
