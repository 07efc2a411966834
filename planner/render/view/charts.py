"""Plotly figures of the views, as plain data: the switch x GPU model heatmap (a button per measure,
before | after | difference side by side), the node grid, and a plan's wave timeline. Labels from the
input pass through ``page.label``. Each trace carries ``meta`` saying what it shows, which the browser
tests read back from the drawn chart."""

from __future__ import annotations

from typing import Any

from planner.render.view.budgets import WaveBudget
from planner.render.view.cells import NODE_STATES, Grid, Measure, difference
from planner.render.view.page import label

ROW_PX = 14
MAX_HEIGHT_PX = 1600
MAX_LABELLED_CELLS = 400
"""Heatmaps with at most this many cells write each cell's value in it."""
MAX_GAPPED_CELLS = 5000
"""Node grids of at most this many nodes draw a gap between cells (larger ones draw faster without)."""
STATE_COLOURS = ("#8c959f", "#1a7f37", "#c6e48b", "#bf3989", "#e5e7eb")
SERIES_COLOURS = {"moves": "#1f77b4", "gpus_moved": "#ff7f0e", "nodes_touched": "#2ca02c"}
"""The wave timeline's bars; a budget's line takes the colour of the bars it caps."""
LABEL_CHAR_PX = 4
LABEL_ALLOWANCE_PX = 240
"""The heatmap grows by this much per character of its longest GPU model name (at most the allowance):
Plotly turns long column labels and the margin that holds them takes that height from the cells."""


def _height(rows: int) -> int:
    return max(320, min(MAX_HEIGHT_PX, 140 + ROW_PX * rows))


def _axis(title: str, **fields: Any) -> dict[str, Any]:
    """An axis whose title stands clear of its tick labels: ``automargin`` grows the margin to hold
    labels of any length (switch and model names come from the input) and sets the title beyond them."""
    return {"title": {"text": title, "standoff": 12}, "automargin": True, **fields}


