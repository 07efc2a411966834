"""Node scores for GPU-sharing placement on the per-GPU model (``heuristics/gpu_nodes.py``): the policies
the FGD paper (Weng et al., USENIX ATC'23) measured, with the formulas of its simulator
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin/*.go``; facts, re-implemented):

* ``fgd``: Fragmentation Gradient Descent. The fragmentation of a node for a task class m (CPU
  milli, GPU milli per device, devices, allowed models) is the free GPU milli m cannot use: all of it
  when m is CPU-only, may not use the node's model, or does not fit (GPU or CPU); else the free milli
  of the devices too small for m. F_n = sum_m p_m frag_n(m) over the *target workload* (the most
  frequent classes of the trace covering 95% of its pods, popularities renormalised). Score
  ``trunc(100 sigmoid((F_before - F_after) / 1000))``; a share goes to the device that scores best.
  F is summed in the reference's floating-point order (``fragmentation``): the truncation turns a
  rounding difference into a different node, and with this order a replay of the reference's
  arrivals places every pod where the reference does (``benchmarks/reference_equivalence.py``).
* ``bestfit``: ``trunc(100 (1 - (0.5 cpu_left / 128000 + 0.5 gpu_left / 8000)))``, then min-max
  normalised over the feasible nodes to integers 0..100 (all 0 when equal).
* ``dotprod``: ``trunc(100 (1 - <node free, pod ask> / 2))`` over (CPU / 128000, GPU milli / 8000).
* ``gpu-packing``: bands: a share or devices on partly used GPUs (50..100, fuller is better), idle
  devices of a used node (33..50), an idle node (max(33 - GPUs, GPUs)); CPU-only pods score 0.
* ``gpu-clustering``: 25 x used share of the node, plus 75 if the node holds only pods of the
  pod's kind (share, 1-GPU, 2-GPU, ...), 50 if also others, 25 if no GPU pod, else 0.
* ``random``: a uniformly random feasible node (no score).
* ``pwr`` and ``pwr-fgd:<alpha>``: the PWR paper's power-aware score and its combination with FGD
  as the paper's runs compute it (see ``Pwr`` and ``PwrFgd``); ``pwr-fgd-eq5:<alpha>``: the same
  combination as the paper's Eq. (5) prints it, over raw watts and GPUs (``PwrFgdEq5``);
* ``k8s-least-allocated`` and ``k8s-most-allocated``: Kubernetes' default scoring and its binpacking
  variant over CPU, memory and GPU (``KubernetesAllocated``).

Scores are integers as in the simulator; the replay breaks ties by a seeded node rank. A share pod
goes to the best-fit device (least free that holds it) except under ``fgd`` and ``pwr-fgd`` (FGD's
best device), ``pwr`` (the first busy device that holds it, else the first idle one: the reference
plugin's choice), ``pwr-fgd-eq5`` (the first device of least objective) and ``random`` (a uniformly
random device that holds it); whole GPUs take the lowest idle devices.
Constants 128000 and 8000 are the simulator's largest node (128 CPUs, 8 GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.heuristics.gpu_nodes import (
    MILLI,
    GpuNodes,
    Trace,
    after_placing,
    best_fit_device,
    idle_devices,
)
from planner.heuristics.power import PowerModel

MAX_CPU_MILLI = 128_000
MAX_GPU_MILLI = 8_000
TYPICAL_SHARE = 0.95


@dataclass(frozen=True)
class Ask:
    """One pod's request: milli-CPUs, MiB, devices, milli per device, allowed models, kind (``pod_tag``)."""

    cpu: int
    mem: int
    num_gpu: int
    milli: int
    models: tuple[str, ...]
    tag: int

    @property
    def is_share(self) -> bool:
        return self.num_gpu == 1 and self.milli < MILLI

    @property
    def key(self) -> tuple:
        """What a node's score depends on (memory only filters)."""
        return (self.cpu, self.num_gpu, self.milli, self.models)


