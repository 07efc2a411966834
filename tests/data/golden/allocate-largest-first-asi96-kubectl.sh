#!/usr/bin/env bash
# AllocationPlan: 8 binding(s) and no eviction, written by `planner`.
# The pending pods are bound to their planned nodes with a Binding, as a scheduler does; a pod some scheduler bound
# in the meantime makes its binding fail, which stops the script (run it again after planning again).
# Usage: bash SCRIPT  |  DRY_RUN=1 bash SCRIPT (every request with dryRun=All, nothing changes)  (SCRIPT: this file)
set -euo pipefail
KUBECTL="${KUBECTL:-kubectl}"
QUERY=""
if [[ "${DRY_RUN:-0}" == "1" ]]; then QUERY="?dryRun=All"; fi
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-1800}"

echo 'bind default/batch-001-0 to node-49' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-0/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-0", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-49"}}
PLANNER_EOF
echo 'bind default/batch-001-1 to node-52' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-1/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-1", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-52"}}
PLANNER_EOF
echo 'bind default/batch-001-2 to node-54' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-2/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-2", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-54"}}
PLANNER_EOF
echo 'bind default/batch-001-3 to node-57' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-3/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-3", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-57"}}
PLANNER_EOF
echo 'bind default/batch-001-4 to node-63' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-4/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-4", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-63"}}
PLANNER_EOF
echo 'bind default/batch-001-5 to node-66' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-5/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-5", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-66"}}
PLANNER_EOF
echo 'bind default/batch-001-6 to node-68' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-6/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-6", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-68"}}
PLANNER_EOF
echo 'bind default/batch-001-7 to node-70' >&2
"$KUBECTL" create --raw /api/v1/namespaces/default/pods/batch-001-7/binding"$QUERY" -f - <<'PLANNER_EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "batch-001-7", "namespace": "default"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-70"}}
PLANNER_EOF
