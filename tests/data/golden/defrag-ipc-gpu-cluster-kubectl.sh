#!/usr/bin/env bash
# Defrag plan b37c1deecf40: 6 move(s) in 6 wave(s), written by `planner`.
# Each move is a koordinator PodMigrationJob (mode ReservationFirst: the new pod starts on the
# planned node before the old one stops). This needs koordinator's migration controller; plain
# evictions would stop the old pod first and let the scheduler pick the node.
# Before each wave the script checks that the wave's pods still exist with the UID the plan recorded
# (or the snapshot had) on the node they move from, and stops (exit 3) naming each pod that is not.
# Usage: bash SCRIPT            apply wave by wave, waiting for each wave to succeed  (SCRIPT: this file)
#        DRY_RUN=1 bash SCRIPT  check the pods of every wave and validate every object on the API server
#        (--dry-run=server), create nothing; exit 3 listing every pod not as planned
# Abort: kubectl delete podmigrationjobs -l planner.io/plan=b37c1deecf40
set -euo pipefail
KUBECTL="${KUBECTL:-kubectl}"
PLAN=b37c1deecf40
DRY=()
if [[ "${DRY_RUN:-0}" == "1" ]]; then DRY=(--dry-run=server); else DRY_RUN=""; fi
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-1800}"

wait_wave() {  # WAVE WAVES, then JOB POD per move: poll until every job has succeeded; stop when one fails or time runs out
  local wave=$1 waves=$2 deadline=$((SECONDS + WAIT_TIMEOUT_S)) i j phase failed pending
  shift 2
  while :; do
    failed="" pending=""
    for ((i = 1; i < $#; i += 2)); do
      j=$((i + 1))
      phase=$("$KUBECTL" get "${!i}" -o jsonpath='{.status.phase}')
      case "$phase" in
        Succeeded) ;;
        Failed|Aborted) failed+="  $(printf '%q' "${!i}") (pod $(printf '%q' "${!j}")): $phase"$'\n' ;;
        *) pending+="  $(printf '%q' "${!i}") (pod $(printf '%q' "${!j}")): ${phase:-no phase yet}"$'\n' ;;
      esac
    done
    [[ -n "$failed" ]] && stop_wave "$wave" "$waves" "PodMigrationJobs failed; stopping before the next wave" "$failed$pending"
    [[ -z "$pending" ]] && return 0
    (( SECONDS < deadline )) || stop_wave "$wave" "$waves" "not finished after ${WAIT_TIMEOUT_S}s (WAIT_TIMEOUT_S); stopping before the next wave" "$pending"
    sleep "${POLL_S:-5}"
  done
}

stop_wave() {  # WAVE WAVES WHAT JOBS: the wave's jobs did not all succeed; exit 1 saying where the plan stands
  {
    echo "wave $1/$2: $3:"
    printf '%s' "$4"
    if (($1 > 1)); then echo "waves 1 to $(($1 - 1)) are done; wave $1's other jobs succeeded or are listed above."; fi
    abort_hint
  } >&2
  exit 1
}

