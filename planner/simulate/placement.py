"""Placement replays on a trace's pod list, the FGD paper's experiment (Weng et al., ATC'23, §6):

* **workload** (``inflate``): the trace's pods in a seeded random order, then copies drawn uniformly
  with replacement from the trace until the next copy would take the GPU milli requested past
  ``load`` x the cluster's capacity (that copy is dropped). Pods never leave; a pod no node can take
  fails at once and is not retried (there is no queue in this experiment).
  The artifact's stop test compares the total with only the copy's *per-device* milli (a quirk that
  lets multi-GPU copies overshoot by up to 7,000 milli); here the copy's whole request is compared.
  The artifact draws with Go's math/rand; this replay uses numpy's generator, so runs match the
  published ones in distribution, not pod for pod.
* **scheduling** (``replay``): every node that can take the pod is scored by the policy
  (``heuristics/share_scores.py``); the highest score wins, ties to the node of smallest seeded rank
  (the artifact's random node-name prefixes). Scores that depend only on a node's own state are cached
  per request shape and recomputed only for nodes that changed since.
* **metrics** (``at_loads``): after every pod, the GPU milli requested by the pods arrived so far
  (failed ones included), the milli allocated, the power and the fragmentation; the value at arrived
  load k % is the mean over the pods whose arrived load rounds (half to even) to k, as the artifact's
  analysis does (its ``merge_alloc_discrete.py``); the neighbours k +- 1 when none does.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.cluster import SnapshotError
from planner.heuristics.gpu_nodes import GpuNodes, Trace, pod_tag
from planner.heuristics.power import PowerModel
from planner.heuristics.share_scores import Ask, Scorer, TargetWorkload, fragmentation, scorer
from planner.instances.openb import NODE_LISTS, POD_LIST_PREFIX, missing_data_dir, pod_lists, resolve_data_dir
from planner.simulate.openb_nodes import read_gpu_nodes, read_trace


def inflate(trace: Trace, capacity_milli: int, load: float, rng: np.random.Generator) -> Trace:
    """Arrival order: the trace shuffled, then copies drawn with replacement up to ``load`` x capacity.
    A trace already above the target is cut at the first pod that would pass it."""
    order = rng.permutation(len(trace.names))
    milli = trace.total_milli
    target = load * capacity_milli
    total = np.cumsum(milli[order])
    keep = int(np.searchsorted(total, target, side="right"))
    arrivals = list(order[:keep])
    requested = int(total[keep - 1]) if keep else 0
    if keep == len(order):
        while True:
            i = int(rng.integers(len(trace.names)))
            if requested + milli[i] > target:
                break
            requested += int(milli[i])
            arrivals.append(i)
    return trace.take(np.array(arrivals, dtype=np.int64))


@dataclass
class Replay:
    """Per arriving pod, after it was tried: GPU milli arrived so far (incl. this pod), milli
    allocated, datacenter power (W, ``heuristics/power.py``) and fragmentation (milli-GPUs, FGD's F
    summed over nodes for the trace's target workload); the node each pod went to (-1: failed) and
    the devices it took."""

    arrived_milli: np.ndarray
    used_milli: np.ndarray
    power_w: np.ndarray
    frag_milli: np.ndarray
    node: np.ndarray
    capacity_milli: int
    devices: list[list[int]]  # per pod, the devices it took (empty: CPU-only or failed)

    @property
    def failed(self) -> int:
        return int((self.node < 0).sum())


def replay(nodes: GpuNodes, arrivals: Trace, policy: Scorer, rng: np.random.Generator, workload: TargetWorkload, progress=None) -> Replay:
    """Place ``arrivals`` in order on a copy of ``nodes`` under ``policy``; ``workload``: the task
    classes fragmentation is measured against."""
    state = copy.deepcopy(nodes)
    count = len(state.names)
    rank = rng.permutation(count)
    tie = (count - 1 - rank).astype(np.int64)  # higher is better: the smallest rank wins ties
    version = np.zeros(count, dtype=np.int64)
    cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    model_masks: dict[tuple[str, ...], np.ndarray] = {}
    power = PowerModel(state)
    node_power = power.node_power_w(state)
    node_frag = fragmentation(workload, state.gpu_free, state.cpu_free, state.model)
    size = len(arrivals.names)
    arrived, used, where = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64), np.full(size, -1, dtype=np.int64)
    power_w, frag_milli = np.zeros(size), np.zeros(size)
    taken: list[list[int]] = [[] for _ in range(size)]
    total_arrived, total_used, total_power, total_frag = 0, 0, float(node_power.sum()), float(node_frag.sum())
    for k in range(size):
        ask = Ask(
            int(arrivals.cpu[k]),
            int(arrivals.mem[k]),
            int(arrivals.num_gpu[k]),
            int(arrivals.gpu_milli[k]),
            arrivals.models[k],
            pod_tag(int(arrivals.num_gpu[k]), int(arrivals.gpu_milli[k])),
        )
        total_arrived += ask.milli * ask.num_gpu
        if ask.models not in model_masks:
            model_masks[ask.models] = state.model_mask(ask.models)
        feasible = np.flatnonzero(state.feasible(ask.cpu, ask.mem, ask.num_gpu, ask.milli, model_masks[ask.models]))
        if len(feasible):
            if not policy.uses_score:
                n = int(feasible[rng.integers(len(feasible))])
            else:
                if policy.cached:
                    scores = _cached_scores(state, policy, ask, cache, version)[feasible]
                else:
                    scores = policy.scores(state, ask, feasible)
                scores = policy.normalise(scores)
                best = feasible[scores == scores.max()]
                n = int(best[np.argmax(tie[best])])
            taken[k] = policy.devices(state, n, ask, rng)
            state.place(n, ask.cpu, ask.mem, taken[k], ask.milli, ask.tag)
            version[n] += 1
            total_used += ask.milli * ask.num_gpu
            where[k] = n
            one = np.array([n])
            watts = float(power.node_power_w(state, one)[0])
            frag = float(fragmentation(workload, state.gpu_free[one], state.cpu_free[one], state.model[one])[0])
            total_power += watts - node_power[n]
            total_frag += frag - node_frag[n]
            node_power[n], node_frag[n] = watts, frag
        arrived[k], used[k], power_w[k], frag_milli[k] = total_arrived, total_used, total_power, total_frag
        if progress is not None and k % 500 == 0:
            progress(k, size)
    return Replay(arrived, used, power_w, frag_milli, where, state.capacity_milli, taken)


def _cached_scores(state: GpuNodes, policy: Scorer, ask: Ask, cache: dict, version: np.ndarray) -> np.ndarray:
    key = policy.cache_key(ask)
    entry = cache.get(key)
    if entry is None:
        scores = policy.scores(state, ask, np.arange(len(state.names)))
        cache[key] = (scores, version.copy())
        return scores
    scores, seen = entry
    stale = np.flatnonzero(seen != version)
    if len(stale):
        scores[stale] = policy.scores(state, ask, stale)
        seen[stale] = version[stale]
    return scores


def at_loads(run: Replay, points: range = range(131)) -> dict[int, dict[str, float] | None]:
    """Per arrived load k (% of GPU capacity): the means over the pods whose arrived load rounds
    (half to even) to k, or to k - 1..k + 1 when none does (the FGD artifact's discrete points) of
    ``gpu_allocation`` (% of capacity), ``grar`` (allocated / arrived request), ``eopc_w``,
    ``frag_milli`` and ``frag_ratio`` (fragmented over unallocated milli); None where no pod is near k."""
    arrived = np.round(run.arrived_milli / run.capacity_milli * 100)  # numpy rounds half to even
    series = {
        "gpu_allocation": run.used_milli / run.capacity_milli * 100,
        "grar": run.used_milli / np.maximum(run.arrived_milli, 1),
        "eopc_w": run.power_w,
        "frag_milli": run.frag_milli,
        # the FGD paper's fragmentation rate: the share of the unallocated GPU milli that is fragmented
        "frag_ratio": run.frag_milli / np.maximum(run.capacity_milli - run.used_milli, 1),
    }
    out: dict[int, dict[str, float] | None] = {}
    for k in points:
        here = arrived == k
        if not here.any():
            here = (arrived >= k - 1) & (arrived <= k + 1)
        out[k] = {name: float(values[here].mean()) for name, values in series.items()} if here.any() else None
    return out


@dataclass(frozen=True)
class RunSpec:
    """One replay of a sweep: pod list ``trace`` (an openb list name, or a CSV path), node list
    (``gpu``: the 1,213 GPU nodes the FGD artifact uses; ``all``: with the 310 CPU-only ones),
    policy, seed, load (share of GPU capacity requested in all), load points every ``step_pct``."""

    trace: str
    policy: str
    seed: int
    load: float
    step_pct: int = 5
    nodes: str = "gpu"
    data_dir: str | None = None


def run_rows(spec: RunSpec) -> list[dict]:
    """Tidy rows, one per load point, of one replay (picklable: executors run these)."""
    nodes, trace = _inputs(spec.trace, spec.nodes, spec.data_dir)
    policy = scorer(spec.policy, trace, nodes)
    rng = np.random.default_rng(spec.seed)
    arrivals = inflate(trace, nodes.capacity_milli, spec.load, rng)
    start = time.perf_counter()
    run = replay(nodes, arrivals, policy, rng, TargetWorkload.of_trace(trace, nodes.model_names))
    wall = time.perf_counter() - start
    top = round(spec.load * 100)
    rows = []
    for k, values in at_loads(run, range(spec.step_pct, top + 1, spec.step_pct)).items():
        if values is None:
            continue
        rows.append(
            {
                "trace": spec.trace,
                "policy": spec.policy,
                "seed": spec.seed,
                "load": round(k / 100, 4),
                "gpu_allocation": round(values["gpu_allocation"], 4),
                "grar": round(values["grar"], 6),
                "eopc_w": round(values["eopc_w"], 1),
                "frag_gpus": round(values["frag_milli"] / 1000, 3),
                "frag_ratio": round(values["frag_ratio"], 6),
                "pods": len(arrivals.names),
                "failed_pods": run.failed,
                "wall_s": round(wall, 3),
            }
        )
    return rows


_loaded: dict[tuple, tuple[GpuNodes, Trace]] = {}


def _inputs(trace: str, node_list: str, data_dir: str | None) -> tuple[GpuNodes, Trace]:
    """The node list and pod list (read once per process)."""
    key = (trace, node_list, data_dir)
    if key not in _loaded:
        directory = resolve_data_dir(data_dir)
        if node_list not in NODE_LISTS:
            raise SnapshotError([f"--nodes: 'gpu' or 'all', got '{node_list}'"])
        missing = missing_data_dir(directory, data_dir)
        if missing:
            raise SnapshotError([missing])
        if trace.endswith(".csv"):
            path = Path(trace)
        else:
            known = pod_lists(directory)
            if trace not in known:
                raise SnapshotError([f"--trace: unknown pod list '{trace}'; {directory} has {', '.join(known) or 'none'} (or give a .csv path)"])
            path = directory / f"{POD_LIST_PREFIX}{trace}.csv"
        _loaded[key] = (read_gpu_nodes(directory / NODE_LISTS[node_list]), read_trace(path))
    return _loaded[key]
