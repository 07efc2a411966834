"""Plan summaries for the terminal (``-o table`` and the first part of ``-o wide``): a defrag plan, a
heuristic-against-exact comparison, the jobs a make-room plan started, a preempt plan and an
allocation plan, printed as rich tables on the console given (the command line owns the console)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from planner.plans import (
    AllocationComparison,
    AllocationPlan,
    DefragComparison,
    DefragPlan,
    PreemptComparison,
    PreemptPlan,
)
from planner.render.table import fmt, signed

DEFRAG_REPORT_EXTRAS = (
    "jobs_placed",
    "jobs_unplaced",
    "lexicographic_optimal",
    "moves_saved",
    "moves_bound",
    "move_minimal",
    "solver_status",
    "bound_error",
    "auto_choice",
    "fallback",
    "dropped_moves",
    "pods_held",
    "move_once_rerouted",
    "move_once_dropped",
    "lost_gpu_s",
    "reason",
)
"""Fields of a defrag report's extras shown in its summary, in this order, when present."""

DEFRAG_INTERNALS = (
    "moves_before_trim",
    "units",
    "ipc_objective",
    "start",
    "start_objective",
    "repack_ipc_objective",
    "formulation",
    "rounds_run",
    "partitions",
    "candidates_tried",
    "lns_rounds",
    "lns_improved",
    "lns_gained_empty_nodes",
    "waves_before_wave_limits",
)
"""How the planner got there (partitions, candidates tried, rounds): shown with ``-o wide`` only."""

EXTRA_LABELS = {"lost_gpu_s": "lost work (GPU-seconds since the last checkpoint)", "dropped_moves": "moves dropped"}
"""Row labels where the field's name does not say its unit."""

MEASURES = (
    ("empty_nodes", "empty nodes"),
    ("full_nodes", "full nodes (every GPU allocated)"),
    ("nodes_with_slack", "nodes with slack (neither empty nor full)"),
    ("gfr", "GFR: share of all nodes (CPU-only too) neither empty nor full"),
    ("gar", "GAR: allocated GPUs / GPUs"),
    ("allocated_gpus", "allocated GPUs"),
)
"""The before-and-after table's rows: the measure and its definition (``docs/reference/metrics.md``)."""


def render_summary(console: Console, plan: Any, wide: bool = False) -> None:
    """The summary of any plan or comparison the planning commands return (``wide``: with the
    planner's internals, such as partitions, candidates tried and rounds)."""
    if isinstance(plan, DefragComparison):
        render_defrag_comparison(console, plan)
    elif isinstance(plan, DefragPlan):
        render_defrag(console, plan, wide)
    elif isinstance(plan, (PreemptPlan, PreemptComparison)):
        render_preempt(console, plan)
    elif isinstance(plan, (AllocationPlan, AllocationComparison)):
        render_allocation(console, plan)
    else:
        raise TypeError(f"no summary for a {type(plan).__name__}")


def bound_label(room: dict[str, Any] | None) -> str:
    """What a defrag report's ``bound`` bounds: empty nodes, or for objective room the count of its first
    shape within one domain (with weights, the weighted sum of the counts)."""
    if room is None:
        return "bound (empty nodes)"
    if "weights" in room:
        return "bound (weighted sum of the room counts)"
    first = room["shapes"][0]
    return f"bound ({first['shape']} requests within one {first['level']})"


def render_room(console: Console, room: dict[str, Any]) -> None:
    """Objective room: per shape the requests that fit within one domain before and after the plan, the
    bound no plan passes and, for an exact plan, the most any plan reaches with the larger shapes at
    theirs (proven: the count itself, or ``<= bound`` while unproven); a warning when the plan adds no room."""
    shapes = room["shapes"]
    proven = any("lexicographic_bound" in shape for shape in shapes)
    table = Table(title=f"Room for large requests (within one {room['level']})")
    columns = ("shape", "before", "after", "change", "bound", *(("proven most",) if proven else ()))
    for column in columns:
        table.add_column(column, justify="left" if column == "shape" else "right")
    for shape in shapes:
        cells = [fmt(shape["before"]), fmt(shape["after"]), signed(shape["after"] - shape["before"]), fmt(shape["bound"])]
        if proven:
            most = shape.get("lexicographic_bound")
            cells.append("" if most is None else fmt(most) if most == shape["after"] else f"<= {fmt(most)}")
        table.add_row(escape(str(shape["shape"])), *cells)
    console.print(table)
    if all(shape["after"] <= shape["before"] for shape in shapes):
        at_bound = all(shape["before"] >= shape["bound"] for shape in shapes)
        console.print(
            "warning: the plan adds no room for "
            + escape(", ".join(str(shape["shape"]) for shape in shapes))
            + (": every count is at its upper bound" if at_bound else "")
        )


