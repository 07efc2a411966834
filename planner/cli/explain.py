"""``planner explain``: why a pending job or pod waits (the binding constraint in numbers and the cheapest
remedy the planner computes), or why a plan left a node busy (per pod, the rule that kept it)."""

from __future__ import annotations

import json
from enum import Enum

import typer

from planner.cli.common import (
    InputKind,
    emit,
    fail,
    guarded,
    import_config_option,
    input_option,
    load_input,
    stdout_console,
)
from planner.cli.inputs import read_plan
from planner.engine.common import MAX_TIME_LIMIT_S
from planner.engine.explain import ExplainOptions, explain_job, explain_node, explain_pod
from planner.render.explain import render_explanation


class ExplainFormat(str, Enum):
    json = "json"
    table = "table"


@guarded
def explain(
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    job: str = typer.Option(None, "--job", help="A pending job to explain."),
    pod: str = typer.Option(None, "--pod", help="A pending pod to explain (its job's explanation when it has one)."),
    node: str = typer.Option(None, "--node", help="A node a plan left busy (with --plan)."),
    plan: str = typer.Option(None, "--plan", help="The defrag plan (JSON) that left --node busy."),
    max_moves: int = typer.Option(None, "--max-moves", min=0, help="Move budget of the remedy's make-room plan."),
    max_moves_per_node: int = typer.Option(None, "--max-moves-per-node", min=0, help="Moves touching any one node in the remedy's plan."),
    same_asw: bool = typer.Option(False, "--same-asw", help="The remedy's pods move only within their access switch."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the make-room heuristic."),
    time_limit: float = typer.Option(
        None, "--time-limit", help="Seconds for the remedy: its make-room plans start only before they pass; the ones left are named (remedy time_limit)."
    ),
    output_format: ExplainFormat = typer.Option(ExplainFormat.table, "--output", "-o", help="table (the default) or json."),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Why a pending job or pod waits, and what would start it; or why a plan left a node busy."""
    given = [flag for flag, value in (("--job", job), ("--pod", pod), ("--node", node)) if value is not None]
    if len(given) != 1:
        fail([f"give exactly one of --job, --pod or --node (got {', '.join(given) or 'none'})"])
    if node is not None and plan is None:
        fail(["--node: give the plan that left it busy with --plan PLAN.json (planner defrag SNAP --out PLAN.json)"])
    if plan is not None and node is None:
        fail(["--plan: explains a node the plan left busy; give --node NAME"])
    if node is not None and (max_moves is not None or max_moves_per_node is not None or same_asw or time_limit is not None):
        fail(["--max-moves, --max-moves-per-node, --same-asw, --time-limit: options of a job's remedy; a node is explained with the plan's own options"])
    if time_limit is not None and not 0 < time_limit <= MAX_TIME_LIMIT_S:
        fail([f"--time-limit: must be above 0 and at most {MAX_TIME_LIMIT_S:g} seconds, got {time_limit:g}"])
    options = ExplainOptions(max_moves=max_moves, max_moves_per_node=max_moves_per_node, same_asw=same_asw, seed=seed, time_limit_s=time_limit)
    cluster = load_input(snapshot, source, import_config)
    if job is not None:
        result = explain_job(cluster, job, options)
    elif pod is not None:
        result = explain_pod(cluster, pod, options)
    else:
        result = explain_node(cluster, node, read_plan(plan))
    if output_format == ExplainFormat.json:
        emit(json.dumps(result, indent=2) + "\n", "-")
    else:
        with stdout_console() as console:
            render_explanation(console, result)
