"""Proofs that a job of the spot replay (``spot.py``) cannot start now, from the room its pods' rules
leave on the nodes: cheaper than the decision they spare (module docstring of ``spot.py``)."""

from __future__ import annotations

import numpy as np

from planner import rules
from planner.simulate.window import Window


def places(w: Window, p: int, workers: int, nodes: np.ndarray | None = None) -> np.ndarray:
    """Per node (of ``nodes``, default: those pod p's static rules allow), how many pods like p
    fit, capped at ``workers``, in the GPUs, CPUs and memory left by the pods that would stay:
    for an HP pod the HP pods (standby reservations included; spot pods may all be evicted),
    for a spot pod, which preempts nobody, every pod."""
    cs = w.ps.cs
    everywhere = nodes is None  # every node the static rules allow
    if nodes is None:
        nodes = w.eligible_nodes(int(cs.pod_signature[p]))
    fits = np.full(len(nodes), float(workers))
    for room, need in zip(w.room(bool(cs.pod_hp[p])), (cs.pod_whole[p], cs.pod_cpus[p], cs.pod_mem[p])):
        if need > 0:
            fits = np.minimum(fits, np.floor(room[nodes] / need))
    fits = np.maximum(fits, 0)
    return fits if everywhere else fits * cs.eligible[cs.pod_signature[p], nodes]


def none_fits(w: Window, p: int, where: set[int]) -> bool:
    """Whether no pod like p fits on any of the nodes ``where`` (``places`` on them; its scalar
    form on a few nodes)."""
    if len(where) > 8:
        return not places(w, p, 1, np.array(sorted(where), dtype=np.int64)).any()
    cs = w.ps.cs
    hp = bool(cs.pod_hp[p])
    whole, cpus, mem = int(cs.pod_whole[p]), float(cs.pod_cpus[p]), float(cs.pod_mem[p])
    eligible = cs.eligible[cs.pod_signature[p]]
    for n in where:
        if not eligible[n]:
            continue
        held = (
            (int(cs.hp_whole[n]), float(cs.hp_cpus[n]), float(cs.hp_mem[n]))
            if hp
            else (int(cs.whole_used[n] + cs.share_devices[n]), float(cs.used_cpus[n]), float(cs.used_mem[n]))
        )
        if whole <= cs.cap_gpus[n] - held[0] and cpus <= cs.cap_cpus[n] - held[1] + rules.EPS and mem <= cs.cap_mem[n] - held[2] + rules.EPS:
            return False
    return True


def too_few_places(w: Window, name: str, workers: int) -> bool:
    """A proof that job ``name`` cannot start now: the nodes together hold fewer of its
    (identical) pods than it has (``places``; first the cached bound on GPUs alone, which
    usually settles it)."""
    p = w.pods_of(name)[0]
    return w.gpu_places_bound(p) < workers or float(places(w, p, workers).sum()) < workers
