"""The PWR paper's power model (Eq. 1-3) on the per-GPU state, in watts.

* GPU (Eq. 2): a device draws its model's TDP when anything is allocated on it, else its idle power
  (Table II of the paper: V100M16/V100M32 30/300 W, P100 25/250, T4 10/70, A10 30/150, G2 (A10)
  30/150, G3 (A100) 50/400).
* CPU (Eq. 1): per CPU *package* (Xeon E5-2682 v4: 16 cores, 2 vCPUs per core, 15 W idle, 120 W
  TDP). The paper's text says per core but its figures are per package, as is the reference plugin
  (Fr4nz83/PWR-plugin-kubernetes): a node has ceil(vCPUs / 32) packages, of which ceil(allocated
  vCPUs / 32) are active at TDP and the rest idle.
* Datacenter (Eq. 3): the sum over nodes (EOPC when taken over a replay).

On the openb GPU nodes (107,018 vCPUs, 6,212 GPUs) this gives 230.1 kW idle and 1,474.1 kW with every
device and package busy: 3,711 whole packages (nodes of 8, 16, 82 or 104 vCPUs round up), where the
spec's 224.6 kW and 1,430 kW assume 107,018 / 32 = 3,344 fractional ones. The reference plugin
(``GetEnergyConsumptionNode``) rounds up per node as here.
"""

from __future__ import annotations

import numpy as np

from planner.heuristics.gpu_nodes import MILLI, GpuNodes

GPU_POWER_W = {  # model -> (idle, TDP)
    "V100M16": (30.0, 300.0),
    "V100M32": (30.0, 300.0),
    "P100": (25.0, 250.0),
    "T4": (10.0, 70.0),
    "A10": (30.0, 150.0),
    "G2": (30.0, 150.0),
    "G3": (50.0, 400.0),
}
CPU_IDLE_W, CPU_MAX_W = 15.0, 120.0
VCPUS_PER_PACKAGE = 32  # 16 cores x 2 hyper-threads


class PowerModel:
    """Per-node power of a ``GpuNodes`` state; raises ``KeyError`` naming a GPU model with no figures."""

    def __init__(self, nodes: GpuNodes) -> None:
        missing = sorted({nodes.model_names[m] for m in np.unique(nodes.model[nodes.gpus > 0])} - set(GPU_POWER_W))
        if missing:
            raise KeyError(f"no power figures for GPU model(s) {', '.join(missing)}; known: {', '.join(sorted(GPU_POWER_W))}")
        idle = np.array([GPU_POWER_W.get(m, (0.0, 0.0))[0] for m in nodes.model_names])
        peak = np.array([GPU_POWER_W.get(m, (0.0, 0.0))[1] for m in nodes.model_names])
        self.gpu_idle, self.gpu_peak = idle[nodes.model], peak[nodes.model]
        self.exists = np.arange(nodes.gpu_free.shape[1])[None, :] < nodes.gpus[:, None]
        self.packages = -(-nodes.cpu_cap // (VCPUS_PER_PACKAGE * 1000))

    def node_power_w(
        self, nodes: GpuNodes, idx: np.ndarray | None = None, gpu_free: np.ndarray | None = None, cpu_free: np.ndarray | None = None
    ) -> np.ndarray:
        """Watts of nodes ``idx`` (default all), optionally in a hypothetical state of those rows."""
        idx = np.arange(len(nodes.names)) if idx is None else idx
        free = nodes.gpu_free[idx] if gpu_free is None else gpu_free
        cpu = nodes.cpu_free[idx] if cpu_free is None else cpu_free
        busy = (free < MILLI) & self.exists[idx]
        gpu = np.where(busy, self.gpu_peak[idx, None], self.gpu_idle[idx, None]) * self.exists[idx]
        active = -(-(nodes.cpu_cap[idx] - cpu) // (VCPUS_PER_PACKAGE * 1000))
        return gpu.sum(axis=1) + CPU_MAX_W * active + CPU_IDLE_W * (self.packages[idx] - active)

    def total_w(self, nodes: GpuNodes) -> float:
        return float(self.node_power_w(nodes).sum())
