"""Placement replays on the openb traces against the FGD and PWR papers -> benchmarks/results/placement.md.

* **FGD ordering** (FGD paper, Fig. 9a; ATC'23): the default trace inflated to 130% of GPU capacity,
  10 seeds (42..51, the artifact's), six policies; mean GPU allocation at 100% and 130% arrived load
  against the published means of the artifact's own runs
  (hkust-adsl/kubernetes-scheduler-simulator, experiments/analysis/expected_results/
  analysis_allo_discrete.csv, rows ``openb_pod_list_default``, 10 seeds each; numbers copied below).
* **PWR checks** (PWR paper, Table II and Fig. 5): the power model idle and at full load; power saved
  by PWR+FGD (alpha 0.05, 0.1, 0.2) and by plain PWR against FGD at the same arrived load, and their
  GRAR against FGD's.
* **the other pod lists** (multigpu20/50, gpushare40, gpuspec33, cpu050): the same six policies
  against the same file's published means.
* **speed**: one 10-seed sweep of FGD (the slowest policy) at 130%, end to end through the CLI on
  the process pool (2 cores), timed with its peak memory.
* **checks** (a table at the top, PASS / FAIL): the published FGD ordering at 100% and 130%, and the
  accepted PWR targets against the reference simulator (``REFERENCE``), judged with ``--seeds 10`` only.
  The script exits 0 either way, as the other benchmarks do with their targets.

Run: ``.venv/bin/python benchmarks/placement.py [--seeds 10]``: 550 replays and the speed sweep. About 12
minutes on 2 idle cores before FGD's fragmentation was summed in the reference's order (which about
doubled FGD's replays); ``--seeds 1`` took 26 minutes at ``nice -n 15`` on the shared machine (load 10-14).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _measure import RESULTS, code_version, machine, run_measured

PLANNER = str(Path(sys.executable).with_name("planner"))  # the console script beside the running interpreter

PUBLISHED = {  # policy -> (mean allocation % at 100% arrived, at 130%), FGD artifact, default trace, seeds 42..51
    "fgd": (95.23, 95.39),
    "bestfit": (92.86, 93.08),
    "gpu-packing": (91.78, 92.00),
    "gpu-clustering": (91.65, 91.88),
    "dotprod": (90.62, 90.85),
    "random": (86.30, 87.47),
}
PUBLISHED_OTHER = {  # the same file's rows for the other pod lists (openb_pod_list_<name>)
    "multigpu20": {
        "fgd": (95.53, 95.65),
        "bestfit": (93.73, 93.93),
        "gpu-packing": (93.5, 93.71),
        "gpu-clustering": (93.34, 93.56),
        "dotprod": (91.85, 92.06),
        "random": (86.92, 88.69),
    },
    "multigpu50": {
        "fgd": (97.09, 97.18),
        "bestfit": (95.62, 95.74),
        "gpu-packing": (96.06, 96.18),
        "gpu-clustering": (95.69, 95.81),
        "dotprod": (94.73, 94.85),
        "random": (81.28, 90.27),
    },
    "gpushare40": {
        "fgd": (93.96, 94.15),
        "bestfit": (91.44, 91.69),
        "gpu-packing": (89.77, 90.03),
        "gpu-clustering": (89.76, 90.02),
        "dotprod": (89.3, 89.56),
        "random": (84.86, 86.0),
    },
    "gpuspec33": {
        "fgd": (87.84, 94.55),
        "bestfit": (80.39, 93.09),
        "gpu-packing": (82.22, 93.22),
        "gpu-clustering": (81.09, 92.12),
        "dotprod": (79.82, 89.14),
        "random": (83.87, 86.46),
    },
    "cpu050": {
        "fgd": (95.0, 95.21),
        "bestfit": (93.56, 93.79),
        "gpu-packing": (93.46, 93.72),
        "gpu-clustering": (93.52, 93.79),
        "dotprod": (93.03, 93.27),
        "random": (89.02, 91.24),
    },
}
PWR_POLICIES = ("pwr-fgd:0.05", "pwr-fgd:0.1", "pwr-fgd:0.2", "pwr")
# for the frontier: alphas outside the paper's three, and Eq. (5) as printed at the paper's three
FRONTIER_EXTRA = ("pwr-fgd:0.005", "pwr-fgd:0.02", "pwr-fgd:0.5", "pwr-fgd-eq5:0.05", "pwr-fgd-eq5:0.1", "pwr-fgd-eq5:0.2")
SAVING_TARGET_PCT, GRAR_TARGET = 13.0, 0.02  # the PWR check: > 13% saved up to 80%, GRAR within 2% of FGD's
# The accepted PWR targets (issue 45 item 5, restating issue 15's): on seeds 42..51, PWR+FGD's saving against FGD within
# 0.5 points of the reference simulator's at each load 20-80%, and its GRAR gap to FGD at 100% within 0.005 of the
# reference's. The reference's values on its own seeds 42..51, read as here (bins, seed-paired means), from
# results/reference_equivalence.md (code 4b0c953, our replay of the reference's orders, equal to its logs pod for pod).
CHECK_SEEDS, CHECK_LOADS, SAVING_TOLERANCE_PP, GAP_TOLERANCE = 10, (20, 30, 40, 50, 60, 70, 80), 0.5, 0.005
REFERENCE = {  # policy -> (saved % at CHECK_LOADS, GRAR - FGD @100)
    "pwr-fgd:0.05": ((14.49, 14.13, 13.67, 13.46, 13.09, 13.19, 12.81), -0.0265),
    "pwr-fgd:0.1": ((14.54, 14.19, 13.71, 13.47, 13.09, 13.20, 12.94), -0.0240),
    "pwr-fgd:0.2": ((15.05, 14.20, 13.66, 13.43, 13.07, 13.16, 12.90), -0.0245),
}


def sweep(policies: list[str], seeds: int, load: float, step: int, trace: str = "default") -> list[dict]:  # type: ignore[type-arg]
    from planner.runtime.executors import executor
    from planner.simulate.placement import RunSpec, run_rows

    specs = [RunSpec(trace, p, 42 + s, load, step) for p in policies for s in range(seeds)]
    rows: list[dict] = []  # type: ignore[type-arg]
    with executor() as run:
        for part in run(run_rows, specs):
            rows.extend(part)
    return rows


def at(rows: list[dict], policy: str, load_pct: int, key: str) -> list[float]:  # type: ignore[type-arg]
    return [r[key] for r in rows if r["policy"] == policy and round(r["load"] * 100) == load_pct]


def by_seed(rows: list[dict], policy: str, load_pct: int, key: str) -> dict[int, float]:  # type: ignore[type-arg]
    return {r["seed"]: r[key] for r in rows if r["policy"] == policy and round(r["load"] * 100) == load_pct}


def saved_pct(rows: list[dict], policy: str, base: list[dict], load_pct: int) -> list[float]:  # type: ignore[type-arg]
    """Per seed (a seed gives every policy the same arrivals), the power ``policy`` saves against
    FGD's rows ``base`` at a load, in %."""
    mine, fgd = by_seed(rows, policy, load_pct, "eopc_w"), by_seed(base, "fgd", load_pct, "eopc_w")
    return [100 * (1 - mine[s] / fgd[s]) for s in sorted(mine) if s in fgd]


