"""Hypothesis strategies: small random clusters that are valid snapshots by construction."""

from __future__ import annotations

from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod

MODELS = ["A100", "H800", ""]
SHARES = [0.1, 0.25, 0.3, 0.5, 0.6, 0.7]
NAMED = ["example.com/fpga", "rdma/hca", "ephemeral-storage"]
NODE_RESOURCES = st.one_of(
    st.none(),
    st.none(),
    st.dictionaries(st.sampled_from([*NAMED, "pods"]), st.integers(0, 4), max_size=4),
)
"""Resources by name (issue 40): most nodes list none (today's meaning); some list a few, with the
pod count among them, so plans meet NodeResourcesFit by name and the pod-slot limit."""
POD_REQUESTS = st.one_of(st.just({}), st.just({}), st.dictionaries(st.sampled_from(NAMED), st.integers(1, 2), max_size=2))
HOST_PORTS = st.sampled_from([[], [], [], [{"port": 8080}], [{"port": 8080, "protocol": "UDP"}]])


@st.composite
def nodes(draw, min_size: int = 1, max_size: int = 6) -> list[Node]:
    count = draw(st.integers(min_size, max_size))
    out = []
    for i in range(count):
        out.append(
            Node(
                name=f"n-{i}",
                gpu_model=draw(st.sampled_from(MODELS)),
                gpus=draw(st.sampled_from([0, 1, 2, 4, 8])),
                cpus=draw(st.sampled_from([4.0, 16.0, 32.0, 64.0])),
                memory_gib=draw(st.sampled_from([16.0, 64.0, 256.0])),
                asw=draw(st.sampled_from(["asw-0", "asw-1", None])),
                spine=draw(st.sampled_from(["spine-0", None])),
                labels=draw(st.sampled_from([{}, {"pool": "train"}, {"pool": "infer"}])),
                schedulable=draw(st.booleans().filter(lambda b: b) | st.booleans()),
                eviction_count=draw(st.integers(0, 3)),
                resources=draw(NODE_RESOURCES),
            )
        )
    return out


@st.composite
def clusters(draw, max_nodes: int = 6, max_pods: int = 14, max_jobs: int = 3) -> Cluster:
    """A consistent cluster: pods are put on their drawn node only where the plain rules allow."""
    node_list = draw(nodes(max_size=max_nodes))
    jobs = [
        Job(
            name=f"job-{j}",
            topology=draw(
                st.one_of(
                    st.none(),
                    st.builds(
                        dict,
                        level=st.sampled_from(["asw", "spine"]),
                        mode=st.sampled_from(["required", "preferred"]),
                    ),
                )
            ),
        )
        for j in range(draw(st.integers(0, max_jobs)))
    ]
    time_s = draw(st.sampled_from([0.0, 100.0, 3600.0]))
    pods: list[Pod] = []
    residents: dict[str, list[Pod]] = {n.name: [] for n in node_list}
    job_nodes: dict[str, list[Node]] = {j.name: [] for j in jobs}
    by_job = {j.name: j for j in jobs}
    for i in range(draw(st.integers(0, max_pods))):
        target = draw(st.sampled_from([None, *node_list]))
        job = draw(st.sampled_from([None, *[j.name for j in jobs]]))
        candidate = Pod(
            name=f"p-{i}",
            job=job,
            gpus=draw(st.sampled_from([0.0, 1.0, 1.0, 2.0, 4.0, *SHARES])),
            cpus=draw(st.sampled_from([0.0, 1.0, 2.0, 8.0])),
            memory_gib=draw(st.sampled_from([0.0, 4.0, 32.0])),
            gpu_models=draw(st.sampled_from([[], ["A100"], ["A100", "H800"]])),
            priority=draw(st.sampled_from(["HP", "LP"])),
            locked=draw(st.booleans()),
            node_selector=draw(st.sampled_from([{}, {}, {"pool": "train"}])),
            anti_affinity=draw(st.sampled_from([[], [], ["svc-a"], ["svc-a", "svc-b"]])),
            requests=draw(POD_REQUESTS),
            host_ports=draw(HOST_PORTS),
            checkpoint_s=draw(st.sampled_from([None, 0.0, time_s])),
            started_s=draw(st.sampled_from([None, 0.0])),
            standby=False,
        )
        standby = draw(st.booleans())
        if target is not None:
            ok = rules.pods_fit(target, residents[target.name], [candidate])
            if ok and job is not None:
                ok = rules.job_topology_ok(by_job[job], [*job_nodes[job], target])
            if ok:
                # only a running HP pod stands by (it then holds a reservation, not resources)
                candidate = candidate.model_copy(update={"node": target.name, "standby": standby and candidate.priority == "HP"})
                residents[target.name].append(candidate)
                if job is not None:
                    job_nodes[job].append(target)
        pods.append(candidate)
    return Cluster(time_s=time_s, nodes=node_list, pods=pods, jobs=jobs)


GANG_POD = st.fixed_dictionaries(
    {
        "gpus": st.sampled_from([1.0, 2.0, 4.0, 8.0, 0.5, 0.25]),
        "cpus": st.sampled_from([0.0, 1.0, 2.0, 8.0]),
        "memory_gib": st.sampled_from([0.0, 4.0]),
        "gpu_models": st.sampled_from([[], [], ["A100"], ["A100", "H800"]]),
        "node_selector": st.sampled_from([{}, {}, {}, {"pool": "train"}]),
        "anti_affinity": st.sampled_from([[], [], [], ["svc-a"]]),
        "requests": st.just({}),
        "host_ports": st.just([]),
    }
)
"""The shape of a generated gang's pods, mostly ones some node can hold (``clusters`` draws each pod
on its own: its jobs' pending pods differ, and a job's pods must be alike)."""


@st.composite
def gang_clusters(draw, max_nodes: int = 4, max_pods: int = 8, max_jobs: int = 2) -> Cluster:
    """``clusters`` whose jobs' pending pods share one shape (the first pending pod's, or one of
    ``GANG_POD``), with a ``min_available`` now and then: pending jobs that ``allocate`` and
    ``defrag --make-room`` accept (or refuse as a shape no node holds)."""
    cluster = draw(clusters(max_nodes=max_nodes, max_pods=max_pods, max_jobs=max_jobs))
    shapes: dict[str, dict] = {}
    first: dict[str, Pod] = {}
    pods = []
    for pod in cluster.pods:
        if pod.node is None and pod.job is not None:
            if pod.job not in shapes:
                shapes[pod.job] = draw(st.one_of(st.just({}), GANG_POD))
                first[pod.job] = pod
            pod = first[pod.job].model_copy(update={"name": pod.name, **shapes[pod.job]})
        pods.append(pod)
    jobs = []
    for job in cluster.jobs:
        members = sum(p.job == job.name for p in pods)
        least = draw(st.one_of(st.none(), st.none(), st.integers(1, max(1, members))))
        jobs.append(job.model_copy(update={"min_available": least}) if members else job)
    return Cluster.model_validate({**cluster.model_dump(), "pods": [p.model_dump() for p in pods], "jobs": [j.model_dump() for j in jobs]})