def render_defrag_comparison(console: Console, comparison: DefragComparison) -> None:
    h, e, gap = comparison.heuristic.report, comparison.exact.report, comparison.gap
    assert h is not None and e is not None  # the engine reports every plan of a comparison
    if "exact_counts" in gap:  # objective room: requests within one switch per shape, not empty nodes
        render_room_comparison(console, comparison)
        return
    table = Table(title="Heuristic (IPC) against exact")
    for column in ("", "heuristic", "exact"):
        table.add_column(column, justify="left" if not column else "right")
    rows = [
        ("empty nodes", h.objective, e.objective),
        ("moves", h.moves, e.moves),
        ("GPUs moved", h.gpus_moved, e.gpus_moved),
        ("waves", len(comparison.heuristic.waves), len(comparison.exact.waves)),
        ("status", h.status, e.status),
        ("solver", "", e.solver),
        ("bound (empty nodes)", "", e.bound),
        ("wall s", h.wall_s, e.wall_s),
    ]
    for label, a, b in rows:
        table.add_row(label, fmt(a if a is not None else ""), fmt(b if b is not None else ""))
    console.print(table)
    if "exact_jobs_placed" in gap:  # make room: jobs started and moves, not empty nodes
        saved = gap["moves_saved"]
        console.print(
            f"make room: jobs started heuristic {gap['heuristic_jobs_placed']}, exact {gap['exact_jobs_placed']}; "
            + (f"exact saves {fmt(saved)} move(s)" if saved is not None else "moves not comparable (different jobs started)")
            + f"; exact {gap['exact_status']}"
            + (", restricted neighbourhood" + (" (optimal within it)" if gap["optimal_within_neighbourhood"] else "") if gap["restricted"] else "")
        )
        for label, plan in (("heuristic", comparison.heuristic), ("exact", comparison.exact)):
            console.print(f"{label}:")
            render_make_room_jobs(console, plan)
        return
    console.print(f"gap: exact empties {fmt(gap['gap_empty_nodes'])} more nodes than IPC; IPC is {fmt(gap['heuristic_to_bound'])} below the proven bound")
    render_limits(console, None if h is None else (h.model_extra or {}).get("limits"))  # both plans were made under the same options


def render_room_comparison(console: Console, comparison: DefragComparison) -> None:
    """Objective room: per shape the requests each plan leaves room for and the bound, then moves and walls."""
    h, e, gap = comparison.heuristic.report, comparison.exact.report, comparison.gap
    assert h is not None and e is not None and "exact_counts" in gap
    table = Table(title="Room heuristic against exact")
    for column in ("", "heuristic", "exact", "bound"):
        table.add_column(column, justify="left" if not column else "right")
    for shape, by_heuristic, by_exact, bound in zip(gap["shapes"], gap["heuristic_counts"], gap["exact_counts"], gap["bounds"]):
        table.add_row(escape(f"requests {shape}"), fmt(by_heuristic), fmt(by_exact), fmt(bound))
    for label, a, b in (
        ("moves", h.moves, e.moves),
        ("GPUs moved", h.gpus_moved, e.gpus_moved),
        ("status", h.status, e.status),
        ("wall s", h.wall_s, e.wall_s),
    ):
        table.add_row(label, fmt(a if a is not None else ""), fmt(b if b is not None else ""), "")
    console.print(table)
    render_limits(console, (h.model_extra or {}).get("limits"))


