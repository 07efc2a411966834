"""``planner explain``'s tables: the constraints a pending job was checked against with their numbers,
the reason and the remedy; or, for a node a plan left busy, each pod with the rule that kept it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from planner.render.table import fmt


def _numbers(numbers: dict[str, Any]) -> str:
    parts = []
    for key, value in numbers.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k.replace('_', ' ')} {fmt(v)}" for k, v in value.items() if v)
            parts.append(f"{key.replace('_', ' ')}: {inner or 'none'}")
        elif isinstance(value, list):
            parts.append(f"{key.replace('_', ' ')}: {', '.join(map(str, value))}")
        elif value is not None:
            parts.append(f"{key.replace('_', ' ')} {fmt(value)}")
    return "; ".join(parts)


def _kind(reason: dict[str, Any]) -> str:
    return "proof" if reason["proof"] else "heuristic's finding"


def render_explanation(console: Console, result: dict[str, Any]) -> None:
    """The explanation of a job or pod (``explain_job``) or of a node (``explain_node``)."""
    if "node" in result:
        render_node(console, result)
        return
    shape = result["pod_shape"]
    title = f"Job {result['job']}: {result['pods_needed']:,} pod(s) of {fmt(shape['gpus'])} GPU(s), {fmt(shape['cpus'])} CPUs, {fmt(shape['memory_gib'])} GiB"
    if result.get("topology"):
        title += f", {result['topology']}"
    table = Table(title=title)
    for column in ("check", "stops it now", "numbers"):
        table.add_column(column, justify="left")
    for check in result["checks"]:
        table.add_row(check["check"], fmt(check["holds"]) + (f" ({check['code']})" if check["holds"] else ""), _numbers(check["numbers"]))
    console.print(table)
    reason, remedy = result["reason"], result["remedy"]
    console.print(f"reason: {reason['code']} ({_kind(reason)}): {reason['meaning']}")
    if reason.get("detail"):
        console.print(f"  {reason['detail']}")
    console.print(f"remedy: {remedy['code']} ({_kind(remedy)}): {remedy['meaning']}")
    if remedy["numbers"] and remedy["code"] in ("make_room", "budget", "disruption"):
        n = remedy["numbers"]
        console.print(f"  plan: {n['moves']:,} move(s), {fmt(n['gpus_moved'])} GPU(s) moved, {n['waves']:,} wave(s); starts on {', '.join(n['nodes'])}")
    if remedy["code"] == "time_limit":
        n = remedy["numbers"]
        console.print(f"  after {n['elapsed_s']:g} s of {n['time_limit_s']:g} s: not tried: {', '.join(remedy['skipped'])}")
    if remedy.get("budgets"):
        console.print(f"  budgets: {', '.join(f'{k} {v}' for k, v in remedy['budgets'].items())}")
    for key in ("detail", "within_budgets"):
        if remedy.get(key):
            console.print(f"  {key.replace('_', ' ')}: {remedy[key]}")
    if remedy.get("disruption_budgets_lifted"):
        console.print(f"  and the disruption budgets of {remedy['jobs_with_budgets']:,} job(s) lifted too")


def render_node(console: Console, result: dict[str, Any]) -> None:
    reason = result["reason"]
    console.print(
        f"node {result['node']}: {result['pods_before']:,} pod(s) before the plan, {result['pods_after']:,} after; {reason['code']}: {reason['meaning']}"
    )
    if not result["pods"]:
        return
    table = Table(title="Pods the plan left on the node")
    for column in ("pod", "job", "GPUs", "reason", "kind", "numbers / detail"):
        table.add_column(column, justify="right" if column == "GPUs" else "left")
    for pod in result["pods"]:
        detail = pod.get("detail") or _numbers(pod.get("numbers", {}))
        if pod.get("room_on"):
            detail += f"; room on {', '.join(pod['room_on'])}"
        table.add_row(pod["pod"], pod["job"] or "", fmt(pod["gpus"]), pod["code"], "proof" if pod["proof"] else "heuristic's finding", detail)
    console.print(table)
