"""Dynamic Resource Allocation: a pod's claims allocated from a node's devices, as kube-scheduler's
DynamicResources plugin allocates them, and the resources-by-name form every planner checks.

Each request of a claim has a *signature* (its class's and its own CEL selectors, evaluated once by the
importer) and draws ``count`` devices that serve the signature; a device serves one request at a time
(``allowMultipleAllocations`` devices are not modelled). Devices that serve the same signatures are one
*kind*. Where every signature finds at most one kind of device on each node (the importer checks it, and
locks a pod whose request would choose between kinds), allocation on a node is possible exactly when,
for each kind K on the node, the requests drawing from K ask for at most the free devices of K. That is
resources by name, which every planner already obeys (``static``, ``node`` and their array forms):

* a node offers ``sig-S`` = its devices serving S (none: not offered, so a pod needing S cannot arrive)
  and ``kind-K`` = its devices of kind K, or ``MAX_RESOURCE`` for a kind it does not have;
* a request for S charges ``count`` of ``sig-S`` and of every ``kind-K`` that serves S.

``allocation`` below is the allocation itself (a matching of requests to devices), which the snapshot
checks run on placed pods (the devices their claims hold must be on their node and serve them) and the
tests hold equal to the resources form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner.rules.base import RuleBreak

if TYPE_CHECKING:
    from planner.cluster import Node, Pod
    from planner.cluster_dra import DraDevice

DRA_DEVICES = "dra_devices"
DRA_PREFIX = "dra.planner.io/"
"""The domain of the resource names the DRA form uses."""


def device_id(device: DraDevice) -> str:
    """``driver/pool/device``: how a claim's allocation names a device."""
    return f"{device.driver}/{device.pool}/{device.name}"


def allocation(devices: Sequence[DraDevice], demands: Sequence[tuple[str, int]]) -> list[list[int]] | None:
    """Indexes into ``devices`` for each (signature, count) demand, each device used once; None when no
    such allocation exists. Augmenting paths (Kuhn's bipartite matching), exact for any overlap of
    signatures."""
    slots = [sig for sig, count in demands for _ in range(count)]
    serving: dict[str, list[int]] = {}
    for i, device in enumerate(devices):
        for sig in device.serves:
            serving.setdefault(sig, []).append(i)
    owner: list[int | None] = [None] * len(devices)
    for first in range(len(slots)):
        if not _augment(first, slots, serving, owner, set()):
            return None
    chosen: list[list[int]] = [[] for _ in demands]
    slot_demand = [d for d, (_, count) in enumerate(demands) for _ in range(count)]
    for i, held in enumerate(owner):
        if held is not None:
            chosen[slot_demand[held]].append(i)
    return chosen


def _augment(slot: int, slots: list[str], serving: dict[str, list[int]], owner: list[int | None], seen: set[int]) -> bool:
    stack: list[tuple[int, int]] = [(slot, 0)]  # iterative DFS: (slot, next candidate), no recursion limit
    path: list[tuple[int, int]] = []
    while stack:
        current, k = stack.pop()
        candidates = serving.get(slots[current], [])
        while k < len(candidates) and candidates[k] in seen:
            k += 1
        if k == len(candidates):
            if path:
                path.pop()
            continue
        device = candidates[k]
        seen.add(device)
        stack.append((current, k + 1))
        holder = owner[device]
        path.append((current, device))
        if holder is None:
            for s, d in path:
                owner[d] = s
            return True
        stack.append((holder, 0))
    return False


def dra_breaks(node: Node, residents: Sequence[Pod], arriving: Sequence[Pod] = ()) -> list[RuleBreak]:
    """What is wrong with the devices ``residents`` of ``node`` hold and ``arriving`` pods ask for: a held
    device the node does not publish, or that does not serve its request, or that two claims hold; and
    whether the requests of arriving pods (a fresh claim each) and of residents' claims that hold nothing
    yet can be allocated from the devices left free."""
    devices = node.devices or []
    index = {device_id(d): i for i, d in enumerate(devices)}
    held: dict[int, str] = {}
    breaks: list[RuleBreak] = []
    fresh: list[tuple[str, int]] = []
    for pod in arriving:
        fresh += [(r.signature, r.count) for c in pod.device_claims or () if not c.shared for r in c.requests]
    for pod in residents:
        for claim in pod.device_claims or ():
            for request in claim.requests:
                if not request.devices:
                    if not claim.shared or claim.claim not in held.values():
                        fresh.append((request.signature, request.count))
                    continue
                for name in request.devices:
                    i = index.get(name)
                    if i is None:
                        breaks.append(
                            RuleBreak(
                                DRA_DEVICES, node.name, pod.name, f"claim '{claim.claim}' holds device '{name}', which node '{node.name}' does not publish"
                            )
                        )
                    elif request.signature not in devices[i].serves:
                        breaks.append(
                            RuleBreak(DRA_DEVICES, node.name, pod.name, f"device '{name}' does not serve request '{request.name}' of claim '{claim.claim}'")
                        )
                    elif held.setdefault(i, claim.claim) != claim.claim:
                        breaks.append(RuleBreak(DRA_DEVICES, node.name, pod.name, f"device '{name}' is held by claims '{held[i]}' and '{claim.claim}'"))
    pods = [*residents, *arriving]
    claims_here = {c.claim for pod in pods for c in pod.device_claims or ()}
    taken = set(held) | {i for i, d in enumerate(devices) if d.held_by is not None and d.held_by not in claims_here}
    free = [d for i, d in enumerate(devices) if i not in taken]
    if fresh and allocation(free, fresh) is None:
        asked = ", ".join(f"{count} x {sig}" for sig, count in fresh)
        breaks.append(
            RuleBreak(DRA_DEVICES, node.name, None, f"the claims ask for {asked}; node '{node.name}' has {len(free)} free devices, which cannot serve them all")
        )
    return breaks
