"""The per-wave budgets a defrag plan was made under, as its view draws and names them.

A plan's report records the limits in force (``report.limits``, written by the engine's
``DefragOptions.limits_in_force``): per limit the ``value`` applied (a share of nodes already resolved
to a count, null for no limit), its ``source`` (``given`` or ``default``) and, for a share, the
``rule`` that resolved it. ``report.provenance.option_sources``, when the options came through a
policy, says which ``given`` values a policy set. The view reads those records and never resolves a
share itself: the count drawn is the count the planner held each wave to.

A plan file is input: every field read here may be missing or of any type. A value that is not a
count is shown as text and drawn as no line, never formatted as a number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DRAWN = (("max_moves_per_wave", "max moves per wave", "moves"), ("max_nodes_per_wave", "max nodes per wave", "nodes_touched"))
"""The budgets drawn as lines on the wave timeline: key, label and the bar series they cap."""

ALSO_PER_WAVE = (
    ("max_moves_per_node_per_wave", "max moves per node per wave"),
    ("max_moves_per_namespace", "max moves per namespace per wave"),
    ("max_unavailable_per_job", "max unavailable pods per job per wave"),
    ("disruption_budgets", "jobs with their own disruption budget"),
)
"""Limits that shape waves per node, namespace or job: named in the caption, not drawn."""

ORIGINS = {
    "default": ("default", "the default budget (none was given)"),
    "given": ("given", "given with the plan's options (a flag or the request)"),
    "policy": ("policy", "set by the policy"),
    "server-policy": ("server's policy", "set by the server's default policy"),
    "snapshot": ("snapshot", "from the snapshot (PodDisruptionBudgets)"),
}
"""Where a limit's value came from: per recorded source, a word for the legend and a phrase for the caption."""

NO_LIMIT = ": no limit"
"""How a recorded rule ends when its share lifts the budget ('100%: no limit')."""

MAX_SHOWN_CHARS = 80
"""A recorded value or rule longer than this is cut (the plan file is input)."""


@dataclass(frozen=True)
class WaveBudget:
    """One per-wave budget: the count each wave was held to (``count``; None: no line to draw), the
    value as the plan records it (``shown``), where it came from (``source``, a key of ``ORIGINS``)
    and how a share became the count (``rule``)."""

    key: str
    label: str
    series: str
    count: int | None
    shown: str
    source: str | None
    rule: str | None

    def legend(self) -> str:
        """The name of its line: ``budget: max nodes per wave = 50 (policy)``."""
        return f"budget: {self.label} = {self.shown}" + (f" ({ORIGINS[self.source][0]})" if self.source else "")

    def sentence(self) -> str:
        """What applied and where it came from, for the caption."""
        words = f"{self.label} = {self.shown}" if self.count is not None else f"{self.label}: {self.shown}"
        if self.source:
            words += f", {ORIGINS[self.source][1]}"
        if self.rule:
            words += f": {self.rule}"
        return words


def _cut(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def _count(value: Any) -> int | None:
    """``value`` when it is a count (an int, not a bool, at least 0), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _records(report: Any) -> tuple[dict[str, Any] | None, dict[str, Any], dict[str, Any]]:
    """The report's ``limits`` (None when absent or not a mapping), its provenance's ``options`` and
    ``option_sources`` (empty when absent or not mappings)."""
    extra = (report.model_extra or {}) if report is not None else {}
    limits = extra.get("limits")
    provenance = _mapping(extra.get("provenance"))
    return (limits if isinstance(limits, dict) else None), _mapping(provenance.get("options")), _mapping(provenance.get("option_sources"))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _origin(source: Any, key: str, sources: dict[str, Any]) -> str | None:
    """The key of ``ORIGINS`` for a recorded ``source``: ``given`` is refined by ``option_sources``
    (a policy's values are ``given`` to the options model); None for anything else."""
    if source == "given" and sources.get(key) in ORIGINS:
        source = sources[key]
    return source if isinstance(source, str) and source in ORIGINS else None


def _budget(key: str, label: str, series: str, limits: dict[str, Any] | None, options: dict[str, Any], sources: dict[str, Any]) -> WaveBudget:
    if limits is not None:
        entry = limits.get(key)
        if not isinstance(entry, dict):
            return WaveBudget(key, label, series, None, "not set", None, None)
        value, rule = entry.get("value"), entry.get("rule")
        rule = _cut(rule) if isinstance(rule, str) else None
        count = _count(value)
        shown = f"{count:,}" if count is not None else "no limit" if value is None else _cut(value)
        if value is None and rule is not None and rule.endswith(NO_LIMIT):  # '100%: no limit'
            shown, rule = f"no limit ({rule.removesuffix(NO_LIMIT)})", None
        return WaveBudget(key, label, series, count, shown, _origin(entry.get("source"), key, sources), rule)
    # a plan whose report records no limits (written by hand, or by an older planner): the options as given
    given = options.get(key)
    count = _count(given)
    if count is not None:
        return WaveBudget(key, label, series, count, f"{count:,}", _origin(sources.get(key, "given"), key, sources), None)
    if given is None:
        return WaveBudget(key, label, series, None, "not recorded (the plan's report has no limits)", None, None)
    shown = f"{_cut(given)} of the nodes in scope; the plan's report does not record the count it came to, so no line is drawn"
    return WaveBudget(key, label, series, None, shown, _origin(sources.get(key, "given"), key, sources), None)


def wave_budgets(report: Any) -> list[WaveBudget]:
    """The drawn budgets (``DRAWN``) of a defrag plan's ``report``, each with what applied and why."""
    limits, options, sources = _records(report)
    return [_budget(key, label, series, limits, options, sources) for key, label, series in DRAWN]


def other_wave_limits(report: Any) -> list[str]:
    """The limits per node, namespace or job that shaped the waves, each as ``name = value, origin``."""
    limits, _, sources = _records(report)
    out = []
    for key, label in ALSO_PER_WAVE:
        entry = (limits or {}).get(key)
        if isinstance(entry, dict) and entry.get("value") is not None:
            origin = _origin(entry.get("source"), key, sources)
            out.append(f"{label} = {_cut(entry['value'])}" + (f", {ORIGINS[origin][1]}" if origin else ""))
    return out


def budgets_caption(budgets: list[WaveBudget], others: list[str]) -> str:
    """The timeline's caption: each drawn budget in force (or why none), then the others."""
    words = "Moves, GPUs moved and nodes touched per wave. Budgets per wave: " + "; ".join(b.sentence() for b in budgets) + "."
    if others:
        words += " Also limiting each wave (per node, namespace or job; not drawn): " + "; ".join(others) + "."
    return words