def grar_gap(rows: list[dict], policy: str, base: list[dict], load_pct: int) -> list[float]:  # type: ignore[type-arg]
    """Per seed, ``policy``'s GRAR minus FGD's at a load."""
    mine, fgd = by_seed(rows, policy, load_pct, "grar"), by_seed(base, "fgd", load_pct, "grar")
    return [mine[s] - fgd[s] for s in sorted(mine) if s in fgd]


def paired_savings(pwr_rows: list[dict], base: list[dict]) -> list[str]:  # type: ignore[type-arg]
    """The combinations' savings and GRAR gap seed by seed (a seed gives every policy the same
    arrivals): how far the seeds spread around the means of the table above."""
    loads = (50, 60, 70, 80)
    lines = [
        (
            "Seed by seed (a seed gives every policy the same arrivals): power saved against FGD at 50-80% and GRAR - FGD at 100%, "
            "mean ± standard deviation [min, max] over the seeds."
        ),
        "",
        "| policy | " + " | ".join(f"saved @{k}" for k in loads) + " | GRAR - FGD @100 |",
        "|---|" + "---:|" * (len(loads) + 1),
    ]

    def cell(values: list[float], fmt: str, unit: str) -> str:
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        return f"{statistics.fmean(values):{fmt}}{unit} ± {spread:{fmt.lstrip('+')}} [{min(values):{fmt}}, {max(values):{fmt}}]"

    for policy in PWR_POLICIES[:-1]:
        cells = []
        for k in loads:
            cells.append(cell(saved_pct(pwr_rows, policy, base, k), ".2f", "%"))
        cells.append(cell(grar_gap(pwr_rows, policy, base, 100), "+.4f", ""))
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return lines + [""]


