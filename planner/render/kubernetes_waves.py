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
  pod of the wave still exists with the UID the plan recorded on the node it moves from (one ``kubectl
  get pods`` per namespace of the wave), stops with exit 3 naming each pod that is not (deleted,
  replaced: another UID, moved: another node) and the abort command, and otherwise applies the wave's
  PodMigrationJobs and waits until all of them have succeeded (polling ``status.phase``;
  ``WAIT_TIMEOUT_S``, default 30 minutes per wave), stopping at the first that fails or is aborted.
  ``DRY_RUN=1`` checks the pods, passes ``--dry-run=server`` (nothing is created, the API server
  validates) and waits for nothing. A pod the plan moves a second time is a new pod by then (a
  migration recreates it), so only a pod's first move is checked. koordinator does not check
  ``spec.podRef.uid`` itself (its controller overwrites it with the UID it finds), hence the check here.
  Plain evictions cannot be make-before-break, so the script needs koordinator's controller; it says
  so in its header.

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
from planner.render.kubernetes import WAIT_TIMEOUT_S, kubernetes_name, namespace_of, plan_digest, pod_migration_jobs

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


def podmigrationjob_yaml(plan: DefragPlan, cluster: Cluster, **options: Any) -> str:
    """The PodMigrationJobs as one multi-document YAML stream under a header saying how to apply it."""
    objects = pod_migration_jobs(plan, cluster, **options)
    if not objects:
        return "# the plan has no moves: nothing to apply\n"
    digest = plan_digest(plan)
    applies = [f"kubectl apply -f plan.yaml -l planner.io/wave={w}" for w in range(1, len(plan.waves) + 1)]
    header = "".join(f"# {line}".rstrip() + "\n" for line in _how_to_apply(digest, len(objects), applies))
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


CHECK_FUNCTIONS = r"""STALE=""
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

stop_if_stale() {  # WAVE WAVES: stop before wave WAVE when a pod of it is not as the plan's snapshot saw it
  [[ -z "$STALE" ]] && return 0
  {
    echo "wave $1/$2 not applied: pods of this wave are not as the plan's snapshot saw them:"
    printf '%s' "$STALE"
    if (($1 > 1)); then echo "waves 1 to $(($1 - 1)) are done${DRY_RUN:+ (DRY_RUN: validated only)}."; else echo "nothing was applied."; fi
    echo "Plan again from a fresh snapshot. To remove this plan's PodMigrationJobs (stopping any still running):"
    echo "  kubectl delete podmigrationjobs -l planner.io/plan=$PLAN"
  } >&2
  exit EXIT_STALE
}
""".replace("EXIT_STALE", str(EXIT_STALE))

WAIT_FUNCTION = r"""wait_wave() {  # poll until every job of the wave has succeeded; stop at the first that fails
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
"""


def _checks(plan: DefragPlan, cluster: Cluster) -> list[list[str]]:
    """Per wave, one ``check_pods`` line per namespace (sorted) for the pods the wave moves for the
    first time: namespace, then name, UID ('' when unknown) and source node per pod, each quoted."""
    pods = {p.name: p for p in cluster.pods}
    seen: set[str] = set()
    waves = []
    for wave in plan.waves:
        by_namespace: dict[str, list[str]] = {}
        for move in wave:
            if move.pod in seen:
                continue
            seen.add(move.pod)
            pod = pods[move.pod]
            by_namespace.setdefault(namespace_of(pod), []).extend([kubernetes_name(pod), move.uid or "", move.from_])
        waves.append(["check_pods " + " ".join(map(shlex.quote, [ns, *fields])) for ns, fields in sorted(by_namespace.items())])
    return waves


def kubectl_script(plan: DefragPlan, cluster: Cluster, **options: Any) -> str:
    """A bash script that checks, applies and waits for the plan wave by wave (module docstring)."""
    objects = pod_migration_jobs(plan, cluster, **options)
    digest = plan_digest(plan)
    lines = [
        "#!/usr/bin/env bash",
        f"# Defrag plan {digest}: {sum(len(w) for w in plan.waves)} move(s) in {len(plan.waves)} wave(s), written by `planner`.",
        "# Each move is a koordinator PodMigrationJob (mode ReservationFirst: the new pod starts on the",
        "# planned node before the old one stops). This needs koordinator's migration controller; plain",
        "# evictions would stop the old pod first and let the scheduler pick the node.",
        "# Before each wave the script checks that the wave's pods still exist with the UID the plan recorded",
        f"# on the node they move from, and stops (exit {EXIT_STALE}) naming each pod that is not.",
        "# Usage: bash plan.sh            apply wave by wave, waiting for each wave to succeed",
        "#        DRY_RUN=1 bash plan.sh  check the pods and validate every object on the API server (--dry-run=server), create nothing",
        f"# Abort: {abort_command(digest)}",
        "set -euo pipefail",
        'KUBECTL="${KUBECTL:-kubectl}"',
        f"PLAN={shlex.quote(digest)}",
        "DRY=()",
        'if [[ "${DRY_RUN:-0}" == "1" ]]; then DRY=(--dry-run=server); else DRY_RUN=""; fi',
        f'WAIT_TIMEOUT_S="${{WAIT_TIMEOUT_S:-{WAIT_TIMEOUT_S}}}"',
        "",
        WAIT_FUNCTION,
        CHECK_FUNCTIONS,
    ]
    by_wave = {int(wave[0]["metadata"]["labels"]["planner.io/wave"]): wave for wave in _waves(objects)}
    total = len(plan.waves)
    for w, checks in enumerate(_checks(plan, cluster), start=1):
        members = by_wave.get(w)
        if not members:
            continue
        names = " ".join(shlex.quote(f"podmigrationjob/{o['metadata']['name']}") for o in members)
        lines += [
            f"echo 'wave {w}/{total}: {len(members)} move(s)' >&2",
            'STALE=""',
            *checks,
            f"stop_if_stale {w} {total}",
            '"$KUBECTL" apply ${DRY[@]+"${DRY[@]}"} -f - <<\'PLANNER_WAVE_EOF\'',
            _yaml_stream(members).rstrip("\n"),
            "PLANNER_WAVE_EOF",
            f'if [[ -z "$DRY_RUN" ]]; then wait_wave {names}; fi',
            "",
        ]
    if not objects:
        lines.append("echo 'the plan has no moves: nothing to do' >&2")
    return "\n".join(lines) + "\n"
