"""Named settings of ``planner simulate spot`` (``--preset``): a published experiment in one word.

``asi-ablation`` is the configuration of the ASI ablation in ``benchmarks/results/spot.md`` (issue 45
item 4): 1,000 nodes of the spot-2026 node list, 4 days of arrivals with the first left out of the
metrics, a warm start (the jobs a stationary past leaves running), 60 s restart overhead, and the
workload generator's default loads (HP 0.65, spot 0.35 of the cluster's GPU-time). The benchmark
reads its settings from here, so the CLI and the published numbers cannot drift apart. Options given
explicitly on the command line override a preset's values.

Light on purpose (no simulator import): the CLI's ``--help`` shows the values.
"""

from __future__ import annotations

from typing import Any

SPOT_PRESETS: dict[str, dict[str, Any]] = {
    "asi-ablation": {
        "nodes": "1000",
        "days": 4.0,
        "warmup_days": 1.0,
        "warm_start": True,
        "restart_overhead_s": 60.0,
        "hp_load": 0.65,
        "spot_load": 0.35,
    },
}
"""Each preset's values, by the command's parameter name."""

SPOT_DEFAULTS: dict[str, Any] = {
    "nodes": "spot-2026",
    "days": 1.0,
    "warmup_days": 0.0,
    "warm_start": False,
    "restart_overhead_s": 0.0,
    "hp_load": None,  # the generator's HP_LOAD
    "spot_load": None,  # the generator's SPOT_LOAD
}
"""The command's values without a preset (``None``: the workload generator's default)."""

OPTION_NAMES: dict[str, str] = {
    "nodes": "--nodes",
    "days": "--days",
    "warmup_days": "--warmup-days",
    "warm_start": "--warm-start",
    "restart_overhead_s": "--restart-overhead-s",
    "hp_load": "--hp-load",
    "spot_load": "--spot-load",
}


def preset_text(name: str) -> str:
    """A preset's values as the options that spell them (``--nodes 1000 --days 4 ...``)."""
    parts = []
    for key, value in SPOT_PRESETS[name].items():
        option = OPTION_NAMES[key]
        if isinstance(value, bool):
            parts.append(option if value else "--cold-start")
        else:
            parts.append(f"{option} {value:g}" if isinstance(value, float) else f"{option} {value}")
    return " ".join(parts)


def resolve(preset: str | None, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The values to run with and where each came from: an option given explicitly (not None in
    ``given``) wins, then the preset's value, then the command's default. Sources: ``option``,
    ``preset <name>`` or ``default``."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    chosen = SPOT_PRESETS.get(preset, {}) if preset else {}
    for key, default in SPOT_DEFAULTS.items():
        if given.get(key) is not None:
            values[key], sources[key] = given[key], "option"
        elif key in chosen:
            values[key], sources[key] = chosen[key], f"preset {preset}"
        else:
            values[key], sources[key] = default, "default"
    return values, sources