STALE="" ALL_STALE=""
check_pods() {  # NAMESPACE, then NAME UID NODE per pod (UID empty: unknown): note each pod gone, replaced or elsewhere
  local namespace=$1 names=() i listed name uid node rest now_uid now_node
  shift
  for ((i = 1; i <= $#; i += 3)); do names+=("${!i}"); done
  listed=$("$KUBECTL" get pods "${names[@]}" -n "$namespace" --ignore-not-found --no-headers \
    -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,NODE:.spec.nodeName && echo .) \
    || { echo "cannot read the pods of namespace $(printf '%q' "$namespace"); stopping" >&2; exit 1; }
  listed=$'\n'$(printf '%s' "${listed%.}" | tr -s ' ' && echo .)  # one line per pod: name uid node
  listed=${listed%.}
  while (($# >= 3)); do
    name=$1 uid=$2 node=$3
    shift 3
    [[ -n "$uid" && "$listed" == *$'\n'"$name $uid $node"$'\n'* ]] && continue
    if [[ "$listed" != *$'\n'"$name "* ]]; then
      STALE+="  $(printf '%q/%q' "$namespace" "$name"): deleted (the plan moves it from $(printf '%q' "$node"))"$'\n'
      continue
    fi
    rest=${listed#*$'\n'"$name "}
    rest=${rest%%$'\n'*}
    now_uid=${rest%% *} now_node=${rest#* }
    if [[ -n "$uid" && "$now_uid" != "$uid" ]]; then
      STALE+="  $(printf '%q/%q' "$namespace" "$name"): replaced (UID now $(printf '%q' "$now_uid"), the plan's $(printf '%q' "$uid"))"$'\n'
    elif [[ "$now_node" != "$node" ]]; then
      STALE+="  $(printf '%q/%q' "$namespace" "$name"): moved (now on $(printf '%q' "$now_node"), the plan moves it from $(printf '%q' "$node"))"$'\n'
    fi
  done
}

abort_hint() {  # how to stop and remove this plan's PodMigrationJobs
  echo "To stop the jobs not finished and remove this plan's PodMigrationJobs (finished migrations stay where they moved):"
  echo "  kubectl delete podmigrationjobs -l planner.io/plan=$PLAN"
}

stop_if_stale() {  # WAVE WAVES: stop before wave WAVE when a pod of it is not as the plan's snapshot saw it (DRY_RUN: note it, skip the wave, go on)
  [[ -z "$STALE" ]] && return 0
  if [[ -n "$DRY_RUN" ]]; then ALL_STALE+="wave $1/$2:"$'\n'"$STALE"; return 1; fi
  {
    echo "wave $1/$2 not applied: pods of this wave are not as the plan's snapshot saw them:"
    printf '%s' "$STALE"
    if (($1 > 1)); then echo "waves 1 to $(($1 - 1)) are done."; else echo "nothing was applied."; fi
    echo "Plan again from a fresh snapshot."
    abort_hint
  } >&2
  exit 3
}

end_of_dry_run() {  # DRY_RUN, after every wave was checked and validated: every pod not as planned, in every wave
  [[ -n "$DRY_RUN" && -n "$ALL_STALE" ]] || return 0
  {
    echo "DRY_RUN: pods not as the plan's snapshot saw them (a real run stops before the first of these waves):"
    printf '%s' "$ALL_STALE"
    echo "Plan again from a fresh snapshot (the other waves' objects were validated; nothing was created)."
  } >&2
  exit 3
}

echo 'wave 1/6: 1 move(s)' >&2
STALE=""
check_pods research finetune-1 uid-research-finetune-1 h100-5
if stop_if_stale 1 6; then
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
    planner.io/pod-uid: uid-research-finetune-1
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
if [[ -z "$DRY_RUN" ]]; then wait_wave 1 6 podmigrationjob/planner-b37c1deecf40-w1-1-finetune-1 research/finetune-1; fi
fi

echo 'wave 2/6: 1 move(s)' >&2
STALE=""
check_pods research finetune-2 uid-research-finetune-2 h100-6
if stop_if_stale 2 6; then
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
    planner.io/pod-uid: uid-research-finetune-2
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
if [[ -z "$DRY_RUN" ]]; then wait_wave 2 6 podmigrationjob/planner-b37c1deecf40-w2-1-finetune-2 research/finetune-2; fi
fi

echo 'wave 3/6: 1 move(s)' >&2
STALE=""
check_pods research finetune-4 uid-research-finetune-4 h100-8
if stop_if_stale 3 6; then
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
    planner.io/pod-uid: uid-research-finetune-4
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
if [[ -z "$DRY_RUN" ]]; then wait_wave 3 6 podmigrationjob/planner-b37c1deecf40-w3-1-finetune-4 research/finetune-4; fi
fi

echo 'wave 4/6: 1 move(s)' >&2
STALE=""
check_pods serving llm-serve-7d9f8-0 uid-serving-llm-serve-7d9f8-0 l40s-0
if stop_if_stale 4 6; then
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
    planner.io/pod-uid: uid-serving-llm-serve-7d9f8-0
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
if [[ -z "$DRY_RUN" ]]; then wait_wave 4 6 podmigrationjob/planner-b37c1deecf40-w4-1-llm-serve-7d9f8-0 serving/llm-serve-7d9f8-0; fi
fi

echo 'wave 5/6: 1 move(s)' >&2
STALE=""
check_pods serving llm-serve-7d9f8-2 uid-serving-llm-serve-7d9f8-2 h100-5
if stop_if_stale 5 6; then
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
    planner.io/pod-uid: uid-serving-llm-serve-7d9f8-2
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
if [[ -z "$DRY_RUN" ]]; then wait_wave 5 6 podmigrationjob/planner-b37c1deecf40-w5-1-llm-serve-7d9f8-2 serving/llm-serve-7d9f8-2; fi
fi

echo 'wave 6/6: 1 move(s)' >&2
STALE=""
check_pods serving llm-serve-7d9f8-3 uid-serving-llm-serve-7d9f8-3 h100-6
if stop_if_stale 6 6; then
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
    planner.io/pod-uid: uid-serving-llm-serve-7d9f8-3
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
if [[ -z "$DRY_RUN" ]]; then wait_wave 6 6 podmigrationjob/planner-b37c1deecf40-w6-1-llm-serve-7d9f8-3 serving/llm-serve-7d9f8-3; fi
fi

end_of_dry_run
