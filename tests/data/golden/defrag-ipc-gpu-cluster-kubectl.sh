#!/usr/bin/env bash
# Defrag plan b37c1deecf40: 6 move(s) in 6 wave(s), written by `planner`.
# Each move is a koordinator PodMigrationJob (mode ReservationFirst: the new pod starts on the
# planned node before the old one stops). This needs koordinator's migration controller; plain
# evictions would stop the old pod first and let the scheduler pick the node.
# Usage: bash plan.sh            apply wave by wave, waiting for each wave to succeed
#        DRY_RUN=1 bash plan.sh  validate every object on the API server (--dry-run=server), create nothing
set -euo pipefail
KUBECTL="${KUBECTL:-kubectl}"
DRY=()
if [[ "${DRY_RUN:-0}" == "1" ]]; then DRY=(--dry-run=server); fi
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-1800}"

wait_wave() {  # poll until every job of the wave has succeeded; stop at the first that fails
  local deadline=$((SECONDS + WAIT_TIMEOUT_S)) phase name pending
  while :; do
    pending=0
    for name in "$@"; do
      phase=$("$KUBECTL" get "$name" -o jsonpath='{.status.phase}')
      case "$phase" in
        Succeeded) ;;
        Failed|Aborted) echo "$name: $phase; stopping before the next wave" >&2; return 1 ;;
        *) pending=$((pending + 1)) ;;
      esac
    done
    [[ $pending -eq 0 ]] && return 0
    (( SECONDS < deadline )) || { echo "wave not finished after ${WAIT_TIMEOUT_S}s" >&2; return 1; }
    sleep "${POLL_S:-5}"
  done
}

echo 'wave 1/6: 1 move(s)' >&2
"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<'PLANNER_WAVE_EOF'
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata:
  name: planner-b37c1deecf40-w1-1-finetune-1
  labels:
    planner.io/plan: b37c1deecf40
    planner.io/wave: '1'
  annotations:
    planner.io/from: h100-5
    planner.io/to: h100-4
spec:
  mode: ReservationFirst
  ttl: 30m
  podRef:
    kind: Pod
    apiVersion: v1
    namespace: research
    name: finetune-1
  reservationOptions:
    template:
      spec:
        template:
          spec:
            containers:
            - name: reserve
              image: registry.k8s.io/pause:3.9
              resources:
                requests:
                  cpu: '12'
                  memory: 98304Mi
                  nvidia.com/gpu: '2'
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - key: kubernetes.io/hostname
                      operator: In
                      values:
                      - h100-4
PLANNER_WAVE_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then wait_wave podmigrationjob/planner-b37c1deecf40-w1-1-finetune-1; fi

echo 'wave 2/6: 1 move(s)' >&2
"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<'PLANNER_WAVE_EOF'
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata:
  name: planner-b37c1deecf40-w2-1-finetune-2
  labels:
    planner.io/plan: b37c1deecf40
    planner.io/wave: '2'
  annotations:
    planner.io/from: h100-6
    planner.io/to: h100-4
spec:
  mode: ReservationFirst
  ttl: 30m
  podRef:
    kind: Pod
    apiVersion: v1
    namespace: research
    name: finetune-2
  reservationOptions:
    template:
      spec:
        template:
          spec:
            containers:
            - name: reserve
              image: registry.k8s.io/pause:3.9
              resources:
                requests:
                  cpu: '12'
                  memory: 98304Mi
                  nvidia.com/gpu: '2'
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - key: kubernetes.io/hostname
                      operator: In
                      values:
                      - h100-4
PLANNER_WAVE_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then wait_wave podmigrationjob/planner-b37c1deecf40-w2-1-finetune-2; fi

echo 'wave 3/6: 1 move(s)' >&2
"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<'PLANNER_WAVE_EOF'
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata:
  name: planner-b37c1deecf40-w3-1-finetune-4
  labels:
    planner.io/plan: b37c1deecf40
    planner.io/wave: '3'
  annotations:
    planner.io/from: h100-8
    planner.io/to: h100-3
