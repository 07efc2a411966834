"""``planner generate``: snapshots from the seeded generators and trace replays of ``planner/instances``
(ASI-like, openb, FlexTopo's Table 3, the 2026 spot-GPU node list)."""

from __future__ import annotations

import json
from enum import Enum

import typer

from planner.cli.common import emit, guarded, working, wrote
from planner.cluster import Cluster, SnapshotError
from planner.snapshot import dump_cluster

generate_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Generate a snapshot (seeded synthetic or trace replay).")


class Scheduler(str, Enum):
    """The baseline schedulers of ``heuristics.scheduler`` (its POLICIES), in the order the help lists them."""

    spread = "spread"
    random = "random"
    binpack = "binpack"


class NodeList(str, Enum):
    """The openb node lists (``instances.openb.NODE_LISTS``)."""

    gpu = "gpu"
    all = "all"


@generate_app.command("asi")
@guarded
def generate_asi_command(
    nodes: int = typer.Option(..., "--nodes", help="Number of 8-GPU nodes (1 to 250,000)."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same snapshot."),
    allocation: float = typer.Option(0.7, "--allocation", min=0.0, max=1.0, help="Target share of GPUs allocated."),
    locked: float = typer.Option(0.4, "--locked", min=0.0, max=1.0, help="Share of pods that are locked (may not move)."),
    scheduler: Scheduler = typer.Option(Scheduler.spread, "--scheduler", help="Baseline scheduler placing the pods (spread = Kubernetes' default)."),
    churn_rounds: int = typer.Option(2, "--churn-rounds", min=0, help="Fill-above-target / depart-below rounds before the final fill."),
    pending_jobs: int = typer.Option(0, "--pending-jobs", min=0, help="Jobs that failed the final fill to keep as pending pods."),
    mix: str = typer.Option("asi", "--mix", help="Workload shape: asi (1/2/4/8-GPU pods, training gangs) or small (1-2 GPU pods, the ASI paper's ILP size)."),
    large_jobs: int = typer.Option(
        0,
        "--large-jobs",
        min=0,
        help="Pending large training jobs to add as a batch for `planner allocate` "
        "(32-256 GPUs in 8- or 4-GPU pods, 12 CPUs per GPU, one GPU model each, half ASW-required).",
    ),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """A seeded ASI-like cluster (Alibaba ASI paper): ASWs of 32-64 8-GPU nodes, ~40% locked pods."""
    # deferred: the instance generators (~45 ms at start-up together; here and in the other generators, each for its command)
    from planner.instances.asi import generate_asi
    from planner.instances.batch import add_large_jobs

    with working(f"generating an ASI-like cluster of {nodes:,} nodes"):
        cluster = generate_asi(
            nodes=nodes,
            seed=seed,
            allocation=allocation,
            locked=locked,
            scheduler=scheduler.value,
            churn_rounds=churn_rounds,
            pending_jobs=pending_jobs,
            mix=mix,
        )
    cluster = add_large_jobs(cluster, large_jobs, seed)
    write_snapshot(cluster, out)


@generate_app.command("openb")
@guarded
def generate_openb_command(
    pods: str = typer.Option("default", "--pods", help="Pod list of the openb trace: default, gpushare40, ..."),
    at: float = typer.Option(None, "--at", help="Replay the trace up to this time (seconds)."),
    scheduler: Scheduler = typer.Option(Scheduler.spread, "--scheduler", help="Baseline scheduler placing the pods."),
    node_list: NodeList = typer.Option(NodeList.gpu, "--nodes", help="gpu: the 1,213 GPU nodes; all: plus CPU-only nodes."),
    seed: int = typer.Option(0, "--seed", help="Random seed for the scheduler's tie-breaking."),
    data_dir: str = typer.Option(None, "--data-dir", help="Directory of the openb CSVs (default: $PLANNER_OPENB_DIR, else the copy the package ships)."),
    departures: bool = typer.Option(
        True,
        "--departures/--no-departures",
        help="Pods leave at their deletion time (the trace as recorded: few are alive at once) or, with "
        "--no-departures, stay once created (the FGD paper's fill, which yields a busy cluster).",
    ),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """A snapshot of the Alibaba 2023 GPU trace (openb) replayed up to a time with a baseline scheduler."""
    from planner.instances.openb import generate_openb  # deferred: the instance generator (see generate asi)

    with working("replaying the openb trace"):
        cluster = generate_openb(
            pods=pods,
            at_s=at,
            scheduler=scheduler.value,
            nodes=node_list.value,
            seed=seed,
            data_dir=data_dir,
            departures=departures,
        )
    write_snapshot(cluster, out)


def write_snapshot(cluster: Cluster, out: str) -> None:
    """The snapshot to ``--out`` (a spinner while it is written, a line saying where it went)."""
    with working("writing the snapshot"):
        emit(dump_cluster(cluster) + "\n", out)
    wrote(out, f"a snapshot of {len(cluster.nodes):,} nodes and {len(cluster.pods):,} pods")


def _pending_counts(values: list[str]) -> dict[str, int]:
    """``B=1`` ``C=2`` -> {"B": 1, "C": 2}; a malformed item is bad input naming --pending."""
    counts: dict[str, int] = {}
    for value in values:
        letter, _, count = value.partition("=")
        if not letter or not count.isdigit():
            raise SnapshotError([f"--pending: '{value}' is not LETTER=COUNT (e.g. --pending B=1)"])
        counts[letter] = counts.get(letter, 0) + int(count)
    return counts


@generate_app.command("flextopo")
@guarded
def generate_flextopo_command(
    nodes: int = typer.Option(100, "--nodes", help="RTX 4090 servers (FlexTopo's simulation: 100)."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the C and D device positions and start times."),
    pending: list[str] = typer.Option([], "--pending", help="Pending scale-ups as LETTER=COUNT (A, B, C or D), repeatable."),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """FlexTopo's saturated cluster (Table 3): 2 sockets / 8 NUMA domains per node, workloads A-D at
    priorities 1500/1000/500/200; --pending B=1 adds a scale-up of B."""
    from planner.instances.flextopo import flextopo_cluster  # deferred: the instance generator (see generate asi)

    write_snapshot(flextopo_cluster(nodes=nodes, seed=seed, pending=_pending_counts(pending)), out)


@generate_app.command("spot")
@guarded
def generate_spot_command(
    nodes: int = typer.Option(200, "--nodes", help="Nodes sampled from the 2026 spot-GPU node list."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same snapshot."),
    hp_share: float = typer.Option(0.6, "--hp-share", help="Share of GPUs held by HP pods."),
    lp_fill: float = typer.Option(0.9, "--lp-fill", help="Share of the remaining GPUs filled by spot pods."),
    pending_jobs: int = typer.Option(1, "--pending-jobs", help="Pending HP jobs that need preemption (hp-new-0, ...)."),
    node_list: str = typer.Option(None, "--node-list", help="node_info_df.csv of the spot-GPU data (default: the copy the package ships)."),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """An HP/spot mix on the GPU models and node shapes of the 2026 spot-GPU node list, with
    checkpoint intervals, spot gangs and pending HP jobs."""
    from planner.instances.spot import DEFAULT_NODE_LIST, spot_cluster  # deferred: the instance generator (see generate asi)

    with working(f"generating a spot cluster of {nodes:,} nodes"):
        cluster = spot_cluster(
            nodes=nodes,
            seed=seed,
            hp_share=hp_share,
            lp_fill=lp_fill,
            pending_jobs=pending_jobs,
            node_list=node_list if node_list is not None else DEFAULT_NODE_LIST,
        )
    write_snapshot(cluster, out)


@generate_app.command("kubernetes-dra")
@guarded
def generate_kubernetes_dra_command(
    nodes: int = typer.Option(16, "--nodes", help="Nodes (1 to 20,000): DRA whole GPUs, DRA MIG slices, device-plugin GPUs and both, in turn."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same List."),
    pending: int = typer.Option(4, "--pending", min=0, max=10_000, help="Pending pods on claim templates."),
    twin: bool = typer.Option(False, "--twin", help="The same fleet with every DRA device a device-plugin resource (no DRA objects)."),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """A kubectl List (not a snapshot) of a mixed DRA / device-plugin fleet with DeviceClasses, ResourceSlices,
    ResourceClaimTemplates and allocated ResourceClaims; read it with planner import kubernetes."""
    from planner.instances.kubernetes_dra import dra_fleet  # deferred: the instance generator (see generate asi)

    try:
        doc = dra_fleet(nodes=nodes, seed=seed, pending=pending, twin=twin)
    except ValueError as err:
        raise SnapshotError([str(err)]) from None
    emit(json.dumps(doc, indent=1) + "\n", out)
