"""Plots of spot replays (matplotlib, headless): allocation over time and spot completion-time CDFs.
A replay named ``hp-only`` is drawn with its HP GPUs only (the cluster without spot work)."""

from __future__ import annotations

from planner.simulate.spot import Replay


def plot_replays(series: dict[str, Replay], path: str) -> None:
    """Allocation over time (GPUs held / all GPUs) per replay, and each replay's spot completion-time CDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

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
