"""One self-contained HTML page: sections of facts, charts and tables, with Plotly's JavaScript inline.

Everything a page shows that came from the input is escaped where it is written: HTML text through
``html.escape``; the data the scripts read sits in a ``<script type="application/json">`` element
with ``<``, ``>`` and ``&`` written as ``\\u`` escapes (a name holding ``</script>`` cannot end it);
the tables are filled with ``textContent``; and the chart labels are HTML-escaped because Plotly reads
a few HTML tags in its labels and decodes entities when it draws them. The page's Content-Security-
Policy allows no request at all (no ``connect-src``, images only from ``data:``), so nothing leaves
it even if something slipped through.
"""

from __future__ import annotations

import functools
import html
import importlib.resources
import json
from dataclasses import dataclass, field
from typing import Any

from planner.render.view.script import SCRIPT, STYLE

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:"


@functools.cache
def plotly_js() -> str:
    """Plotly's bundled ``plotly.min.js``, from the installed ``plotly`` package (read, not imported)."""
    return (importlib.resources.files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def text(value: Any) -> str:
    """``value`` as HTML text."""
    return html.escape(str(value), quote=True)


def label(value: Any) -> str:
    """``value`` as a Plotly label (Plotly decodes entities and reads some tags when it draws)."""
    return html.escape(str(value), quote=False)


def number(value: Any) -> str:
    """A count with thousands separators; a measure with at most four decimals; '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.4f}".rstrip("0").rstrip(".")
    return str(value)


def script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element."""
    raw = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


@dataclass
class Column:
    label: str
    numeric: bool = False


@dataclass
class Page:
    """A page under construction: HTML parts in order, and the charts and tables its script draws."""

    title: str
    identity: list[tuple[str, str, str]] = field(default_factory=list)
    """What the page is of, shown under the title: name, value and what it means (the plan's id, ...)."""
    parts: list[str] = field(default_factory=list)
    charts: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)

    def heading(self, title: str, level: int = 2, anchor: str | None = None) -> None:
        ident = f' id="{text(anchor)}-section"' if anchor else ""
        self.parts.append(f"<h{level}{ident}>{text(title)}</h{level}>")

    def paragraph(self, words: str, css: str = "") -> None:
        self.parts.append(f'<p class="{css}">{text(words)}</p>' if css else f"<p>{text(words)}</p>")

    def facts(self, rows: list[tuple[str, Any, str]], key: str) -> None:
        """Headline numbers: label, value and what it means (a definition or a guarantee)."""
        cells = "".join(
            f'<div class="fact" data-fact="{text(name)}"><div class="value">{text(value if isinstance(value, str) else number(value))}</div>'
            f'<div class="name">{text(name)}</div><div class="def">{text(meaning)}</div></div>'
            for name, value, meaning in rows
        )
        self.parts.append(f'<div class="facts" id="{text(key)}">{cells}</div>')

    def chart(self, key: str, data: list[dict[str, Any]], layout: dict[str, Any], caption: str = "") -> None:
        self.charts[key] = {"data": data, "layout": layout}
        self.parts.append(f'<figure><div class="chart" id="{text(key)}" data-chart="{text(key)}"></div><figcaption>{text(caption)}</figcaption></figure>')

    def table(self, key: str, columns: list[Column], rows: list[list[Any]], page_size: int = 50, caption: str = "") -> None:
        """A table the script draws: sortable by a click on a column, filtered by text, in pages."""
        self.tables[key] = {"columns": [{"label": c.label, "numeric": c.numeric} for c in columns], "rows": rows, "page_size": page_size}
        note = f"<figcaption>{text(caption)}</figcaption>" if caption else ""
        self.parts.append(f'<figure>{note}<div class="table" id="{text(key)}" data-table="{text(key)}"></div></figure>')

    def _identity(self) -> str:
        if not self.identity:
            return ""
        items = "".join(
            f'<span class="id" data-id="{text(name)}" title="{text(meaning)}">{text(name)}: <code>{text(value)}</code></span>'
            for name, value, meaning in self.identity
        )
        return f'<p class="ids" id="identity">{items}</p>'

    def html(self) -> str:
        data = script_json({"charts": self.charts, "tables": self.tables})
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{text(self.title)}</title><style>{STYLE}</style></head>\n"
            f"<body><header><h1>{text(self.title)}</h1>{self._identity()}</header><main>\n" + "\n".join(self.parts) + "\n</main>\n"
            f'<script type="application/json" id="view-data">{data}</script>\n'
            f"<script>{plotly_js()}</script>\n<script>{SCRIPT}</script>\n</body></html>\n"
        )
