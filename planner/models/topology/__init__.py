"""Exact joint allocation of a batch of pending jobs (an integer program, CP-SAT or HiGHS).

The objective lives at switch level (GPUs started, switches spanned, entropy over switches), so the
model decides pods per job *per switch* and proves, per switch, that the nodes can hold them:

* **shapes**: jobs whose pods ask the same (whole GPUs, CPUs, memory, eligibility, anti-affinity
  groups) are interchangeable on a node; the node-level packing is per shape, not per job;
* **node classes**: nodes under one switch with the same free GPUs, CPUs and memory and the same
  room for every shape are interchangeable; a class of ``count`` nodes is packed by choosing, per
  node, a *pattern*: a maximal vector of pods per shape that fits one node (resources and
  anti-affinity). ``w[c, p]`` counts the nodes of class c packed with pattern p. Patterns are
  downward closed (fewer pods always fit), so maximal ones suffice and the packing is exact. A class
  with more than ``PATTERN_LIMIT`` maximal patterns gets per-node variables instead (exact too).

Variables:
  x[j, d]  integer, pods of job j under access switch d;
  z[j]     binary, job j starts (all its pods, or at least ``min_available``);
  u[j, e]  binary, job j uses access switch e (every job: switches are counted at access level, as
           documented, a spine job's too);
  v[j, s]  binary, a ``required`` spine job uses spine s (its one-spine rule; spines are not counted);
  w[c, p]  integer, nodes of class c packed with pattern p; y[s, n] pods of shape s on node n
           for the per-node classes.
Constraints:
  (1) k_j z_j <= sum_d x[j, d] <= N_j z_j                        gang (k_j = min_available or N_j)
  (2) sum_{j of shape s} x[j, d] <= sum_{c in d, p} a[p, s] w[c, p] + sum_{n in d} y[s, n]
  (3) sum_p w[c, p] <= count_c; per-node rows for y: GPUs, CPUs, memory, anti-affinity groups
  (4) x[j, d] <= ub[j, d] u[j, e(d)];  sum_e u[j, e] <= 1 for a ``required`` asw job; for a
      ``required`` spine job x[j, d] <= ub[j, d] v[j, s(d)] and sum_s v[j, s] <= 1
Objective, lexicographic: (a) most GPUs of the jobs started; (b) fewest switches spanned, summed
  over jobs (one weighted solve for both, see ``solve_joint``); then, holding both, (c) least
  entropy (ASI Eq. 1, over access switches) summed over the jobs that may span switches, linear
  through one-hot count indicators b[j, d, k] (x[j, d] = sum_k k b[j, d, k]) with coefficients
  k/N ln(N/k) scaled to integers (``ENTROPY_SCALE``; the reported tolerance bounds the rounding).
  (c) runs when every job's pod count is fixed (no elastic gang) and the indicators (counted after
  the narrowing below) number at most ``ENTROPY_INDICATOR_LIMIT``. The result lists the levels
  asked (``objective_levels``) and the prefix of them proven (``proven_levels``); the status is
  ``optimal`` only when they agree, so a skipped or unproven entropy level leaves it ``feasible``
  with GPUs and switches still listed as proven. With GPUs and
  switches held, the *switch slack* (switches held less the least summed fewest switches of the
  started jobs, bounded by a subset-sum and a short solve) caps every job at its fewest plus the
  slack; at slack 0 a job that fits one access switch has entropy 0 (no indicators). A job on
  at least m switches holds at most N - m + 1 pods on any, and on a switch it uses at least N less
  what its other allowed switches can hold (``_count_ranges``): indicators exist only for those
  counts, and each is tied to the switch variable ("one count iff used"). Further rows, each valid
  for every plan, tighten the relaxation:
  * a job on at most one switch (``required``, or confined at slack 0) puts all its k pods on the
    switch it uses (``whole_under``: sum x >= k u);
  * *twins*, jobs no row tells apart, list their entropies in non-increasing name order;
  * *count pairing*: a job on at most two switches holds k < N pods on one exactly when it holds
    N - k on the other (sum_d b[j, d, k] = sum_d b[j, d, N - k]); a job that needs two switches and
    may use up to U = 2 + slack gets -e <= #k - #(N - k) <= U e, e = its switches - 2;
  * *count multisets*: where a job's partitions of N (between its fewest and U parts, within the
    count ranges) are few (``PARTITION_LIMIT`` per job, ``PARTITION_TOTAL`` in all), y[j, p] picks
    one, sum_p y[j, p] = z[j] and sum_d b[j, d, k] = sum_p (parts of p equal to k) y[j, p] (the
    convex hull of the job's count multisets).
  The phase runs HiGHS with its default feasibility tolerance and without presolve; its plan is
  checked against every row in exact integer arithmetic (``Milp.violated_rows``) and dropped, with
  the claim, when one slips. Before it, the model with each job's multisets cut to those its LP
  relaxation uses (and the start's) is solved (``_multiset_neighbourhood``) for a start; nothing is
  claimed of the cut model. ``benchmarks/topology_batch.py`` measures what each reduction proves.

Exact (accepts exactly what ``rules`` accepts) for jobs of whole-GPU pods; a job of GPU shares
makes it a relaxation (shares pack onto devices) and nothing is claimed.

The package: ``formulation.py`` (variables and rows, the node classes and their patterns),
``joint.py`` (``solve_joint``: levels (a) and (b), then the entropy phase), ``search.py`` (one solve:
the LP-bound proof, HiGHS then CP-SAT under ``auto``), ``entropy_phase.py`` (level (c)), ``counts.py``
(its count ranges, multisets, switch slack and twin order) and ``neighbourhood.py`` (its start and
its reduced-cost-fixed solve).
"""

from planner.models.topology.formulation import Pairs
from planner.models.topology.joint import JointResult, solve_joint

__all__ = ["JointResult", "Pairs", "solve_joint"]