def render_limits(console: Console, limits: dict[str, dict[str, Any]] | None) -> None:
    """The report's ``limits``: each limit in force, its value and where it came from (a default says
    how it was resolved, so a reader sees the budget a plan was made under without the options)."""
    if not limits:
        return
    table = Table(title="Limits in force")
    for column in ("limit", "value", "source"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for name, entry in limits.items():
        value = entry["value"]
        shown = "none" if value is None else ", ".join(value) if isinstance(value, list) else fmt(value)
        source = entry["source"] + (f": {entry['rule']}" if "rule" in entry else "")
        table.add_row(name.replace("_", " "), escape(shown), escape(source))
    console.print(table)


def render_make_room_jobs(console: Console, plan: DefragPlan) -> None:
    if plan.metrics is None or not plan.metrics.per_job:
        return
    jobs = Table(title="Make room: named jobs")
    for column in ("job", "placed", "moves", "GPUs moved", "nodes / reason"):
        jobs.add_column(column, justify="left" if column in ("job", "nodes / reason") else "right")
    for name, job in plan.metrics.per_job.items():
        where = ", ".join(job["nodes"]) if job["placed"] else job["reason"]
        jobs.add_row(name, fmt(job["placed"]), fmt(job.get("moves", "")), fmt(job.get("gpus_moved", "")), where)
    console.print(jobs)


def render_defrag(console: Console, plan: Any, wide: bool = False) -> None:  # a DefragPlan with its report
    report = plan.report
    head = Table(title=f"Defrag plan ({report.method}, seed {report.seed}, {report.wall_s:.2f} s)")
    head.add_column("")
    head.add_column("value", justify="right")
    for label, value in (
        ("moves", report.moves),
        ("GPUs moved", report.gpus_moved),
        ("waves", len(plan.waves)),
        ("vacated nodes", len(plan.vacated_nodes)),
    ):
        head.add_row(label, fmt(value))
    extra = report.model_extra or {}
    room = extra.get("room")
    if report.solver is not None or room is not None:  # a room plan has a bound whatever its method
        rows = (("solver", report.solver), ("status", report.status), (bound_label(room), report.bound), ("gap", report.gap))
        for label, value in rows[1:] if report.solver is None else rows:
            head.add_row(escape(label), fmt(value))
    for key in DEFRAG_REPORT_EXTRAS + (DEFRAG_INTERNALS if wide else ()):
        if key in extra:
            head.add_row(EXTRA_LABELS.get(key, key.replace("_", " ")), fmt(extra[key]))
    console.print(head)
    render_limits(console, extra.get("limits"))
    render_make_room_jobs(console, plan)
    if room is not None:
        render_room(console, room)
    before, after = plan.metrics.before, plan.metrics.after
    table = Table(title="Cluster before and after")
    for column in ("measure", "before", "after", "change"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for key, label in MEASURES:
        change = after[key] - before[key]
        table.add_row(label, fmt(before[key]), fmt(after[key]), signed(change))
    if before["nodes_with_slack"]:
        cut = 1 - after["nodes_with_slack"] / before["nodes_with_slack"]
        table.add_row("nodes with slack cut", "", "", f"{cut:.1%}")
    large_before, large_after = before.get("large_requests", {}), after.get("large_requests", {})
    for shape, counts in large_before.items():
        for key, where in (("across_switches", "any switches"), ("within_one_switch", "one switch")):
            b = counts[key]
            a = large_after.get(shape, {}).get(key, b)
            table.add_row(f"{shape} requests that fit ({where})", fmt(b), fmt(a), signed(a - b))
    console.print(table)
    gained = any(large_after.get(s, {}).get(k, 0) > c[k] for s, c in large_before.items() for k in ("across_switches", "within_one_switch"))
    room_objective = "room" in (getattr(plan.report, "model_extra", None) or {})
    hint = "" if room_objective else "; `--objective room` plans for them"
    if plan.vacated_nodes and large_before and not gained and not room_objective:  # a room plan's own table says whether it added room
        console.print(
            f"warning: the plan vacates {len(plan.vacated_nodes):,} node(s) but adds no room for a large request "
            f"({', '.join(large_before)}): no more of them fit after it, across switches or within one{hint}"
        )
    lost = [
        f"{shape} {c['within_one_switch']} -> {large_after[shape]['within_one_switch']}"
        for shape, c in large_before.items()
        if large_after.get(shape, {}).get("within_one_switch", c["within_one_switch"]) < c["within_one_switch"]
    ]
    if lost:
        console.print(f"warning: fewer large requests fit within one switch after the plan ({', '.join(lost)}){hint}")


def render_preempt(console: Console, plan: PreemptPlan | PreemptComparison) -> None:
    plans = [("heuristic", plan.heuristic), ("exact", plan.exact)] if isinstance(plan, PreemptComparison) else [("plan", plan)]
    for title, one in plans:
        report = one.report
        assert report is not None
        head = f"{title}: {report.method} {report.status}, lost work {fmt(float(one.metrics.get('lost_gpu_s', 0)))} GPU-s"
        if report.bound is not None:
            head += f", bound {fmt(float(report.bound))} GPU-s, gap {fmt(report.gap)}"
        console.print(head)
        reason = getattr(report, "reason", None)
        if reason:
            console.print(f"  reason: {reason}")
        title = f"reactivate {one.reactivate}" if one.reactivate else f"job {one.job}: placements"
        table = Table("pod", "node", "devices", title=title)
        for p in one.placements:
            table.add_row(p.pod, p.node, "" if p.gpu_indexes is None else ",".join(map(str, p.gpu_indexes)))
        console.print(table)
        victims = Table("victim", "node", "job", "lost GPU-s", title="victims")
        for v in one.victims:
            victims.add_row(v.pod, v.node, v.job or "", fmt(float(v.lost_gpu_s)))
        console.print(victims)
        console.print(f"  surplus victims: {one.metrics.get('surplus_victims', 0)}")
        render_large_requests(console, one.metrics.get("large_requests"))
    if isinstance(plan, PreemptComparison):
        console.print(f"cost ratio (heuristic / exact): {plan.gap.get('cost_ratio')}")


def render_allocation(console: Console, plan: AllocationPlan | AllocationComparison) -> None:
    plans = [("greedy", plan.heuristic), ("exact", plan.exact)] if isinstance(plan, AllocationComparison) else [("plan", plan)]
    for label, one in plans:
        report = one.report
        title = f"{label}: {report.method} {report.status}" if report else label
        table = Table("job", "pods", "asws", "min asws", "entropy", "nodes", "min nodes", "locality cost", title=title)
        for job, m in one.metrics.get("per_job", {}).items():
            table.add_row(
                job,
                fmt(m["pods"]),
                fmt(m["asws"]),
                fmt(m["min_asws"]),
                f"{m['entropy']:.3f}",
                fmt(m["nodes"]),
                fmt(m["min_nodes"]),
                fmt(float(m["locality_cost"])),
            )
        console.print(table)
        for item in one.unplaced:
            console.print(f"unplaced {item.job}: {item.reason}")
        render_large_requests(console, one.metrics.get("large_requests"))
    if isinstance(plan, AllocationComparison):
        g, e = plan.gap["greedy"], plan.gap["exact"]
        console.print(
            f"GPUs started: greedy {fmt(float(g['gpus']))}, exact {fmt(float(e['gpus']))}; switches: greedy {fmt(g['switches'])}, exact {fmt(e['switches'])} "
            f"(exact {plan.gap['exact_status']})"
        )


def render_large_requests(console: Console, large: dict[str, Any] | None) -> None:
    """A preempt or allocation plan's counts of large requests that fit, before and after it."""
    if not large:
        return
    counts = ", ".join(
        f"{shape} {fmt(b['within_one_switch'])} -> {fmt(large['after'][shape]['within_one_switch'])} within one switch "
        f"({fmt(b['across_switches'])} -> {fmt(large['after'][shape]['across_switches'])} across switches)"
        for shape, b in large["before"].items()
    )
    console.print(f"large requests that still fit, before -> after: {counts}")
