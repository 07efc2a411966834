"""A defrag plan's PodMigrationJobs in wave order (issue 42, item 2): the ways ``render/kubernetes.py``'s
objects leave the planner.

* ``podmigrationjob_yaml``: one YAML stream, every document labelled ``planner.io/plan`` and
  ``planner.io/wave``, under a header that says how to apply it wave by wave (``kubectl apply -l
  planner.io/wave=N``, then wait for the wave's jobs to succeed). ``kubectl apply -f`` on the whole
  stream would start every wave at once and break make-before-break.
* ``wave_files``: one file per wave (``wave-1.yaml``, ...; numbers zero-padded when there are ten
  waves or more, so that a listing sorts in wave order) and ``index.txt``, the order and the commands.
  Built from the objects alone, so a client can split a stream the service rendered into the same
  files (``objects_of_stream``).
* ``kubectl_script``: the one-command safe path. A bash script that, before each wave, checks that every
  pod of the wave still exists with its UID on the node it moves from (one ``kubectl get pods`` per
  namespace of the wave), stops with exit 3 naming each pod that is not (deleted, replaced: another UID,
  moved: another node) and the abort command, and otherwise applies the wave's PodMigrationJobs and
  waits until all of them have succeeded (polling ``status.phase``; ``WAIT_TIMEOUT_S``, default 30
  minutes per wave). A job that fails or is aborted, or a wave not done in time, stops it (exit 1)
  naming the wave, each such job with its pod, and the abort command. ``DRY_RUN=1`` checks the pods of
  every wave, passes ``--dry-run=server`` (nothing is created, the API server validates) and waits for
  nothing; it lists every pod not as planned, wave by wave (a wave with one is not sent), and then exits
  3. The UID checked is the plan's, else the snapshot's (``move_uids``: a plan written without UIDs
  rendered against a snapshot with them); a pod with neither is checked by node only, which the script
  says in its header and when it starts. A pod the plan moves a second time is a new pod by then (a
  migration recreates it), so only a pod's first move is checked. koordinator does not check
  ``spec.podRef.uid`` itself (its controller overwrites it with the UID it finds), hence the check here.
  Plain evictions cannot be make-before-break, so the script needs koordinator's controller; it says
  so in its header.

The stream's and the script's headers name the file they are in when the caller knows it (``--out``),
else say ``FILE`` / ``SCRIPT`` ("this file"): ``file_word``.

Everything from the input reaches the shell as one single-quoted word (``shlex.quote``) or inside a
quoted heredoc of YAML (which quotes a string holding a newline), and the script prints names with
``printf %q``.
"""

from __future__ import annotations

import shlex
from typing import Any

from planner.bounded_input import DocumentError
from planner.cluster import Cluster, SnapshotError
from planner.plans import DefragPlan
from planner.render.kubernetes import WAIT_TIMEOUT_S, file_word, kubernetes_name, move_uids, namespace_of, plan_digest, pod_migration_jobs, snapshot_uids

INDEX = "index.txt"
EXIT_STALE = 3
"""The kubectl script's exit code when the cluster no longer matches the plan's snapshot."""


def _yaml_stream(objects: list[dict[str, Any]]) -> str:
    import yaml  # deferred: PyYAML, for the YAML outputs only

    return yaml.safe_dump_all(objects, sort_keys=False, width=10**6)