@dataclass
class TargetWorkload:
    """FGD's task classes and their popularity."""

    cpu: np.ndarray
    milli: np.ndarray
    num_gpu: np.ndarray
    allowed: np.ndarray  # [class, model] may the class use the model
    share: np.ndarray  # popularity, sums to 1

    @classmethod
    def of_trace(cls, trace: Trace, model_names: list[str], coverage: float = TYPICAL_SHARE) -> TargetWorkload:
        """The most frequent (CPU, GPU milli, devices, models) classes covering ``coverage`` of the pods
        (ties in count: larger key first), popularities renormalised over those."""
        counts: dict[tuple, int] = {}
        for key in zip(trace.cpu.tolist(), trace.gpu_milli.tolist(), trace.num_gpu.tolist(), trace.models):
            counts[key] = counts.get(key, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        kept, total = [], 0
        for key, count in ranked:
            kept.append((key, count))
            total += count
            if total >= coverage * len(trace.names):
                break
        allowed = np.array([[not models or name in models for name in model_names] for (_, _, _, models), _ in kept], dtype=bool)
        pods = float(len(trace.names))  # the reference's arithmetic: (count / pods) / (kept / pods)
        return cls(
            np.array([k[0] for k, _ in kept]),
            np.array([k[1] for k, _ in kept]),
            np.array([k[2] for k, _ in kept]),
            allowed,
            np.array([c for _, c in kept], dtype=np.float64) / pods / (total / pods),
        )


# The reference's bins for a class's amount (``FragRatioDataMap`` in its ``pkg/utils/frag.go``): Q1 lacks
# GPU and CPU, Q2 lacks GPU (and takes the unusable part of a class that fits), Q4 lacks CPU, XL/XR a
# CPU-only class with/without the CPU, NA a model the class may not use. Q3 (the usable part) is not
# fragmentation.
_Q1, _Q2, _Q4, _XL, _XR, _NA = 0, 1, 3, 4, 5, 6


def fragmentation(w: TargetWorkload, gpu_free: np.ndarray, cpu_free: np.ndarray, model: np.ndarray) -> np.ndarray:
    """F_n (milli-GPUs) of each row: ``gpu_free`` [rows, devices], ``cpu_free`` and ``model`` [rows].

    Summed in the reference simulator's floating-point order (each bin accumulates its classes in
    workload order, then the bins are added in bin order), so that FGD's truncated score is the same
    where F does not change: a sum in another order can leave a difference of 1e-13 between before and
    after, which truncates 100 sigmoid(0) = 50 to 49 and changes the node chosen."""
    total = gpu_free.sum(axis=1)
    fits = gpu_free[:, :, None] >= w.milli[None, None, :]  # [rows, devices, classes]
    usable = np.einsum("rd,rdc->rc", gpu_free, fits)
    cpu_ok = cpu_free[:, None] >= w.cpu[None, :]
    hosts = fits.sum(axis=1) >= w.num_gpu[None, :]
    allowed = w.allowed[:, model].T
    gpu_class = np.broadcast_to(w.milli[None, :] > 0, cpu_ok.shape)
    kind = np.where(~gpu_class, np.where(cpu_ok, _XL, _XR), np.where(~allowed, _NA, np.where(cpu_ok, _Q2, np.where(hosts, _Q4, _Q1))))
    frag = np.where(gpu_class & allowed & hosts & cpu_ok, total[:, None] - usable, total[:, None])
    amount = w.share[None, :] * frag
    out = np.zeros(len(total))
    for b in (_Q1, _Q2, _Q4, _XL, _XR, _NA):
        out = out + np.cumsum(np.where(kind == b, amount, 0.0), axis=1)[:, -1]  # cumsum adds left to right
    return out


def share_on_each_device(free: np.ndarray, milli: int) -> np.ndarray:
    """[rows x devices, devices]: row r's free milli with a share of ``milli`` on device g, at row
    ``r * devices + g`` (devices too small go negative: callers mask them)."""
    rows, width = free.shape
    after = np.repeat(free[:, None, :], width, axis=1)  # [node, device taken, devices]
    after[:, np.arange(width), np.arange(width)] -= milli
    return after.reshape(rows * width, width)


def _sigmoid_score(gain: np.ndarray) -> np.ndarray:
    """``trunc(sigmoid(gain / 1000) x 100)`` in the reference's order of operations."""
    return np.trunc(1.0 / (1.0 + np.exp(-(gain / 1000.0))) * 100.0).astype(np.int64)


class Scorer:
    """A placement policy: integer node scores, and the devices a pod takes on the chosen node."""

    name = ""
    cached = True  # a node's score depends on its own state and the ask only
    uses_score = True
    uses_memory = False  # scores read the pod's memory (else memory only filters)

    def cache_key(self, ask: Ask) -> tuple[object, ...]:
        """What this policy's node scores depend on besides the node."""
        return (*ask.key, ask.mem) if self.uses_memory else ask.key

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def normalise(self, scores: np.ndarray) -> np.ndarray:
        return scores

    def devices(self, nodes: GpuNodes, n: int, ask: Ask, rng: np.random.Generator) -> list[int]:
        if ask.num_gpu == 0:
            return []
        if ask.is_share:
            return [int(best_fit_device(nodes.gpu_free[n], ask.milli))]
        return idle_devices(nodes.gpu_free[n], ask.num_gpu)


class RandomScorer(Scorer):
    name = "random"
    uses_score = False

    def devices(self, nodes: GpuNodes, n: int, ask: Ask, rng: np.random.Generator) -> list[int]:
        if ask.is_share:
            return [int(rng.choice(np.flatnonzero(nodes.gpu_free[n] >= ask.milli)))]
        return super().devices(nodes, n, ask, rng)


class DotProd(Scorer):
    name = "dotprod"

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        dot = (nodes.cpu_free[idx] / MAX_CPU_MILLI) * (ask.cpu / MAX_CPU_MILLI) + (nodes.gpu_free[idx].sum(axis=1) / MAX_GPU_MILLI) * (
            ask.milli * ask.num_gpu / MAX_GPU_MILLI
        )
        return np.trunc(100.0 * (1.0 - dot / 2.0)).astype(np.int64)


class BestFit(Scorer):
    name = "bestfit"

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        left = 0.5 * (nodes.cpu_free[idx] - ask.cpu) / MAX_CPU_MILLI + 0.5 * (nodes.gpu_free[idx].sum(axis=1) - ask.milli * ask.num_gpu) / MAX_GPU_MILLI
        return np.trunc(100.0 * (1.0 - left)).astype(np.int64)

    def normalise(self, scores: np.ndarray) -> np.ndarray:
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            return np.zeros_like(scores)
        return (scores - low) * 100 // (high - low)


class GpuPacking(Scorer):
    name = "gpu-packing"

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        if ask.num_gpu == 0:
            return np.zeros(len(idx), dtype=np.int64)
        free, gpus = nodes.gpu_free[idx], nodes.gpus[idx]
        idle = (free == MILLI).sum(axis=1)
        untouched = idle == gpus
        if ask.is_share:
            taken = np.where(free >= ask.milli, free, MILLI + 1).min(axis=1)  # the fullest device that holds it
            partial = np.maximum(100 - (taken * 100 // MILLI) // 10, 50)
            score = np.where(taken == MILLI, max(50 - 1, 33), partial)
        else:
            score = np.full(len(idx), max(50 - ask.num_gpu, 33), dtype=np.int64)
        return np.where(untouched, np.maximum(33 - gpus, gpus), score).astype(np.int64)


class GpuClustering(Scorer):
    name = "gpu-clustering"

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        if ask.num_gpu == 0:
            return np.zeros(len(idx), dtype=np.int64)
        base = (25 * (MAX_GPU_MILLI - nodes.gpu_free[idx].sum(axis=1))) // MAX_GPU_MILLI
        tags = nodes.tags[idx]
        same, gpu_pods = tags[:, ask.tag], tags.sum(axis=1)
        bonus = np.where(same > 0, np.where(same == gpu_pods, 75, 50), np.where(gpu_pods == 0, 25, 0))
        return (base + bonus).astype(np.int64)


class KubernetesAllocated(Scorer):
    """kube-scheduler's NodeResourcesFit ``LeastAllocated`` (or ``MostAllocated``) over CPU, memory
    and GPU milli with equal weights: per resource ``(capacity - used after) * 100 // capacity`` (or
    ``used after * 100 // capacity``), averaged with integer division over the resources the node
    has (a node without GPUs is scored on CPU and memory)."""

    uses_memory = True

    def __init__(self, most: bool) -> None:
        self.most = most
        self.name = "k8s-most-allocated" if most else "k8s-least-allocated"

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        gpu_cap = nodes.gpus[idx] * MILLI
        parts = [
            (nodes.cpu_cap[idx], nodes.cpu_cap[idx] - nodes.cpu_free[idx] + ask.cpu),
            (nodes.mem_cap[idx], nodes.mem_cap[idx] - nodes.mem_free[idx] + ask.mem),
            (gpu_cap, gpu_cap - nodes.gpu_free[idx].sum(axis=1) + ask.milli * ask.num_gpu),
        ]
        total = np.zeros(len(idx), dtype=np.int64)
        count = np.zeros(len(idx), dtype=np.int64)
        for capacity, used in parts:
            has = capacity > 0
            safe = np.where(has, capacity, 1)
            held = np.clip(used, 0, safe)
            total += np.where(has, (held if self.most else safe - held) * 100 // safe, 0)
            count += has
        return total // np.maximum(count, 1)


class Fgd(Scorer):
    name = "fgd"

    def __init__(self, workload: TargetWorkload) -> None:
        self.workload = workload

    def _device_scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        """[nodes, devices]: the score of the share on each device, -1 where it does not fit."""
        free, cpu, model = nodes.gpu_free[idx], nodes.cpu_free[idx], nodes.model[idx]
        rows, width = free.shape
        before = fragmentation(self.workload, free, cpu, model)
        after = fragmentation(self.workload, share_on_each_device(free, ask.milli), np.repeat(cpu - ask.cpu, width), np.repeat(model, width)).reshape(
            rows, width
        )
        return np.where(free >= ask.milli, _sigmoid_score(before[:, None] - after), -1)

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        if ask.is_share:
            return self._device_scores(nodes, ask, idx).max(axis=1)
        free, cpu, model = nodes.gpu_free[idx], nodes.cpu_free[idx], nodes.model[idx]
        before = fragmentation(self.workload, free, cpu, model)
        after = after_placing(free, ask.num_gpu, ask.milli)  # whole GPUs: which idle devices does not change F
        return _sigmoid_score(before - fragmentation(self.workload, after, cpu - ask.cpu, model))

    def devices(self, nodes: GpuNodes, n: int, ask: Ask, rng: np.random.Generator) -> list[int]:
        if ask.is_share:
            return [int(np.argmax(self._device_scores(nodes, ask, np.array([n]))[0]))]
        return super().devices(nodes, n, ask, rng)


class Pwr(Scorer):
    """PWR (Algorithm 1 of the PWR paper): the node whose power grows least. Raw score: the increase
    in watts (``heuristics/power.py``) with the pod on its best-fit devices; normalised over the feasible
    nodes as the reference plugin does: ``(max - d) * 100 // (max - min)`` of the increases d, all 100
    when equal."""

    name = "pwr"

    def __init__(self, power: PowerModel) -> None:
        self.power = power

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        after = after_placing(nodes.gpu_free[idx], ask.num_gpu, ask.milli)
        before = self.power.node_power_w(nodes, idx)
        return self.power.node_power_w(nodes, idx, after, nodes.cpu_free[idx] - ask.cpu) - before

    def normalise(self, scores: np.ndarray) -> np.ndarray:
        low, high = float(scores.min()), float(scores.max())
        if high == low:
            return np.full(len(scores), 100, dtype=np.int64)
        return np.floor((high - scores) * 100 / (high - low)).astype(np.int64)

    def devices(self, nodes: GpuNodes, n: int, ask: Ask, rng: np.random.Generator) -> list[int]:
        """The reference plugin's own device choice: a share goes to the first (lowest-indexed) device
        whose power grows least, i.e. the first busy device that holds it, else the first idle one."""
        if not ask.is_share:
            return super().devices(nodes, n, ask, rng)
        free = nodes.gpu_free[n][: nodes.gpus[n]]
        holds = free >= ask.milli
        busy = np.flatnonzero(holds & (free < MILLI))
        return [int(busy[0] if len(busy) else np.flatnonzero(holds)[0])]


class PwrFgd(Scorer):
    """The PWR paper's combination as its reference code runs it (not Eq. (5) over datacenter totals):
    Kubernetes sums the plugins' integer scores times integer weights, ``round(1000 alpha)`` x PWR's
    normalised score + ``1000 - round(1000 alpha)`` x FGD's score, so ties are exact. A share takes
    FGD's device (the plugin with the larger weight chooses the device in the reference runs; FGD's
    is larger for every alpha they ran, 0.05-0.5)."""

    def __init__(self, alpha: float, power: PowerModel, workload: TargetWorkload) -> None:
        self.alpha, self.pwr, self.fgd = alpha, Pwr(power), Fgd(workload)
        self.name = f"pwr-fgd:{alpha:g}"

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        return np.stack([self.pwr.scores(nodes, ask, idx), self.fgd.scores(nodes, ask, idx).astype(np.float64)], axis=1)

    def normalise(self, scores: np.ndarray) -> np.ndarray:
        weight = round(self.alpha * 1000)
        return weight * self.pwr.normalise(scores[:, 0]) + (1000 - weight) * scores[:, 1].astype(np.int64)

    def devices(self, nodes: GpuNodes, n: int, ask: Ask, rng: np.random.Generator) -> list[int]:
        return self.fgd.devices(nodes, n, ask, rng)


class PwrFgdEq5(Scorer):
    """The PWR paper's Eq. (5) as printed: the assignment that minimises alpha x P_datacenter +
    (1 - alpha) x F_datacenter, P in watts (Eq. 1-3) and F in GPUs (Eq. 4, the paper's free GPU
    shares). Only the chosen node's terms change, so the node (and, for a share, the device) with the
    least ``alpha dP + (1 - alpha) dF`` wins. The paper's runs instead sum normalised plugin scores
    (``PwrFgd``); this reading shows what the printed formula does. Objectives are rounded to 1e-9 so
    that equal nodes tie exactly whatever rows are scored together."""

    def __init__(self, alpha: float, power: PowerModel, workload: TargetWorkload) -> None:
        self.alpha, self.power, self.workload = alpha, power, workload
        self.name = f"pwr-fgd-eq5:{alpha:g}"

    def _objective(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        """[nodes, choices]: the objective per device a share may take (inf where it does not fit),
        or of the one way whole GPUs are taken."""
        free, cpu, model = nodes.gpu_free[idx], nodes.cpu_free[idx], nodes.model[idx]
        rows, width = free.shape
        choices = width if ask.is_share else 1
        after = share_on_each_device(free, ask.milli) if ask.is_share else after_placing(free, ask.num_gpu, ask.milli)
        cpu_after = np.repeat(cpu - ask.cpu, choices)
        d_watts = (
            self.power.node_power_w(nodes, np.repeat(idx, choices), after, cpu_after).reshape(rows, choices) - self.power.node_power_w(nodes, idx)[:, None]
        )
        d_frag = (
            fragmentation(self.workload, after, cpu_after, np.repeat(model, choices)).reshape(rows, choices)
            - fragmentation(self.workload, free, cpu, model)[:, None]
        )
        value = np.round(self.alpha * d_watts + (1 - self.alpha) * d_frag / MILLI, 9)
        return np.where(free >= ask.milli, value, np.inf) if ask.is_share else value

    def scores(self, nodes: GpuNodes, ask: Ask, idx: np.ndarray) -> np.ndarray:
        return -self._objective(nodes, ask, idx).min(axis=1)

    def devices(self, nodes: GpuNodes, n: int, ask: Ask, rng: np.random.Generator) -> list[int]:
        if ask.is_share:
            return [int(np.argmin(self._objective(nodes, ask, np.array([n]))[0]))]
        return super().devices(nodes, n, ask, rng)


SCORERS = (
    "fgd",
    "bestfit",
    "gpu-packing",
    "gpu-clustering",
    "dotprod",
    "random",
    "pwr",
    "pwr-fgd:<alpha>",
    "pwr-fgd-eq5:<alpha>",
    "k8s-least-allocated",
    "k8s-most-allocated",
)
ALPHA_POLICIES = ("pwr-fgd:", "pwr-fgd-eq5:")


def policy_problem(name: str) -> str | None:
    """Why ``name`` is not a policy (None when it is), naming the policy or its alpha."""
    if name.startswith(ALPHA_POLICIES):
        text = name.split(":", 1)[1]
        try:
            alpha = float(text)
        except ValueError:
            return f"policy {name}: alpha must be a number in [0, 1], got {text!r}"
        return None if 0.0 <= alpha <= 1.0 else f"policy {name}: alpha must be in [0, 1], got {alpha:g}"
    if name in ("fgd", "pwr", "random", "dotprod", "bestfit", "gpu-packing", "gpu-clustering", "k8s-least-allocated", "k8s-most-allocated"):
        return None
    return f"unknown policy {name!r}; choose one of {', '.join(SCORERS)}"


def scorer(name: str, trace: Trace, nodes: GpuNodes) -> Scorer:
    """The policy ``name`` (see ``SCORERS``); FGD's target workload comes from ``trace``. Raises
    ``ValueError`` naming the policy or alpha when either is unknown or out of range."""
    if name == "fgd":
        return Fgd(TargetWorkload.of_trace(trace, nodes.model_names))
    if name == "pwr":
        return Pwr(PowerModel(nodes))
    problem = policy_problem(name)
    if problem:
        raise ValueError(problem)
    if name.startswith(ALPHA_POLICIES):
        kind = PwrFgd if name.startswith("pwr-fgd:") else PwrFgdEq5
        return kind(float(name.split(":", 1)[1]), PowerModel(nodes), TargetWorkload.of_trace(trace, nodes.model_names))
    if name.startswith("k8s-"):
        return KubernetesAllocated(most=name == "k8s-most-allocated")
    return {s.name: s for s in (RandomScorer, DotProd, BestFit, GpuPacking, GpuClustering)}[name]()