def verdict(ok: bool, judged: bool) -> str:
    return ("PASS" if ok else "FAIL") if judged else "not judged"


def pwr_checks(pwr_rows: list[dict], base: list[dict], seeds: int) -> tuple[list[str], list[str]]:  # type: ignore[type-arg]
    """The two accepted PWR targets against the reference simulator on seeds 42..51: the table of every
    load, and one summary row per (target, alpha). Judged only on exactly those seeds (``--seeds 10``)."""
    judged = seeds == CHECK_SEEDS
    lines = [
        "### The accepted PWR targets: against the reference simulator on seeds 42-51",
        "",
        (
            f"PWR+FGD's saving against FGD (seed-paired mean) within {SAVING_TOLERANCE_PP} points of the reference's at each load "
            f"{CHECK_LOADS[0]}-{CHECK_LOADS[-1]}%, and its GRAR gap to FGD at 100% within {GAP_TOLERANCE} of the reference's. Reference: the "
            "PWR paper's simulator on its seeds 42-51 (`reference_equivalence.md`, the same reading); ours: numpy's seeds 42-51, "
            "so the arrivals differ. Ours / reference (ours - reference)."
            + ("" if judged else f" **Not judged: this run has {seeds} seeds; the targets are defined on seeds 42-51 (`--seeds 10`).**")
        ),
        "",
        "| policy | " + " | ".join(f"saved @{k}" for k in CHECK_LOADS) + " | saving | GRAR - FGD @100 | GRAR gap |",
        "|---|" + "---:|" * len(CHECK_LOADS) + "---|---:|---|",
    ]
    summary = []
    for policy, (ref_saved, ref_gap) in REFERENCE.items():
        diffs = [statistics.fmean(saved_pct(pwr_rows, policy, base, k)) - ref for k, ref in zip(CHECK_LOADS, ref_saved)]
        gap = statistics.fmean(grar_gap(pwr_rows, policy, base, 100))
        worst = max(range(len(diffs)), key=lambda i: abs(diffs[i]))
        saving_ok, gap_ok = all(abs(d) <= SAVING_TOLERANCE_PP for d in diffs), abs(gap - ref_gap) <= GAP_TOLERANCE
        cells = [f"{ref + d:.2f}% / {ref:.2f}% ({d:+.2f})" for ref, d in zip(ref_saved, diffs)]
        lines.append(
            f"| {policy} | "
            + " | ".join(cells)
            + f" | {verdict(saving_ok, judged)} | {gap:+.4f} / {ref_gap:+.4f} ({gap - ref_gap:+.4f}) | {verdict(gap_ok, judged)} |"
        )
        summary += [
            (
                f"| saving within {SAVING_TOLERANCE_PP} points of the reference at {CHECK_LOADS[0]}-{CHECK_LOADS[-1]}%, {policy} | "
                f"largest difference {diffs[worst]:+.2f} at {CHECK_LOADS[worst]}% | **{verdict(saving_ok, judged)}** |"
            ),
            (
                f"| GRAR gap to FGD at 100% within {GAP_TOLERANCE} of the reference's, {policy} | {gap:+.4f} against {ref_gap:+.4f} "
                f"({gap - ref_gap:+.4f}) | **{verdict(gap_ok, judged)}** |"
            ),
        ]
    return lines + [""], summary