def _waves(objects: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The objects grouped by their ``planner.io/wave`` label, in wave order."""
    by_wave: dict[int, list[dict[str, Any]]] = {}
    for obj in objects:
        by_wave.setdefault(int(obj["metadata"]["labels"]["planner.io/wave"]), []).append(obj)
    return [by_wave[w] for w in sorted(by_wave)]


def abort_command(digest: str) -> str:
    return f"kubectl delete podmigrationjobs -l planner.io/plan={digest}"


def _wait_command(digest: str, wave: int) -> str:
    return f"kubectl wait podmigrationjobs -l planner.io/plan={digest},planner.io/wave={wave} --for=jsonpath='{{.status.phase}}'=Succeeded --timeout=30m"


def _how_to_apply(digest: str, moves: int, applies: list[str]) -> list[str]:
    """The instructions the stream's header and the index give: each wave's apply, then its wait."""
    waves = len(applies)
    lines = [
        f"Defrag plan {digest}: {moves} move(s) in {waves} wave(s) as koordinator PodMigrationJobs (mode ReservationFirst: the new",
        "pod starts on the planned node before the old one stops), written by `planner`. They need koordinator's migration controller.",
        "Apply them wave by wave, each wave only after every job of the one before has succeeded: applying everything",
        "at once starts every wave together and breaks make-before-break.",
        "",
    ]
    for w, apply in enumerate(applies, start=1):
        lines += [f"  {apply}", f"  {_wait_command(digest, w)}"]
    lines += [
        "",
        f"A job that fails (kubectl get podmigrationjobs -l planner.io/plan={digest}) stops the wave: do not go on.",
        f"Abort (stops the jobs not finished, removes them all): {abort_command(digest)}",
        "Safer: `planner render PLAN --snapshot SNAPSHOT -o kubectl` writes a script that does all this and, before each",
        "wave, checks that its pods are still where the snapshot had them, with the same UID.",
    ]
    return lines


def podmigrationjob_yaml(plan: DefragPlan, cluster: Cluster, file_name: str | None = None, **options: Any) -> str:
    """The PodMigrationJobs as one multi-document YAML stream under a header saying how to apply it
    (naming ``file_name``, the file the stream goes to, when known: ``file_word``)."""
    objects = pod_migration_jobs(plan, cluster, **options)
    if not objects:
        return "# the plan has no moves: nothing to apply\n"
    digest = plan_digest(plan)
    file = file_word(file_name, "FILE")
    applies = [f"kubectl apply -f {file} -l planner.io/wave={w}" for w in range(1, len(plan.waves) + 1)]
    lines = _how_to_apply(digest, len(objects), applies)
    if file == "FILE":
        lines.insert(lines.index("") + 1, "FILE below: this file, as you saved it.")
    header = "".join(f"# {line}".rstrip() + "\n" for line in lines)
    return header + _yaml_stream(objects)


def objects_of_stream(text: str, source: str = "the PodMigrationJob stream") -> list[dict[str, Any]]:
    """The PodMigrationJobs of a stream ``podmigrationjob_yaml`` wrote (the header is comments), read by
    the bounded YAML reader; ``SnapshotError`` naming ``source`` when it does not read or a document is
    not a PodMigrationJob labelled with its wave."""
    from planner.bounded_yaml import parse_yaml  # deferred: PyYAML, for the YAML outputs only

    try:
        documents = [doc for doc in parse_yaml(text, source) if doc]
    except DocumentError as err:
        raise SnapshotError(err.problems) from None
    problems = [f"{source}: document {i + 1}: not a PodMigrationJob labelled planner.io/wave" for i, doc in enumerate(documents) if not _has_wave(doc)]
    if problems:
        raise SnapshotError(problems)
    return documents


def _has_wave(document: Any) -> bool:
    """Whether ``document`` is a mapping whose ``metadata.labels`` give a ``planner.io/wave`` number."""
    metadata = document.get("metadata") if isinstance(document, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    wave = labels.get("planner.io/wave") if isinstance(labels, dict) else None
    return isinstance(wave, str) and wave.isascii() and wave.isdigit() and len(wave) <= 9


def wave_files(objects: list[dict[str, Any]]) -> dict[str, str]:
    """File name -> content: one YAML file per wave and ``index.txt`` (see the module docstring)."""
    waves = _waves(objects)
    if not waves:
        return {INDEX: "The plan has no moves: nothing to apply.\n"}
    digest = objects[0]["metadata"]["labels"]["planner.io/plan"]
    width = len(str(len(waves)))
    names = [f"wave-{w:0{width}d}.yaml" for w in range(1, len(waves) + 1)]
    files = {name: _yaml_stream(members) for name, members in zip(names, waves)}
    table = [f"  {name}  {len(members)} move(s)" for name, members in zip(names, waves)]
    index = ["Files, in the order to apply them:", *table, "", *_how_to_apply(digest, len(objects), [f"kubectl apply -f {name}" for name in names])]
    files[INDEX] = "\n".join(index).rstrip() + "\n"
    return files


CHECK_FUNCTIONS = r"""STALE="" ALL_STALE=""
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
  exit EXIT_STALE
}

