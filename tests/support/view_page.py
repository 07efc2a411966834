"""What an HTML view page (``planner.render.view``) carries, read without a browser: the data its script
draws the charts and tables from, a chart's caption, and the wave chart's budget lines."""

from __future__ import annotations

import html
import json
import re
from typing import Any


def page_data(page: str) -> dict[str, Any]:
    """The charts and tables the page's script draws (its JSON data element)."""
    match = re.search(r'<script type="application/json" id="view-data">(.*?)</script>', page, re.DOTALL)
    assert match is not None, "no view-data element"
    return json.loads(match.group(1))


def chart_caption(page: str, chart: str) -> str:
    """The caption under ``chart``, as text."""
    match = re.search(rf'data-chart="{re.escape(chart)}"></div><figcaption>(.*?)</figcaption>', page, re.DOTALL)
    assert match is not None, f"no chart {chart!r}"
    return html.unescape(match.group(1))


def budget_lines(page: str, chart: str = "waves") -> dict[str, tuple[int, str]]:
    """Per bar series a budget line of the wave chart caps (``moves``, ``nodes_touched``): the line's
    height and its name."""
    lines = {}
    for trace in page_data(page)["charts"][chart]["data"]:
        if "budget" in trace["meta"]:
            assert len(set(trace["y"])) == 1, "a budget line is level"
            lines[trace["meta"]["budget"]] = (trace["y"][0], html.unescape(trace["name"]))
    return lines
