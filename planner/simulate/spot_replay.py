"""The spot simulator's event loop (``planner.simulate.spot`` states the semantics: events and their
order, offers, evictions and checkpoints, the stale-shape speed-up, ``check``): ``_Replayer`` holds the
replay's state and applies each event and decision to it."""

from __future__ import annotations

import bisect
import heapq
import zlib
from collections.abc import Callable

import numpy as np

from planner import rules
from planner.cluster import Cluster, Node, Pod
from planner.engine.preempt import plan_preempt
from planner.heuristics.gang import Choice, Policy, place_job
from planner.instances.spot_workload import SimJob
from planner.plans import PreemptPlan
from planner.preempt_state import Ask
from planner.simulate.spot_checks import check_decision, check_state, snapshot_of
from planner.simulate.spot_policies import MAX_SEED, make_policy, policy_method, preempt_options
from planner.simulate.spot_proofs import none_fits, too_few_places
from planner.simulate.spot_results import GpuSeries, JobOutcome, Replay, Run
from planner.simulate.stale_shapes import StaleShapes
from planner.simulate.window import Window, kept_progress_s
from planner.state import PENDING

_FINISH, _SLEEP, _WAKE, _ARRIVE = 0, 1, 2, 3


class _Replayer:
    def __init__(
        self,
        nodes: list[Node],
        jobs: list[SimJob],
        policy: str,
        restart_overhead_s: float,
        seed: int,
        check: bool,
        reoffer_all: bool,
        window_jobs: int,
        progress: Callable[[float], None] | None,
    ):
        self.nodes, self.policy, self.overhead_s, self.seed = nodes, policy, restart_overhead_s, seed
        self.check, self.reoffer_all, self.window_jobs, self.progress = check, reoffer_all, window_jobs, progress
        self.spec = {j.name: j for j in jobs}
        self.arrival_order = sorted(jobs, key=lambda j: (j.submit_s, j.name))
        self.arrival_rank = {j.name: k for k, j in enumerate(self.arrival_order)}
        self.outcome = {j.name: JobOutcome(j.name, j.priority, j.submit_s) for j in jobs}
        self.saved = {j.name: 0.0 for j in jobs}  # progress kept by the checkpoints of earlier runs
        self.runs = {j.name: 0 for j in jobs}
        self.running: dict[str, Run] = {}
        # pending jobs by shape, each queue sorted: HP first, then submit time, name
        self.queues: dict[tuple, list[tuple[int, float, str]]] = {}
        self.pending_set: set[str] = set()
        self.unstaled: list[tuple] = []  # shapes ``_freed`` made worth offering again
        self.held_back: set[str] = set()  # evicted during the current pass: offered from the next
        self.now = 0.0
        self.stale: StaleShapes[tuple] = StaleShapes()  # job shapes proven unable to start
        self.stale_groups: dict[tuple, dict[tuple, None]] = {}  # (priority, models) -> its stale shapes (an ordered set)
        self.open_keys: set[tuple] = set()  # shapes with pending jobs, not stale
        self.reopened: dict[tuple, set[int]] = {}  # shape -> nodes whose freed room re-opened it since its proof
        self.events: list[tuple[float, int, str, int]] = [(j.submit_s, _ARRIVE, j.name, 0) for j in jobs]
        for j in jobs:
            for start, end in j.standby_windows_s:
                self.events += [(start, _SLEEP, j.name, 0), (end, _WAKE, j.name, 0)]
        heapq.heapify(self.events)
        self.tokens = 0
        self.total_gpus = float(sum(n.gpus for n in nodes))
        self.series = GpuSeries(nodes)
        self.eviction_counts = np.array([n.eviction_count for n in nodes], dtype=np.int64)
        self.replay = Replay(policy, self.outcome, 0.0, self.total_gpus)
        self.fixed_policy = None if "random" in policy.split("+") else make_policy(policy)
        self.window: Window | None = None
        self.pending_pods: dict[str, list[Pod]] = {}  # each job's pods, pending (the windows' building blocks)
        self.window_end = 0  # arrivals (in arrival order) before this index are in the window
        self.keys = {j.name: (j.priority, j.workers, j.gpus_per_worker, j.cpus_per_worker, j.memory_gib_per_worker, j.gpu_models) for j in jobs}

    # ------------------------------------------------------------------------------------------
    # The loop
    # ------------------------------------------------------------------------------------------

    def run(self) -> Replay:
        now = 0.0
        while self.events:
            now = self.now = self.events[0][0]
            freed: set[int] = set()
            while self.events and self.events[0][0] == now:
                _, kind, name, token = heapq.heappop(self.events)
                if kind == _ARRIVE:
                    self._ensure_window(name)
                    self._queue(name)
                elif kind == _FINISH:
                    run = self.running.get(name)
                    if run is not None and run.token == token:
                        freed |= self._finish(name, now)
                elif kind == _SLEEP:
                    freed |= self._sleep(name)
                else:
                    freed |= self._wake(name, now)
            self._freed(freed)
            self._schedule(now)
            self.series.record(self.replay, now)
            if self.check and self.window is not None:
                check_state(self._snapshot(now, None), now)
            if self.progress is not None:
                self.progress(now)
        self.replay.end_s = now
        return self.replay

    def _schedule(self, now: float) -> None:
        """Offer pending jobs in order, pass after pass, until a pass starts none. A pass merges the
        shapes' queues in order, skipping stale shapes: the jobs it offers are exactly those a pass
        over every pending job would offer and not prove unable to start."""
        for _ in range(len(self.spec) + 1):
            started = False
            self.held_back.clear()
            keys = self.queues if self.reoffer_all else sorted(self.open_keys)
            heap = [(self.queues[key][0], key) for key in keys if self.reoffer_all or not self._stale(key, self.queues[key][0][2])]
            heapq.heapify(heap)
            self.unstaled.clear()
            while heap:
                entry, key = heapq.heappop(heap)
                started |= self._try_start(entry[2], now)
                for again in [key, *self.unstaled]:
                    queue = self.queues.get(again)
                    if queue is None or (not self.reoffer_all and self._stale(again, queue[0][2])) or (again != key and any(k == again for _, k in heap)):
                        continue
                    k = bisect.bisect_right(queue, entry)
                    while k < len(queue) and queue[k][2] in self.held_back:
                        k += 1
                    if k < len(queue):
                        heapq.heappush(heap, (queue[k], again))
                self.unstaled.clear()
            if not started:
                return

    # ------------------------------------------------------------------------------------------
    # Decisions
    # ------------------------------------------------------------------------------------------

    def _policy(self, asking: str, now: float) -> tuple[Policy, int]:
        """The policy of one decision; the random baseline draws from a seed of the replay's seed,
        the asking job (or pod) and the time, so skipping hopeless offers changes no draw."""
        if self.fixed_policy is not None:
            return self.fixed_policy, 0
        seed = zlib.crc32(f"{self.seed}:{asking}:{now!r}".encode()) % (MAX_SEED + 1)
        return make_policy(self.policy, seed), seed

    def _try_start(self, name: str, now: float) -> bool:
        w = self._ensure_window(name)
        ps, job = w.ps, self.spec[name]
        j = w.job_index[name]
        key = self.keys[name]
        # A proof that the job cannot start skips its decision. For a one-pod job the proof is
        # taken only once the decision failed: it usually succeeds, and the proof costs about as much.
        single = job.workers == 1
        if not self.reoffer_all and (self._still_closed(w, key, name) or not single and too_few_places(w, name, job.workers)):
            self._proven_stale(name, now)
            return False
        if job.priority == "HP":
            ask = Ask.of(ps, j, now, cost_of=lambda placed: w.lost_gpu_s(now, placed), pods=w.pods_of(name))
        else:
            ask = self._spot_ask(w, j, name, now)
        policy, seed = self._policy(name, now)
        choice = place_job(ps, ask, policy, explain=False)
        if not choice.placements and single and not self.reoffer_all and too_few_places(w, name, 1):
            self._proven_stale(name, now)
            return False
        self.replay.decisions += 1
        if self.check:
            snapshot = self._snapshot(now, name)
            check_decision(self.policy, snapshot, choice, ask, w, name, None, now, seed)
        if not choice.placements:
            if job.priority == "LP" or choice.proven_infeasible:
                self._mark_stale(self.keys[name], name)
            return False
        freed = self._apply(choice, now)
        self._start(name, now)
        self._freed(freed)
        return True

    def _proven_stale(self, name: str, now: float) -> None:
        """Job ``name`` was proven unable to start now: its shape is stale (under ``check``, the
        planner must agree that nothing can be planned)."""
        if self.check:
            method = policy_method(self.policy)
            options = preempt_options(method, self._policy(name, now)[1] if method == "random" else 0, now_s=now)
            plan = plan_preempt(self._snapshot(now, name), name, options)
            assert isinstance(plan, PreemptPlan), f"a heuristic method ({method}) plans; only compare returns a comparison"
            if plan.placements:
                raise AssertionError(f"'{name}' at {now} s was proven unable to start, yet the planner starts it")
        self._mark_stale(self.keys[name], name)

    def _still_closed(self, w: Window, key: tuple, name: str) -> bool:
        """A shape re-opened by room freed on some nodes, where none of its pods fits any more:
        since its proof only those nodes gained room, so the proof still holds."""
        where = self.reopened.pop(key, None)
        return where is not None and none_fits(w, w.pods_of(name)[0], where)

    def _spot_ask(self, w: Window, j: int, name: str, now: float) -> Ask:
        """A spot job's decision: no victims (spot pods preempt nobody), so no costs to compute."""
        return Ask(
            job=j,
            job_name=name,
            pods=w.pods_of(name),
            min_placed=len(w.pods_of(name)),
            priority=rules.LP_PRIORITY,
            preemptive=False,
            numa_mode=None,
            now_s=now,
            pod_cost=w.zero_cost,
            victims=w.no_victims,
            unit_cost=w.zero_unit_cost,
            level=0,
        )

    def _apply(self, choice: Choice, now: float) -> set[int]:
        """Evict the choice's victim jobs and place its pods; the nodes the victims left."""
        w = self.window
        assert w is not None
        cs = w.ps.cs
        victims = sorted({w.names[int(cs.pod_job[q])] for u in choice.units for q in w.ps.unit_pods[u] if cs.pod_node[q] != PENDING})
        freed: set[int] = set()
        for victim in victims:
            freed |= self._evict(victim, now)
        for p, n, devices in choice.placements:
            w.ps.place(p, n, devices)
        return freed

    def _start(self, name: str, now: float) -> None:
        w, job = self.window, self.spec[name]
        assert w is not None
        overhead = self.overhead_s if self.runs[name] else 0.0
        self.runs[name] += 1
        self.tokens += 1
        run = Run(now, now + overhead, self.tokens)
        self.running[name] = run
        w.start_run(name, now, run.progress_s)
        self._unqueue(name)
        outcome = self.outcome[name]
        if outcome.first_start_s is None:
            outcome.first_start_s = now
            outcome.first_nodes = tuple(w.ps.cs.node_names[n] for n in w.nodes_of(name))
        for n in w.nodes_of(name):
            self.series.add(n, job, +1)
        heapq.heappush(self.events, (run.progress_s + job.work_s - self.saved[name], _FINISH, name, self.tokens))

    def _finish(self, name: str, now: float) -> set[int]:
        run, job, outcome = self.running.pop(name), self.spec[name], self.outcome[name]
        self.pending_pods.pop(name, None)  # done: no later window holds it
        outcome.finish_s = now
        outcome.gpu_s_run += _gpus(job) * (now - run.start_s)
        outcome.overhead_gpu_s += _gpus(job) * (run.progress_s - run.start_s)
        return set(self._leave(name, run))

    def _evict(self, name: str, now: float) -> set[int]:
        run, job, outcome = self.running.pop(name), self.spec[name], self.outcome[name]
        kept = kept_progress_s(run.progress_s, job.checkpoint_interval_s, now)
        outcome.evictions += 1
        outcome.lost_gpu_s += _gpus(job) * (now - run.start_s - kept)
        outcome.gpu_s_run += _gpus(job) * (now - run.start_s)
        self.saved[name] += kept
        self.held_back.add(name)
        nodes = self._leave(name, run)
        for n in nodes:
            self.eviction_counts[n] += 1  # SpotGPU's eviction history, one per evicted pod
        self._queue(name)
        return set(nodes)

    def _leave(self, name: str, run: Run) -> list[int]:
        """The job's pods leave their nodes; the nodes, one per pod."""
        w, job = self.window, self.spec[name]
        assert w is not None
        nodes = w.nodes_of(name)
        for n in nodes:
            self.series.add(n, job, -1, standby=run.standby)
        w.end_run(name)
        return nodes

    # ------------------------------------------------------------------------------------------
    # Standby
    # ------------------------------------------------------------------------------------------

    def _sleep(self, name: str) -> set[int]:
        run = self.running.get(name)
        if run is None or run.standby:
            return set()  # not running: the window does not apply
        w, job = self._ensure_window(name), self.spec[name]
        cs = w.ps.cs
        nodes = set()
        for p in w.pods_of(name):
            n = int(cs.pod_node[p])
            self.series.add(n, job, -1)
            cs.unplace(p)
            cs.set_standby(p, True)
            cs.place(p, n)
            self.series.add(n, job, +1, standby=True)
            nodes.add(n)
        run.standby = True
        return nodes

    def _wake(self, name: str, now: float) -> set[int]:
        run = self.running.get(name)
        if run is None or not run.standby:
            return set()
        w, job = self._ensure_window(name), self.spec[name]
        ps = w.ps
        cs = ps.cs
        freed: set[int] = set()
        for p in w.pods_of(name):
            n = int(cs.pod_node[p])
            if self.check:
                snapshot = self._snapshot(now, None)
            self.series.add(n, job, -1, standby=True)
            cs.unplace(p)
            cs.set_standby(p, False)
            cost = w.lost_gpu_s(now)
            victims = ps.victim_mask(rules.HP_PRIORITY)
            here = np.zeros(len(cs.node_names), dtype=bool)
            here[n] = True
            ask = Ask(
                job=w.job_index[name],
                job_name=name,
                pods=[p],
                min_placed=1,
                priority=rules.HP_PRIORITY,
                preemptive=bool(victims.any()),
                numa_mode=None,
                now_s=now,
                pod_cost=cost,
                victims=victims,
                unit_cost=ps.unit_costs(cost),
                level=0,
                nodes=here,
            )
            policy, _ = self._policy(cs.pod_names[p], now)
            self.replay.decisions += 1
            choice = place_job(ps, ask, policy, explain=False)
            if self.check:
                check_decision(self.policy, snapshot, choice, ask, w, name, cs.pod_names[p], now, self._policy(cs.pod_names[p], now)[1])
            if not choice.placements:
                raise AssertionError(f"standby pod '{cs.pod_names[p]}' cannot wake on its node at {now} s: its reservation was not kept")
            freed |= self._apply(choice, now)
            self.series.add(n, job, +1)
        run.standby = False
        return freed

    # ------------------------------------------------------------------------------------------
    # Queue, window and the stale shapes
    # ------------------------------------------------------------------------------------------

    def _queue(self, name: str) -> None:
        job = self.spec[name]
        key = self.keys[name]
        bisect.insort(self.queues.setdefault(key, []), (0 if job.priority == "HP" else 1, job.submit_s, name))
        if key not in self.stale:
            self.open_keys.add(key)
        self.pending_set.add(name)

    def _unqueue(self, name: str) -> None:
        job, key = self.spec[name], self.keys[name]
        queue = self.queues[key]
        del queue[bisect.bisect_left(queue, (0 if job.priority == "HP" else 1, job.submit_s, name))]
        if not queue:
            del self.queues[key]
            self.open_keys.discard(key)
            self.reopened.pop(key, None)
        self.pending_set.discard(name)

    def _stale(self, key: tuple, name: str) -> bool:
        """Whether jobs of shape ``key`` are proven unable to start: that shape failed, or one no
        larger in any dimension (same priority and models) did, since capacity last came free
        where it fits (a larger job needs at least the room the smaller one lacked)."""
        if key in self.stale:
            return True
        priority, workers, gpus, cpus, mem, models = key
        for other in self.stale_groups.get((priority, models), ()):
            if other[1] <= workers and other[2] <= gpus and other[3] <= cpus and other[4] <= mem:
                self._mark_stale(key, name)
                return True
        return False

    def _mark_stale(self, key: tuple, name: str) -> None:
        w = self.window
        assert w is not None
        self.stale.add(key, w.ps.cs, w.pods_of(name)[0])
        self.open_keys.discard(key)
        self.reopened.pop(key, None)
        self.stale_groups.setdefault((key[0], key[5]), {})[key] = None

    def _freed(self, nodes: set[int]) -> None:
        """Capacity came free on ``nodes``: shapes that may now fit there are worth offering again."""
        if not nodes:
            return
        if not self.stale:
            for where in self.reopened.values():
                where.update(nodes)
            return
        w = self.window
        assert w is not None
        cs = w.ps.cs
        freed = np.fromiter(sorted(nodes), dtype=np.int64, count=len(nodes))
        # one pod of the shape fits in what the pods that would stay leave (``_places``)
        fitting = self.stale.fitting(cs, freed, w.room(True, freed), w.room(False, freed))
        freed_list = freed.tolist()
        for where in self.reopened.values():  # shapes re-opened earlier and not yet offered
            where.update(freed_list)
        for key, pod, mask in fitting:
            if key[1] > 1 and w.gpu_places_bound(pod) < key[1]:
                continue  # the nodes still hold too few of its pods (``_too_few_places``): still stale
            self.stale.remove(key)
            del self.stale_groups[(key[0], key[5])][key]
            self.unstaled.append(key)
            self.reopened[key] = set(freed[mask].tolist())
            if key in self.queues:
                self.open_keys.add(key)

    def _ensure_window(self, name: str) -> Window:
        if self.window is not None and name in self.window:
            return self.window
        end = max(self.arrival_rank[name] + 1, self.window_end) + self.window_jobs
        live = set(self.running) | self.pending_set | {j.name for j in self.arrival_order[self.window_end : end]} | {name}
        ordered = sorted(live, key=lambda n: self.arrival_rank[n])
        running = {n: (r.start_s, r.progress_s, self._nodes_of_running(n), r.standby) for n, r in self.running.items()}
        self.window = Window(self.nodes, [self.spec[n] for n in ordered], running, self.eviction_counts, self.now, self.pending_pods)
        self.window_end = end
        self.stale.clear()
        self.stale_groups.clear()
        self.reopened.clear()
        self.open_keys = set(self.queues)
        self.replay.windows += 1
        return self.window

    def _nodes_of_running(self, name: str) -> list[str]:
        w = self.window
        assert w is not None
        return [w.ps.cs.node_names[n] for n in w.nodes_of(name)]

    def _snapshot(self, now: float, asking: str | None) -> Cluster:
        """The state at ``now`` as a snapshot (``spot_checks.snapshot_of``)."""
        assert self.window is not None
        return snapshot_of(self.nodes, self.eviction_counts, self.window, self.running, self.spec, now, asking)


def _gpus(job: SimJob) -> int:
    return job.workers * job.gpus_per_worker
