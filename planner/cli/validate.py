"""``planner validate``: a plan of any kind checked against its snapshot by the validator of its kind
(a defrag plan replayed wave by wave, and against the limits given)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer

from planner.cli.common import count_or_share, fail, guarded, names, options_of_flags, report_violations
from planner.cli.inputs import read_plan, read_snapshot
from planner.cluster import Cluster
from planner.engine.defrag.options import DefragOptions
from planner.plans import AllocationPlan, DefragPlan, PreemptPlan
from planner.validate import validate_plan
from planner.validate.preempt import surplus_units


@guarded
def validate_command(
    snapshot: str = typer.Argument(..., help="Snapshot JSON file (- for stdin)."),
    plan: str = typer.Argument(..., help="Plan JSON file (- for stdin)."),
    max_moves: int = typer.Option(None, "--max-moves", min=0, help="Also check the plan has at most this many moves."),
    max_moves_per_node: int = typer.Option(None, "--max-moves-per-node", min=0, help="Also check the moves touching each node."),
    same_asw: bool = typer.Option(False, "--same-asw", help="Also check that no move leaves its access switch."),
    max_moves_per_wave: int = typer.Option(None, "--max-moves-per-wave", min=1, help="Also check the moves of each wave."),
    max_nodes_per_wave: str = typer.Option(None, "--max-nodes-per-wave", help="N or P%: also check the nodes each wave touches."),
    max_moves_per_node_per_wave: int = typer.Option(None, "--max-moves-per-node-per-wave", min=1, help="Also check each node's moves per wave."),
    max_unavailable_per_job: int = typer.Option(None, "--max-unavailable-per-job", min=0, help="Also check each job's pods moving per wave."),
    max_moves_per_namespace: int = typer.Option(
        None, "--max-moves-per-namespace", min=1, help="Also check each namespace's moves per wave (pods without a namespace are in 'default')."
    ),
    only_namespace: str = typer.Option(None, "--only-namespace", help="NS[,NS...]: also check only these namespaces' pods move."),
    exclude_namespace: str = typer.Option(None, "--exclude-namespace", help="NS[,NS...]: also check these namespaces' pods stay."),
    move_once: bool = typer.Option(False, "--move-once", help="Also check that no pod moves twice."),
) -> None:
    """Replay a plan wave by wave (make-before-break) and list every violation; exit 1 if any.

    With --max-moves, --max-moves-per-node, --same-asw or a per-wave limit it also checks the limits the
    plan was asked for.
    """
    if snapshot == "-" and plan == "-":
        fail(["only one of SNAPSHOT and PLAN can be read from stdin (-)"])
    cluster = read_snapshot(snapshot, from_option=False)
    parsed = read_plan(plan)
    given_limits = {
        "max_moves": max_moves,
        "max_moves_per_node": max_moves_per_node,
        "same_asw": same_asw,
        "max_moves_per_wave": max_moves_per_wave,
        "max_nodes_per_wave": count_or_share(max_nodes_per_wave),
        "max_moves_per_node_per_wave": max_moves_per_node_per_wave,
        "max_unavailable_per_job": max_unavailable_per_job,
        "max_moves_per_namespace": max_moves_per_namespace,
        "only_namespaces": names(only_namespace),
        "exclude_namespaces": names(exclude_namespace),
        "move_once": move_once,
    }
    limited = any(value not in (None, False) for value in given_limits.values())
    verdict = VERDICTS[parsed.kind]
    limits = None
    if parsed.kind == "defrag":
        # only the limits given are checked: without --max-nodes-per-wave, no budget (not the planners' default)
        flags = {"move_once": False, "max_nodes_per_wave": "100%", **{k: v for k, v in given_limits.items() if v not in (None, False)}}
        limits = options_of_flags(DefragOptions, flags).limits(len(cluster.nodes))
    elif limited:
        fail([f"--max-moves, --max-moves-per-node, --same-asw and the per-wave limits apply to defrag plans; this is {verdict.plan}"])
    violations = validate_plan(cluster, parsed, limits)
    report_violations(violations, "" if violations else verdict.valid(cluster, parsed))


@dataclass(frozen=True)
class Verdict:
    """What ``planner validate`` says of a plan of one kind."""

    plan: str
    """The plan, as the refusal of the defrag-only flags names it."""
    valid: Callable[[Cluster, Any], str]
    """The line for a plan without violations."""


def _valid_defrag(cluster: Cluster, plan: DefragPlan) -> str:
    moves = sum(len(w) for w in plan.waves)
    return f"valid: {len(plan.waves)} wave(s), {moves} move(s), {len(plan.vacated_nodes)} vacated node(s)"


def _valid_preempt(cluster: Cluster, plan: PreemptPlan) -> str:
    surplus = surplus_units(cluster, plan) if plan.placements else 0
    return (
        f"valid: {len(plan.placements)} placement(s), {len(plan.victims)} victim(s), "
        f"{sum(v.lost_gpu_s for v in plan.victims):g} GPU-s lost, {surplus} surplus victim gang(s)"
    )


def _valid_allocation(cluster: Cluster, plan: AllocationPlan) -> str:
    return f"valid: {len(plan.placements)} placement(s), {len(plan.unplaced)} job(s) left pending"


VERDICTS: dict[str, Verdict] = {
    "defrag": Verdict("a defrag plan", _valid_defrag),
    "preempt": Verdict("a preempt plan", _valid_preempt),
    "allocate": Verdict("an allocation plan", _valid_allocation),
}
"""By plan kind: one for each kind of ``planner.kinds.KINDS`` (a test holds them equal); the plan is
checked by ``validate_plan``, the validator of its kind."""