def heatmap(grids: list[tuple[str, Grid]], measures: list[Measure]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per measure one heatmap per phase (``[("before", g1), ("after", g2)]`` adds the difference; one
    grid draws alone), side by side; buttons choose the measure. Rows and columns come from the first grid."""
    first = grids[0][1]
    phases: list[tuple[str, dict[str, list[list[float | None]]]]] = [(name, g.values) for name, g in grids]
    if len(grids) == 2:
        phases.append(("difference", {m.key: difference(grids[1][1].values[m.key], grids[0][1].values[m.key]) for m in measures}))
    x = [label(m) for m in first.models]
    y = [label(s) for s in first.switches]
    width = 1.0 / len(phases)
    data: list[dict[str, Any]] = []
    for k, measure in enumerate(measures):
        same = [v for name, values in phases if name != "difference" for row in values[measure.key] for v in row if v is not None]
        top = max(same, default=0)
        for p, (name, values) in enumerate(phases):
            axis = "" if p == 0 else str(p + 1)
            diff = name == "difference"
            spread = max((abs(v) for row in values[measure.key] for v in row if v is not None), default=0) if diff else top
            data.append(
                {
                    "type": "heatmap",
                    "name": f"{measure.label}, {name}",
                    "meta": {"measure": measure.key, "phase": name},
                    "x": x,
                    "y": y,
                    "z": values[measure.key],
                    "xaxis": f"x{axis}",
                    "yaxis": "y",
                    "visible": k == 0,
                    "hoverongaps": False,
                    "texttemplate": "%{z}" if len(x) * len(y) <= MAX_LABELLED_CELLS else "",
                    "hovertemplate": f"%{{y}}, %{{x}}: %{{z}} {measure.label} ({name})<extra></extra>",
                    "colorscale": "RdBu" if diff else "Blues",
                    "reversescale": not diff,
                    "zmin": -spread if diff else 0,
                    "zmax": spread if diff else top,
                    "showscale": diff or len(phases) == 1,
                    "colorbar": {"x": 1.0, "len": 0.5, "title": {"text": "change" if diff else measure.label}},
                }
            )
    per_measure = len(phases)
    buttons = [
        {"label": m.label, "method": "restyle", "args": [{"visible": [t // per_measure == k for t in range(len(data))]}]} for k, m in enumerate(measures)
    ]
    layout: dict[str, Any] = {
        "height": _height(len(y)) + min(LABEL_ALLOWANCE_PX, LABEL_CHAR_PX * max((len(m) for m in first.models), default=0)),
        "margin": {"l": 60, "r": 40, "t": 90, "b": 40},
        "yaxis": _axis("access switch", type="category", autorange="reversed"),
        "updatemenus": [
            {"type": "buttons", "direction": "right", "x": 0, "y": 1.0, "yanchor": "bottom", "pad": {"b": 30}, "xanchor": "left", "buttons": buttons}
        ],
        "annotations": [],
    }
    for p, (name, _) in enumerate(phases):
        axis = "xaxis" if p == 0 else f"xaxis{p + 1}"
        layout[axis] = _axis(name, domain=[p * width + 0.02, (p + 1) * width - 0.04], type="category", anchor="y")
    return data, layout


def node_grid(
    grid: dict[str, Any], states: tuple[str, ...] = NODE_STATES, colours: tuple[str, ...] = STATE_COLOURS
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One cell per node, one row per switch, coloured by the node's state."""
    n = len(states)
    cells = sum(v is not None for row in grid["z"] for v in row)
    scale = []
    for k, colour in enumerate(colours[:n]):
        scale += [[k / n, colour], [(k + 1) / n, colour]]
    trace = {
        "type": "heatmap",
        "meta": {"grid": "nodes", "states": list(states)},
        "z": grid["z"],
        "y": [label(s) for s in grid["switches"]],
        "text": [[label(v) if v is not None else "" for v in row] for row in grid["names"]],
        "hovertemplate": "%{text} (%{y})<extra></extra>",
        "hoverongaps": False,
        "zmin": -0.5,
        "zmax": n - 0.5,
        "xgap": 1 if cells <= MAX_GAPPED_CELLS else 0,
        "ygap": 1 if cells <= MAX_GAPPED_CELLS else 0,
        "colorscale": scale,
        "colorbar": {"tickvals": list(range(n)), "ticktext": list(states)},
    }
    layout = {
        "height": _height(len(grid["switches"])),
        "margin": {"l": 60, "r": 40, "t": 20, "b": 40},
        "yaxis": _axis("access switch", type="category", autorange="reversed"),
        "xaxis": _axis("node (in snapshot order under its switch)", showticklabels=False),
    }
    return [trace], layout


def wave_timeline(rows: list[dict[str, Any]], budgets: list[WaveBudget]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per wave: moves, GPUs moved and nodes touched as bars; each per-wave budget in force (a count)
    as a dashed line at its count, named with its value and where it came from."""
    waves = [r["wave"] for r in rows]
    series = (("moves", "moves"), ("gpus_moved", "GPUs moved"), ("nodes_touched", "nodes touched"))
    data: list[dict[str, Any]] = [
        {"type": "bar", "name": name, "meta": {"series": key}, "x": waves, "y": [r[key] for r in rows], "marker": {"color": SERIES_COLOURS[key]}}
        for key, name in series
    ]
    for budget in budgets:
        if budget.count is not None and waves:
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": label(budget.legend()),
                    "meta": {"budget": budget.series, "key": budget.key, "count": budget.count},
                    "x": [waves[0] - 0.5, waves[-1] + 0.5],
                    "y": [budget.count, budget.count],
                    "line": {"dash": "dash", "width": 2, "color": SERIES_COLOURS[budget.series]},
                }
            )
    layout = {
        "height": 360,
        "barmode": "group",
        "margin": {"l": 60, "r": 20, "t": 20, "b": 50},
        "xaxis": _axis("wave", dtick=1 if len(waves) <= 30 else None),
        "yaxis": _axis("count"),
        "legend": {"orientation": "h", "y": 1.12},
    }
    return data, layout