def ordering_checks(rows: list[dict]) -> list[str]:  # type: ignore[type-arg]
    """Summary rows: our order of the six policies by mean allocation is the published one, at 100% and 130%."""
    summary = []
    for column, load in ((0, 100), (1, 130)):
        published = sorted(PUBLISHED, key=lambda p: -PUBLISHED[p][column])
        ours = sorted(PUBLISHED, key=lambda p: -statistics.fmean(at(rows, p, load, "gpu_allocation")))
        summary.append(
            f"| FGD ordering at {load}% arrived: the published {' > '.join(published)} | {' > '.join(ours)} | **{verdict(ours == published, True)}** |"
        )
    return summary


OTHER_LIST_CLAIMS = {  # pod list -> (up to load %, {policy: saving the PWR paper reports above, in %}), §VI-C3
    "multigpu20": (80, {"pwr-fgd:0.05": 7.0, "pwr-fgd:0.1": 12.0, "pwr-fgd:0.2": 12.0}),
    "multigpu50": (90, {"pwr-fgd:0.05": 4.0, "pwr-fgd:0.1": 4.0, "pwr-fgd:0.2": 7.0}),
}
GPUSPEC33_GRAR_CLAIMS = {
    "pwr-fgd:0.05": "beats FGD by up to about 0.04",
    "pwr-fgd:0.1": "trails by up to about 0.05",
    "pwr-fgd:0.2": "trails by up to about 0.08",
}  # §VI-D4, constrained 33%