end_of_dry_run() {  # DRY_RUN, after every wave was checked and validated: every pod not as planned, in every wave
  [[ -n "$DRY_RUN" && -n "$ALL_STALE" ]] || return 0
  {
    echo "DRY_RUN: pods not as the plan's snapshot saw them (a real run stops before the first of these waves):"
    printf '%s' "$ALL_STALE"
    echo "Plan again from a fresh snapshot (the other waves' objects were validated; nothing was created)."
  } >&2
  exit EXIT_STALE
}
""".replace("EXIT_STALE", str(EXIT_STALE))

WAIT_FUNCTION = r"""wait_wave() {  # WAVE WAVES, then JOB POD per move: poll until every job has succeeded; stop when one fails or time runs out
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
"""


def _checks(plan: DefragPlan, cluster: Cluster) -> list[list[str]]:
    """Per wave, one ``check_pods`` line per namespace (sorted) for the pods the wave moves for the
    first time: namespace, then name, UID (``move_uids``: the plan's, else the snapshot's; '' when
    neither has one) and source node per pod, each quoted."""
    pods = {p.name: p for p in cluster.pods}
    uids = move_uids(plan, cluster)
    seen: set[str] = set()
    waves = []
    for wave, wave_uids in zip(plan.waves, uids):
        by_namespace: dict[str, list[str]] = {}
        for move, uid in zip(wave, wave_uids):
            if move.pod in seen:
                continue
            seen.add(move.pod)
            pod = pods[move.pod]
            by_namespace.setdefault(namespace_of(pod), []).extend([kubernetes_name(pod), uid or "", move.from_])
        waves.append(["check_pods " + " ".join(map(shlex.quote, [ns, *fields])) for ns, fields in sorted(by_namespace.items())])
    return waves


def _no_uid_lines(plan: DefragPlan, cluster: Cluster) -> list[str]:
    """What the script says, in its header and when it starts, of pods with no UID in the plan or the
    snapshot (a snapshot not imported from Kubernetes): those are checked by their node only."""
    _, unknown = snapshot_uids(plan, cluster)
    if not unknown:
        return []
    warning = (
        f"warning: {len(unknown)} pod(s) of this plan have no UID in the plan or its snapshot (it was not imported from Kubernetes): "
        "the check before each wave compares their node only and cannot tell a replaced pod; render the plan against a snapshot "
        "from planner import kubernetes"
    )
    return [f"# {warning}", f"echo {shlex.quote(warning)} >&2"]


def kubectl_script(plan: DefragPlan, cluster: Cluster, file_name: str | None = None, **options: Any) -> str:
    """A bash script that checks, applies and waits for the plan wave by wave (module docstring); its
    header names ``file_name``, the file it goes to, when known (``file_word``)."""
    objects = pod_migration_jobs(plan, cluster, **options)
    digest = plan_digest(plan)
    script = file_word(file_name, "SCRIPT")
    no_uid = _no_uid_lines(plan, cluster)
    lines = [
        "#!/usr/bin/env bash",
        f"# Defrag plan {digest}: {sum(len(w) for w in plan.waves)} move(s) in {len(plan.waves)} wave(s), written by `planner`.",
        "# Each move is a koordinator PodMigrationJob (mode ReservationFirst: the new pod starts on the",
        "# planned node before the old one stops). This needs koordinator's migration controller; plain",
        "# evictions would stop the old pod first and let the scheduler pick the node.",
        "# Before each wave the script checks that the wave's pods still exist with the UID the plan recorded",
        f"# (or the snapshot had) on the node they move from, and stops (exit {EXIT_STALE}) naming each pod that is not.",
        f"# Usage: bash {script}            apply wave by wave, waiting for each wave to succeed" + ("  (SCRIPT: this file)" if script == "SCRIPT" else ""),
        f"#        DRY_RUN=1 bash {script}  check the pods of every wave and validate every object on the API server",
        f"#        (--dry-run=server), create nothing; exit {EXIT_STALE} listing every pod not as planned",
        f"# Abort: {abort_command(digest)}",
        *no_uid[:1],
        "set -euo pipefail",
        'KUBECTL="${KUBECTL:-kubectl}"',
        f"PLAN={shlex.quote(digest)}",
        "DRY=()",
        'if [[ "${DRY_RUN:-0}" == "1" ]]; then DRY=(--dry-run=server); else DRY_RUN=""; fi',
        f'WAIT_TIMEOUT_S="${{WAIT_TIMEOUT_S:-{WAIT_TIMEOUT_S}}}"',
        "",
        WAIT_FUNCTION,
        CHECK_FUNCTIONS,
        *no_uid[1:],
    ]
    by_wave = {int(wave[0]["metadata"]["labels"]["planner.io/wave"]): wave for wave in _waves(objects)}
    total = len(plan.waves)
    for w, checks in enumerate(_checks(plan, cluster), start=1):
        members = by_wave.get(w)
        if not members:
            continue
        jobs = [(f"podmigrationjob/{o['metadata']['name']}", f"{o['spec']['podRef']['namespace']}/{o['spec']['podRef']['name']}") for o in members]
        lines += [
            f"echo 'wave {w}/{total}: {len(members)} move(s)' >&2",
            'STALE=""',
            *checks,
            f"if stop_if_stale {w} {total}; then",
            '"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<\'PLANNER_WAVE_EOF\'',
            _yaml_stream(members).rstrip("\n"),
            "PLANNER_WAVE_EOF",
            f'if [[ -z "$DRY_RUN" ]]; then wait_wave {w} {total} {" ".join(shlex.quote(word) for job in jobs for word in job)}; fi',
            "fi",
            "",
        ]
    if objects:
        lines.append("end_of_dry_run")
    else:
        lines.append("echo 'the plan has no moves: nothing to do' >&2")
    return "\n".join(lines) + "\n"
