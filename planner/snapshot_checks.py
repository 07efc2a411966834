"""The checks a field-by-field read of a snapshot cannot make: duplicate names, unknown references,
bad values, NUMA domains, the devices placed pods hold (as ``rules.device_breaks`` and ``rules.dra_breaks``
allow) and gang
sizes. ``snapshot.consistency_problems`` runs them first."""

from __future__ import annotations

import math

from planner import rules
from planner.cluster import POD_COUNT, Cluster, Pod


def _duplicates(names: list[str], collection: str) -> list[str]:
    seen: dict[str, int] = {}
    problems = []
    for i, name in enumerate(names):
        if name in seen:
            problems.append(f"{collection}[{i}].name: duplicate name '{name}' (first used by {collection}[{seen[name]}])")
        else:
            seen[name] = i
    return problems


def reference_problems(cluster: Cluster) -> list[str]:
    """Problems a field-by-field check cannot see: duplicate names, unknown references, bad values."""
    problems = _duplicates([n.name for n in cluster.nodes], "nodes")
    problems += _duplicates([p.name for p in cluster.pods], "pods")
    problems += _duplicates([j.name for j in cluster.jobs], "jobs")
    nodes = cluster.node_index()
    jobs = cluster.job_index()
    for i, pod in enumerate(cluster.pods):
        where = f"pods[{i}]"
        if pod.gpus >= 1 and not float(pod.gpus).is_integer():
            problems.append(f"{where}.gpus: {pod.gpus} is neither a whole number nor a share below 1")
        if pod.node is not None and pod.node not in nodes:
            problems.append(f"{where}.node: unknown node '{pod.node}'")
        if pod.job is not None and pod.job not in jobs:
            problems.append(f"{where}.job: unknown job '{pod.job}' (declare it under 'jobs')")
        for field, value in (("checkpoint_s", pod.checkpoint_s), ("started_s", pod.started_s)):
            if value is not None and value > cluster.time_s:
                problems.append(f"{where}.{field}: {value:g} is later than the snapshot time_s {cluster.time_s:g}")
        if POD_COUNT in pod.requests:
            problems.append(f"{where}.requests.{POD_COUNT}: every pod takes one pod slot of its node; leave it out")
        if len(set(pod.anti_affinity)) != len(pod.anti_affinity):
            problems.append(f"{where}.anti_affinity: a group is listed twice")
        if pod.standby and (pod.priority != "HP" or pod.node is None):
            problems.append(
                f"{where}.standby: only a running HP pod can be on standby (it lends its GPUs and keeps its reservation); "
                f"this pod is {'pending' if pod.node is None else 'LP'}"
            )
    problems += _numa_problems(cluster)
    problems += _device_problems(cluster)
    problems += _dra_problems(cluster)
    problems += _gang_problems(cluster)
    return problems


def _numa_problems(cluster: Cluster) -> list[str]:
    """NUMA domains: devices in range and in one domain each, CPUs within the node, sockets all or none."""
    problems = []
    for i, node in enumerate(cluster.nodes):
        if not node.numa:
            continue
        owner: dict[int, int] = {}
        for d, domain in enumerate(node.numa):
            where = f"nodes[{i}].numa[{d}]"
            bad = [g for g in domain.gpu_indexes if not 0 <= g < node.gpus]
            if bad:
                problems.append(f"{where}.gpu_indexes: {bad} outside 0..{node.gpus - 1}")
            for g in domain.gpu_indexes:
                if g in owner:
                    first = f"numa[{owner[g]}]" if owner[g] != d else "this domain"
                    problems.append(f"{where}.gpu_indexes: GPU {g} is already listed in {first}; a GPU belongs to one NUMA domain")
                owner[g] = d
        problems += _duplicates([domain.name for domain in node.numa], f"nodes[{i}].numa")
        cpus = math.fsum(domain.cpus for domain in node.numa)
        if cpus > node.cpus + 1e-9:
            problems.append(f"nodes[{i}].numa: the domains hold {cpus:g} CPUs, more than the node's {node.cpus:g}")
        with_socket = [domain.socket is not None for domain in node.numa]
        if any(with_socket) and not all(with_socket):
            d = with_socket.index(False)
            problems.append(f"nodes[{i}].numa[{d}].socket: missing; give every NUMA domain of the node its socket, or none")
    return problems


def _device_problems(cluster: Cluster) -> list[str]:
    """``gpu_indexes`` only on placed pods, and on each node as ``rules.device_breaks`` allows."""
    nodes = {node.name: node for node in cluster.nodes}
    index = {pod.name: i for i, pod in enumerate(cluster.pods)}
    problems = []
    on_node: dict[str, list[Pod]] = {}
    for i, pod in enumerate(cluster.pods):
        if pod.gpu_indexes is None:
            continue
        if pod.node is None:
            problems.append(f"pods[{i}].gpu_indexes: pod '{pod.name}' is pending and holds no devices; remove gpu_indexes")
        elif pod.node in nodes:  # an unknown node is reported as such
            on_node.setdefault(pod.node, []).append(pod)
    for name, pods in on_node.items():
        for brk in rules.device_breaks(nodes[name], pods):
            assert brk.pod is not None  # a device break names its pod
            problems.append(f"pods[{index[brk.pod]}].gpu_indexes: {brk.detail}")
    return problems


def _dra_problems(cluster: Cluster) -> list[str]:
    """DRA claims need nodes that list their ``resources`` (the form every planner checks), and the
    devices placed pods' claims hold must be on their node and serve them (``rules.dra_breaks``)."""
    claimed = [i for i, pod in enumerate(cluster.pods) if pod.device_claims]
    if not claimed:
        return []
    problems = [
        f"nodes[{n}].resources: missing; pods with device_claims need every node to list its resources (a DRA request is charged there)"
        for n, node in enumerate(cluster.nodes)
        if node.resources is None
    ][:1]
    nodes = cluster.node_index()
    on_node: dict[str, list[Pod]] = {}
    for i in claimed:
        pod = cluster.pods[i]
        if pod.node is not None and pod.node in nodes:
            on_node.setdefault(pod.node, []).append(pod)
    index = {pod.name: i for i, pod in enumerate(cluster.pods)}
    for name, pods in sorted(on_node.items()):
        for brk in rules.dra_breaks(cluster.nodes[nodes[name]], pods):
            where = f"pods[{index[brk.pod]}].device_claims" if brk.pod is not None else f"nodes[{nodes[name]}].devices"
            problems.append(f"{where}: {brk.detail}")
    return problems


def _gang_problems(cluster: Cluster) -> list[str]:
    """``min_available`` cannot exceed the job's pods."""
    sizes: dict[str, int] = {}
    for pod in cluster.pods:
        if pod.job is not None:
            sizes[pod.job] = sizes.get(pod.job, 0) + 1
    problems = []
    for j, job in enumerate(cluster.jobs):
        if job.min_available is not None and job.min_available > sizes.get(job.name, 0):
            problems.append(f"jobs[{j}].min_available: {job.min_available} but the job has {sizes.get(job.name, 0)} pods")
    return problems
