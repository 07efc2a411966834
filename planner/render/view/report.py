"""The cluster report page: the headline measures, the switch x model heatmap, the large requests that
fit (ASI Fig. 14), the node grid and the per-switch table of ``planner report``."""

from __future__ import annotations

from planner import metrics, rules
from planner.cluster import Cluster
from planner.metrics import Shape
from planner.render.view import charts
from planner.render.view.cells import switch_grid
from planner.render.view.page import Column, Page
from planner.render.view.sections import GAR, GFR, fig14_section, heatmap_section, phases
from planner.state import ClusterState

REPORT_STATES = ("full", "with slack", "empty", "cordoned")
REPORT_COLOURS = ("#0969da", "#bf8700", "#1a7f37", "#e5e7eb")


def report_view(page: Page, cluster: Cluster, shapes: list[Shape]) -> None:
    states = phases(("now", cluster))
    state = states[0][1]
    summary = metrics.summary(state)
    page.heading("Headline", anchor="headline")
    page.facts(
        [
            ("nodes", summary["nodes"], "nodes in the snapshot"),
            ("GPUs", summary["gpus"], "GPUs of all nodes"),
            ("empty nodes", summary["empty_nodes"], "nodes with no pod"),
            ("nodes with slack", summary["nodes_with_slack"], "nodes neither empty nor full"),
            ("GFR", summary["gfr"], GFR),
            ("GAR", summary["gar"], GAR),
            ("pending pods", summary["pending_pods"], "pods with no node"),
        ],
        "headline-facts",
    )
    heatmap_section(page, states, shapes, "The cluster as the snapshot has it.")
    fig14_section(page, states, shapes)
    page.heading("Nodes", anchor="nodes")
    busy = {p.node for p in cluster.pods if p.node is not None}
    full = _full_nodes(state)
    codes = [3 if not n.schedulable and n.name not in busy else 0 if n.name in full else 1 if n.name in busy else 2 for n in cluster.nodes]
    data, layout = charts.node_grid(switch_grid(cluster, codes), REPORT_STATES, REPORT_COLOURS)
    page.chart("node-grid", data, layout, "Each node under its switch: full, with slack (neither empty nor full), empty, or cordoned and empty.")
    page.heading("Access switches", anchor="switches")
    rows = [[r["asw"], r["gpu_model"], r["nodes"], r["gpus"], r["free_gpus"], r["free_whole_nodes"]] for r in metrics.per_asw(cluster)]
    page.table(
        "switches",
        [Column("switch"), Column("GPU models"), Column("nodes", True), Column("GPUs", True), Column("free GPUs", True), Column("free whole nodes", True)],
        rows,
        caption="Free GPUs: idle whole devices on schedulable nodes; free whole nodes: schedulable GPU nodes with no pod.",
    )


def _full_nodes(state: ClusterState) -> set[str]:
    """Nodes ``metrics.summary`` counts as full (GPUs allocated, or CPUs for a CPU-only node)."""
    assert state.cluster is not None
    cluster = state.cluster
    allocated = state.allocated_gpus()
    eps = rules.EPS
    flags = (state.pod_count() > 0) & (
        (state.cap_gpus > 0) & (allocated >= state.cap_gpus - eps) | (state.cap_gpus == 0) & (state.used_cpus >= state.cap_cpus - eps)
    )
    return {cluster.nodes[i].name for i in flags.nonzero()[0]}
