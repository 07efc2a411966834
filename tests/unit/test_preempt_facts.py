"""Preemption decisions on a prebuilt state reuse the cluster's indexes (issue 62): built once per
state and cluster, never carried over to another cluster; the checks' answers are unchanged."""

from __future__ import annotations

import pytest

from planner import rules
from planner.engine.common import PlanOptionError
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.plans import Victim
from planner.preempt_state import PreemptState
from planner.validate import preempt as checks
from planner.validate.preempt import ClusterFacts, surplus_units, validate_preempt
from tests.support.clusters import make_cluster, node, pod


def spot_cluster(jobs: int = 3, time_s: float = 1000.0):
    """Two full 4-GPU nodes of spot pods and ``jobs`` pending 2-GPU HP jobs."""
    nodes = [node(f"n{i}", gpus=4, cpus=32, memory_gib=128) for i in range(2)]
    pods = [pod(f"s{i}-{k}", f"n{i}", 1, cpus=2, priority="LP", started_s=100.0 * (k + 1) + i) for i in range(2) for k in range(4)]
    pods += [pod(f"h{j}", None, 2, cpus=2, job=f"hp{j}") for j in range(jobs)]
    return make_cluster(nodes, pods, [{"name": f"hp{j}"} for j in range(jobs)], time_s=time_s)


def test_decisions_on_one_state_build_the_cluster_facts_once(monkeypatch):
    built = []
    original = ClusterFacts.__init__

    def counting(self, cluster):
        built.append(cluster)
        original(self, cluster)

    monkeypatch.setattr(ClusterFacts, "__init__", counting)
    cluster = spot_cluster()
    state = PreemptState(cluster)
    plans = [plan_preempt(cluster, f"hp{j}", PreemptOptions(method="spotgpu"), state=state) for j in range(3)]
    assert len(built) == 1  # was: the validator's name maps once per check, and again per victim unit in surplus_units
    assert all(len(p.victims) == 2 and p.metrics["surplus_victims"] == 0 for p in plans)
    # the same plans as deciding without a kept state (each decision on the unchanged snapshot)
    fresh = [plan_preempt(cluster, f"hp{j}", PreemptOptions(method="spotgpu")) for j in range(3)]
    assert [p.model_dump(exclude={"report"}) for p in plans] == [p.model_dump(exclude={"report"}) for p in fresh]
    assert [p.report.provenance["snapshot_sha256"] for p in plans] == [p.report.provenance["snapshot_sha256"] for p in fresh]


def test_another_cluster_on_the_same_state_gets_its_own_facts():
    cluster = spot_cluster()
    state = PreemptState(cluster)
    plan_preempt(cluster, "hp0", PreemptOptions(method="spotgpu"), state=state)
    earlier = cluster.model_copy(update={"time_s": 150.0})  # before most pods started: the request must be refused
    with pytest.raises(PlanOptionError, match="is before pods"):
        plan_preempt(earlier, "hp0", PreemptOptions(method="spotgpu"), state=state)


def test_shared_facts_check_as_fresh_ones():
    cluster = spot_cluster()
    plan = plan_preempt(cluster, "hp0", PreemptOptions(method="spotgpu"))
    facts = ClusterFacts(cluster)
    taken = {v.pod for v in plan.victims}
    spare = next(p for p in cluster.pods if p.node is not None and p.name not in taken)  # a victim the plan does not need
    extra = Victim(pod=spare.name, node=spare.node, job=spare.job, lost_gpu_s=rules.lost_gpu_s(spare, plan.now_s))
    wide = plan.model_copy(update={"victims": [*plan.victims, extra]})
    for candidate in (plan, wide):
        assert validate_preempt(cluster, candidate, facts) == validate_preempt(cluster, candidate)
        assert surplus_units(cluster, candidate, facts) == surplus_units(cluster, candidate)
    assert validate_preempt(cluster, wide, facts) == [] and surplus_units(cluster, wide, facts) == 1
    other = spot_cluster(time_s=2000.0)
    assert facts.of(other).cluster is other and facts.of(cluster) is facts
    assert checks.validate_preempt(other, plan, facts) == checks.validate_preempt(other, plan)
