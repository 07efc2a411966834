"""Plots of spot replays (matplotlib, headless): allocation over time and spot completion-time CDFs.
A replay named ``hp-only`` is drawn with its HP GPUs only (the cluster without spot work)."""

from __future__ import annotations

import numpy as np

from planner.simulate.spot_results import Replay


def plot_replays(series: dict[str, Replay], path: str) -> None:
    """Allocation over time (GPUs held / all GPUs) per replay, and each replay's spot completion-time CDF."""
    import matplotlib  # deferred: matplotlib (~0.3 s), for the plots only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib (as above)

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5))
    for name, replay in series.items():
        t = np.array(replay.series_t_s) / 3600
        held = np.array(replay.series_hp_gpus) + (0 if name == "hp-only" else np.array(replay.series_spot_gpus))
        left.step(t, held / replay.total_gpus, where="post", label=name, linewidth=1)
        if name != "hp-only":
            jct = np.sort(np.array(replay.completion_s("LP"))) / 3600
            if len(jct):
                right.step(jct, np.arange(1, len(jct) + 1) / len(jct), where="post", label=name, linewidth=1)
    left.set_xlabel("hours")
    left.set_ylabel("GPUs allocated / all GPUs")
    left.set_title("allocation over time")
    left.legend(fontsize=7)
    right.set_xscale("log")
    right.set_xlabel("spot job completion time, hours (log)")
    right.set_ylabel("share of spot jobs")
    right.set_title("spot completion-time CDF")
    right.legend(fontsize=7)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


__all__ = ["plot_replays"]


def plot_placement(rows: list[dict], path: str) -> None:
    """Per policy, the median over seeds against arrived load: GPU allocation (with the ideal
    line), power (EOPC) and fragmentation (rows of ``simulate.placement.run_rows``)."""
    import matplotlib  # deferred: matplotlib (~0.3 s), for the plots only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: matplotlib (as above)

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for name in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == name]
        loads = sorted({r["load"] for r in mine})
        for ax, key, scale in ((axes[0], "gpu_allocation", 1.0), (axes[1], "eopc_w", 1e-3), (axes[2], "frag_gpus", 1.0)):
            ax.plot([100 * x for x in loads], [scale * float(np.median([r[key] for r in mine if r["load"] == x])) for x in loads], label=name, linewidth=1)
    top = max(r["load"] for r in rows) * 100
    axes[0].plot([0, 100, top], [0, 100, 100], color="grey", linestyle=":", linewidth=1, label="ideal")
    for ax, label in zip(axes, ("GPUs allocated (% of capacity)", "EOPC (kW)", "fragmentation (GPUs)")):
        ax.set_xlabel("arrived GPU request (% of capacity)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