spec:
  mode: ReservationFirst
  ttl: 30m
  podRef:
    kind: Pod
    apiVersion: v1
    namespace: research
    name: finetune-4
  reservationOptions:
    template:
      spec:
        template:
          spec:
            containers:
            - name: reserve
              image: registry.k8s.io/pause:3.9
              resources:
                requests:
                  cpu: '12'
                  memory: 98304Mi
                  nvidia.com/gpu: '2'
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - key: kubernetes.io/hostname
                      operator: In
                      values:
                      - h100-3
PLANNER_WAVE_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then wait_wave podmigrationjob/planner-b37c1deecf40-w3-1-finetune-4; fi

echo 'wave 4/6: 1 move(s)' >&2
"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<'PLANNER_WAVE_EOF'
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata:
  name: planner-b37c1deecf40-w4-1-llm-serve-7d9f8-0
  labels:
    planner.io/plan: b37c1deecf40
    planner.io/wave: '4'
  annotations:
    planner.io/from: l40s-0
    planner.io/to: l40s-1
spec:
  mode: ReservationFirst
  ttl: 30m
  podRef:
    kind: Pod
    apiVersion: v1
    namespace: serving
    name: llm-serve-7d9f8-0
  reservationOptions:
    template:
      spec:
        template:
          spec:
            containers:
            - name: reserve
              image: registry.k8s.io/pause:3.9
              resources:
                requests:
                  cpu: '8'
                  memory: 65536Mi
                  nvidia.com/gpu: '1'
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - key: kubernetes.io/hostname
                      operator: In
                      values:
                      - l40s-1
            tolerations:
            - key: dedicated
              operator: Equal
              value: inference
              effect: NoSchedule
PLANNER_WAVE_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then wait_wave podmigrationjob/planner-b37c1deecf40-w4-1-llm-serve-7d9f8-0; fi

echo 'wave 5/6: 1 move(s)' >&2
"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<'PLANNER_WAVE_EOF'
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata:
  name: planner-b37c1deecf40-w5-1-llm-serve-7d9f8-2
  labels:
    planner.io/plan: b37c1deecf40
    planner.io/wave: '5'
  annotations:
    planner.io/from: h100-5
    planner.io/to: h100-4
spec:
  mode: ReservationFirst
  ttl: 30m
  podRef:
    kind: Pod
    apiVersion: v1
    namespace: serving
    name: llm-serve-7d9f8-2
  reservationOptions:
    template:
      spec:
        template:
          spec:
            containers:
            - name: reserve
              image: registry.k8s.io/pause:3.9
              resources:
                requests:
                  cpu: '8'
                  memory: 65536Mi
                  nvidia.com/gpu: '1'
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - key: kubernetes.io/hostname
                      operator: In
                      values:
                      - h100-4
            tolerations:
            - key: dedicated
              operator: Equal
              value: inference
              effect: NoSchedule
PLANNER_WAVE_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then wait_wave podmigrationjob/planner-b37c1deecf40-w5-1-llm-serve-7d9f8-2; fi

echo 'wave 6/6: 1 move(s)' >&2
"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<'PLANNER_WAVE_EOF'
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodMigrationJob
metadata:
  name: planner-b37c1deecf40-w6-1-llm-serve-7d9f8-3
  labels:
    planner.io/plan: b37c1deecf40
    planner.io/wave: '6'
  annotations:
    planner.io/from: h100-6
    planner.io/to: h100-7
spec:
  mode: ReservationFirst
  ttl: 30m
  podRef:
    kind: Pod
    apiVersion: v1
    namespace: serving
    name: llm-serve-7d9f8-3
  reservationOptions:
    template:
      spec:
        template:
          spec:
            containers:
            - name: reserve
              image: registry.k8s.io/pause:3.9
              resources:
                requests:
                  cpu: '8'
                  memory: 65536Mi
                  nvidia.com/gpu: '1'
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - key: kubernetes.io/hostname
                      operator: In
                      values:
                      - h100-7
            tolerations:
            - key: dedicated
              operator: Equal
              value: inference
              effect: NoSchedule
PLANNER_WAVE_EOF
if [[ "${DRY_RUN:-0}" != "1" ]]; then wait_wave podmigrationjob/planner-b37c1deecf40-w6-1-llm-serve-7d9f8-3; fi