def other_list_claims(seeds: int, fgd_other: dict[str, list[dict]]) -> list[str]:  # type: ignore[type-arg]
    """The PWR paper's claims on the multi-GPU and constrained pod lists we have: savings against FGD
    held up to a load (multigpu20, 50), and the GRAR gap's extremes (gpuspec33)."""
    combos = list(PWR_POLICIES[:-1])
    lines = [
        "### The PWR paper's claims on the other pod lists",
        "",
        (
            "The combinations against FGD on the same arrivals (seed-paired means). Multi-GPU lists: the worst saving at 20% up to the "
            "load the paper names (its 20% list: 'up to about 82%', here 80%), against the level it reports."
        ),
        "",
        "| pod list | policy | worst saving | at load | the paper | met |",
        "|---|---|---:|---:|---:|---|",
    ]
    for trace, (top, claims) in OTHER_LIST_CLAIMS.items():
        rows = sweep(combos, seeds, 1.3, 5, trace)
        base = fgd_other[trace]
        for policy in combos:
            saved = {k: statistics.fmean(saved_pct(rows, policy, base, k)) for k in range(20, top + 1, 10)}
            worst = min(saved, key=saved.__getitem__)
            lines.append(
                f"| {trace} | {policy} | {saved[worst]:.2f}% | {worst}% | > {claims[policy]:g}% | {'yes' if saved[worst] > claims[policy] else 'no'} |"
            )
    rows = sweep(combos, seeds, 1.3, 5, "gpuspec33")
    base = fgd_other["gpuspec33"]
    lines += [
        "",
        (
            "gpuspec33 (a third of GPU tasks pin a model): GRAR minus FGD's over arrived loads 10-100% (seed-paired means), "
            "its best and worst, against the paper's reading of its Fig. 10."
        ),
        "",
        "| policy | most ahead of FGD | at load | most behind FGD | at load | the paper |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for policy in combos:
        gap = {k: statistics.fmean(grar_gap(rows, policy, base, k)) for k in range(10, 101, 5)}
        high, low = max(gap, key=gap.__getitem__), min(gap, key=gap.__getitem__)
        lines.append(f"| {policy} | {gap[high]:+.4f} | {high}% | {gap[low]:+.4f} | {low}% | {GPUSPEC33_GRAR_CLAIMS[policy]} |")
    return lines + [""]


def alpha_frontier(rows: list[dict], base: list[dict]) -> tuple[list[str], list[tuple[str, float, float]]]:  # type: ignore[type-arg]
    """Every alpha's worst saving at 20-80% (the paper's phase of sustained savings starts at 15%) and
    GRAR gap at 100% (seed-paired means): whether any weight meets both PWR targets, or the
    combination trades one for the other."""
    loads = range(20, 81, 10)

    def alpha(policy: str) -> float:
        return 1.0 if policy == "pwr" else float(policy.split(":", 1)[1])

    lines = [
        "### Does any alpha meet both?",
        "",
        (
            "The same replays for more weights (alpha 1 is plain PWR), and for the paper's Eq. (5) as printed (`pwr-fgd-eq5`: the least "
            "alpha x watts + (1 - alpha) x GPUs of fragmentation added, where the paper's runs sum normalised plugin scores). "
            f"Targets: more than {SAVING_TARGET_PCT:.0f}% saved at every load up to "
            f"80% (here 20-80%: the paper's first phase, 0-15%, is a ramp), and GRAR within {GRAR_TARGET:.0%} of FGD's (relative) at 100%. "
            "Savings and gaps are seed-paired means."
        ),
        "",
        "| alpha | policy | " + " | ".join(f"saved @{k}" for k in loads) + " | worst @20-80 | GRAR - FGD @100 | relative | saving met | GRAR met |",
        "|---:|---|" + "---:|" * (len(loads) + 3) + "---|---|",
    ]
    fgd100 = statistics.fmean(by_seed(base, "fgd", 100, "grar").values())
    points = []
    for policy in sorted({r["policy"] for r in rows}, key=lambda p: (p.startswith("pwr-fgd-eq5"), alpha(p))):
        savings = [statistics.fmean(saved_pct(rows, policy, base, k)) for k in loads]
        gap = statistics.fmean(grar_gap(rows, policy, base, 100))
        relative = gap / fgd100
        points.append((policy, min(savings), relative))
        lines.append(
            f"| {alpha(policy):g} | {policy} | " + " | ".join(f"{v:.2f}%" for v in savings) + f" | {min(savings):.2f}% | {gap:+.4f} | "
            f"{relative:+.2%} | {'yes' if min(savings) > SAVING_TARGET_PCT else 'no'} | {'yes' if -relative <= GRAR_TARGET else 'no'} |"
        )
    both = [p for p, worst, rel in points if worst > SAVING_TARGET_PCT and -rel <= GRAR_TARGET]
    lines += ["", f"Weights meeting both: {', '.join(both) if both else 'none'}.", ""]
    return lines, points


def plot_frontier(points: list[tuple[str, float, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    xs, ys = [p[1] for p in points], [100 * p[2] for p in points]
    left, right = min(*xs, SAVING_TARGET_PCT) - 0.5, max(*xs, SAVING_TARGET_PCT) + 0.5
    bottom = min(*ys, -100 * GRAR_TARGET) - 0.5
    ax.add_patch(
        plt.Rectangle(
            (SAVING_TARGET_PCT, -100 * GRAR_TARGET), right - SAVING_TARGET_PCT, 100 * GRAR_TARGET + 0.5, color="tab:green", alpha=0.12, label="both targets met"
        )
    )
    ax.axvline(SAVING_TARGET_PCT, color="tab:green", linestyle="--", linewidth=1, label=f"saving target > {SAVING_TARGET_PCT:.0f}%")
    ax.axhline(-100 * GRAR_TARGET, color="tab:red", linestyle="--", linewidth=1, label=f"GRAR target: within {GRAR_TARGET:.0%} of FGD")
    # weights that land on the same point (Eq. 5's do: watts decide) share one label
    groups: dict[tuple[float, float, bool], list[str]] = {}
    for (policy, _, _), x, y in zip(points, xs, ys):
        eq5 = policy.startswith("pwr-fgd-eq5")
        groups.setdefault((round(x, 6), round(y, 6), eq5), []).append("PWR" if policy == "pwr" else policy.split(":", 1)[1])
    offsets = ((5, 6), (5, -12), (-44, -4))  # nearby points: labels take turns above, below and left
    for i, ((x, y, eq5), alphas) in enumerate(groups.items()):
        ax.scatter(x, y, color="tab:orange" if eq5 else "tab:blue", marker="s" if eq5 else "o", zorder=3)
        label = ("Eq. 5 α " if eq5 else "" if alphas == ["PWR"] else "α ") + ", ".join(alphas)
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(-90, -14) if eq5 else offsets[i % len(offsets)], fontsize=8)
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, 0.5)
    ax.set_xlabel("worst power saved against FGD at 20-80% arrived load (%)")
    ax.set_ylabel("GRAR relative to FGD at 100% arrived (%)")
    ax.set_title("PWR+FGD weights: power saved against allocation lost\n(circles: as the paper ran it; squares: its Eq. 5 as printed)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Placement replays on the openb default trace (FGD and PWR papers)",
        "",
        (
            f"Machine: {machine()}; planner at {code_version()}. Reproduce: `.venv/bin/python benchmarks/placement.py --seeds {args.seeds}`. "
            "Workload: the 8,152 pods of `openb_pod_list_default` in a seeded random order, then copies drawn with replacement until 130% "
            "of the 6,212 GPUs are requested; pods never leave; a pod no node takes fails (the FGD artifact's setup, "
            "`planner/simulate/placement.py`). Values at arrived load k: means over the pods whose arrived load rounds to k%, "
            "as the artifact's analysis does; then the mean over seeds."
        ),
        "",
    ]
    checks_at = len(lines)  # the checks' summary goes here once measured

    # --- FGD ordering -------------------------------------------------------------------------
    rows = sweep(list(PUBLISHED), args.seeds, 1.3, 1)
    lines += [
        "## FGD ordering: GPU allocation against the published runs",
        "",
        "| policy | alloc % @100 (mean) | published | diff pp | alloc % @130 (mean) | published | diff pp | seeds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for policy, (p100, p130) in PUBLISHED.items():
        m100, m130 = statistics.fmean(at(rows, policy, 100, "gpu_allocation")), statistics.fmean(at(rows, policy, 130, "gpu_allocation"))
        worst = max(worst, abs(m100 - p100), abs(m130 - p130))
        lines.append(
            f"| {policy} | {m100:.2f} | {p100:.2f} | {m100 - p100:+.2f} | {m130:.2f} | {p130:.2f} | {m130 - p130:+.2f} | "
            f"{len(at(rows, policy, 130, 'gpu_allocation'))} |"
        )
    order = sorted(PUBLISHED, key=lambda p: -statistics.fmean(at(rows, p, 100, "gpu_allocation")))
    lines += ["", f"Order at 100% arrived: {' > '.join(order)}; largest difference from the published mean: {worst:.2f} percentage points.", ""]

    # --- the other pod lists -------------------------------------------------------------------
    lines += [
        "## The other pod lists against the published runs",
        "",
        "Mean GPU allocation (%) at 100% and 130% arrived load, ours / published, and the largest difference per list.",
        "",
        "| pod list | " + " | ".join(PUBLISHED) + " | largest diff pp |",
        "|---|" + "---:|" * (len(PUBLISHED) + 1),
    ]
    fgd_other: dict[str, list[dict]] = {}  # type: ignore[type-arg]
    for trace, published in PUBLISHED_OTHER.items():
        other = sweep(list(published), args.seeds, 1.3, 1, trace)
        fgd_other[trace] = [r for r in other if r["policy"] == "fgd"]
        cells, worst_here = [], 0.0
        for policy, (p100, p130) in published.items():
            m100, m130 = statistics.fmean(at(other, policy, 100, "gpu_allocation")), statistics.fmean(at(other, policy, 130, "gpu_allocation"))
            worst_here = max(worst_here, abs(m100 - p100), abs(m130 - p130))
            cells.append(f"{m100:.2f} / {p100:.2f}, {m130:.2f} / {p130:.2f}")
        lines.append(f"| {trace} | " + " | ".join(cells) + f" | {worst_here:.2f} |")
    lines.append("")

    # --- PWR -----------------------------------------------------------------------------------
    from planner.heuristics.power import PowerModel
    from planner.instances.openb import NODE_LISTS, resolve_data_dir
    from planner.simulate.openb_nodes import read_gpu_nodes

    nodes = read_gpu_nodes(resolve_data_dir(None) / NODE_LISTS["gpu"])
    power = PowerModel(nodes)
    idle = power.total_w(nodes)
    nodes.gpu_free[:] = 0
    nodes.cpu_free[:] = 0
    full = power.total_w(nodes)
    pwr_rows = sweep(list(PWR_POLICIES), args.seeds, 1.3, 5)
    base = [r for r in rows if r["policy"] == "fgd"]
    lines += [
        "## PWR: power model and savings against FGD",
        "",
        (
            f"Power model (`planner/heuristics/power.py`, Table II, CPU packages of 16 cores / 32 vCPUs, whole packages per node as the "
            f"reference plugin counts them): **{idle / 1000:,.1f} kW idle, {full / 1000:,.1f} kW at full load** (the paper's cluster: "
            "about 225 kW and 1.43 MW, which Table II gives with fractional packages, 107,018 vCPUs / 32 = 3,344; whole packages per node "
            "make 3,711)."
        ),
        "",
        "Power saved against FGD at the same arrived load (1 - EOPC / EOPC of FGD, mean over seeds), and GRAR (allocated / arrived request) minus FGD's:",
        "",
        "| policy | " + " | ".join(f"saved @{k}" for k in range(10, 101, 10)) + " | GRAR - FGD @90 | @100 | @130 |",
        "|---|" + "---:|" * 13,
    ]
    # the competitors too, from the ordering sweep: the paper says they never save more than 5% and
    # that BestFit's GRAR, like the combinations', is about 2% behind FGD's
    for policy in (*PWR_POLICIES, *(p for p in PUBLISHED if p != "fgd")):
        source = pwr_rows if policy in PWR_POLICIES else rows
        cells = []
        for k in range(10, 101, 10):
            mine, theirs = statistics.fmean(at(source, policy, k, "eopc_w")), statistics.fmean(at(base, "fgd", k, "eopc_w"))
            cells.append(f"{100 * (1 - mine / theirs):.1f}%")
        for k in (90, 100, 130):
            cells.append(f"{statistics.fmean(at(source, policy, k, 'grar')) - statistics.fmean(at(base, 'fgd', k, 'grar')):+.4f}")
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    fgd_grar = {k: statistics.fmean(at(base, "fgd", k, "grar")) for k in (90, 100, 130)}
    lines += ["", f"FGD's GRAR: {', '.join(f'{v:.4f} @{k}' for k, v in fgd_grar.items())}.", ""]
    lines += paired_savings(pwr_rows, base)
    check_lines, summary = pwr_checks(pwr_rows, base, args.seeds)
    lines += check_lines
    lines += other_list_claims(args.seeds, fgd_other)
    frontier_rows = pwr_rows + sweep(list(FRONTIER_EXTRA), args.seeds, 1.3, 5)
    frontier_lines, points = alpha_frontier(frontier_rows, base)
    plot_frontier(points, RESULTS / "placement-alpha.png")
    lines += frontier_lines + ["![power saved against GRAR lost, one point per weight](placement-alpha.png)", ""]

    # --- speed -------------------------------------------------------------------------------
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "runs.json"
        measured = run_measured(
            [
                PLANNER,
                "simulate",
                "placement",
                "--policy",
                "fgd",
                "--seeds",
                "10",
                "--load",
                "1.3",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        count = len(json.loads(out.read_text())["runs"]) if measured.returncode == 0 else 0
    lines += [
        "## Speed",
        "",
        (
            f"`planner simulate placement --policy fgd --seeds 10 --load 1.3` (process pool, 2 cores): **{measured.wall_s:.1f} s** wall, "
            f"peak memory {measured.peak_tree_rss_mib:,.0f} MiB (all processes), {count} rows, exit {measured.returncode}. Load average "
            f"when it started: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (1, 5, 15 min); on a shared machine the time is indicative only."
        ),
        "",
    ]

    # --- plot ----------------------------------------------------------------------------------
    from planner.simulate.plots import plot_placement

    plot_placement(rows + [r for r in pwr_rows if r["policy"] == "pwr-fgd:0.1"], str(RESULTS / "placement.png"))
    lines += ["![allocation, power and fragmentation against arrived load](placement.png)", ""]
    lines[checks_at:checks_at] = [
        "## Checks",
        "",
        "The accepted targets (issue 45 item 5; the numbers per load in the sections below). The script exits 0 either way, as the other benchmarks do.",
        "",
        "| check | measured | result |",
        "|---|---|---|",
        *ordering_checks(rows),
        *summary,
        "",
    ]
    (RESULTS / "placement.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
