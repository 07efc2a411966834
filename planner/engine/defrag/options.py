"""The options of ``plan_defrag`` and their validation: which options each method reads, and why an
option a method would ignore is refused (an option that would be silently ignored is an error)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from planner.capacity import checked_shapes, large_requests_field
from planner.engine.common import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TIME_LIMIT_S,
    refuse_unused,
    unused_reason,
)
from planner.limits import MoveLimits
from planner.metrics import Shape, parse_shape
from planner.pools import PoolPolicy, parse_selector, pool_nodes

if TYPE_CHECKING:
    from planner.cluster import Cluster

DEFAULT_NODES_PER_WAVE = "10%"
"""The disruption budget of a plan without ``max_nodes_per_wave``: each wave touches at most 10% of the
nodes in scope, rounded up (Karpenter's default ``NodePool`` budget, ``nodes: 10%``)."""

Method = Literal["heuristic", "random", "descheduler", "repack", "exact", "compare", "hybrid", "auto"]


class DefragOptions(BaseModel):
    """Options of ``plan_defrag``; out-of-range values are rejected with the option's name."""

    model_config = ConfigDict(extra="forbid", strict=True)
    method: Method = "heuristic"
    objective: Literal["empty-nodes", "room"] = Field(
        "empty-nodes",
        description="What the plan maximises: empty nodes, or room = requests of the given shapes that can start within one "
        "access switch (or spine; ASI Fig. 14), largest shape first, then fewest moves (method heuristic, exact or compare).",
    )
    make_room: list[str] | None = Field(
        None,
        description="Make room for these pending jobs (or pending pods without a job): the plan's moves let them start, "
        "and its placements start them after the last wave.",
    )
    trim: Literal["off", "greedy", "exact"] = Field(
        "greedy",
        description="Move-minimal pass after IPC (heuristic, hybrid): greedy = the end state without double moves and with "
        "pods sent back home where they fit; exact = then the solver's fewest moves at as many empty nodes (uses the solver "
        "options; heuristic only); off = IPC's plan as it is.",
    )
    partition_size: int = Field(500, ge=2, le=MAX_COUNT, description="Nodes per IPC partition.")
    depth: int = Field(3, ge=1, le=16, description="K: longest ejection chain.")
    rounds: int = Field(5, ge=1, le=1000, description="R: IPC rounds (fresh random partition each).")
    min_round_yield: float = Field(
        1.0,
        ge=0,
        le=1000,
        description="IPC stops after a round that vacates fewer than this many nodes per 1,000 ejection attempts (0: every round until one vacates nothing).",
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Random seed; same snapshot and seed, same plan.")
    max_moves: int | None = Field(None, ge=0, le=MAX_COUNT, description="Migration budget for the whole plan.")
    max_moves_per_node: int | None = Field(None, ge=0, le=MAX_COUNT, description="Moves touching any one node (as source or destination).")
    same_asw: bool = Field(False, description="Pods move only within their access switch.")
    max_moves_per_wave: int | None = Field(None, ge=1, le=MAX_COUNT, description="Moves in any one wave (waves are split; no move is lost).")
    max_nodes_per_wave: int | str | None = Field(
        None,
        description="Nodes any one wave touches (as source or destination): a count (at least 2, as a move touches two) "
        "or a share of the nodes in the plan's scope (those node_selector matches, else all) such as '10%' (rounded up, "
        "as Karpenter's disruption budgets are). Default (null): 10%, Karpenter's default budget; '100%' lifts it.",
    )
    max_moves_per_node_per_wave: int | None = Field(None, ge=1, le=MAX_COUNT, description="Moves touching any one node in one wave.")
    max_moves_per_namespace: int | None = Field(
        None,
        ge=1,
        le=MAX_COUNT,
        description="Moves of one namespace's pods in one wave (koordinator's maxMigratingPerNamespace; a pod without a namespace is in 'default').",
    )
    max_unavailable_per_job: int | None = Field(
        None,
        ge=0,
        le=MAX_COUNT,
        description="Pods of one job moving in one wave, for jobs without their own disruption budget (0 holds their pods).",
    )
    move_once: bool = Field(
        True,
        description="Every pod moves at most once (on by default: a pod moved twice is restarted twice); off lets chains and detours move a pod again.",
    )
    only_namespaces: list[str] | None = Field(None, min_length=1, description="Only pods of these namespaces move.")
    exclude_namespaces: list[str] | None = Field(None, min_length=1, description="Pods of these namespaces never move.")
    allow_product_change: bool = Field(
        False,
        description="Let a placed GPU pod move to another GPU product its rules allow (off by default: a pod keeps the GPU product it runs on).",
    )
    allow_cpu_pods_on_gpu_nodes: bool = Field(
        False,
        description="Let CPU-only pods move onto GPU nodes (off by default: they move among CPU-only nodes only).",
    )
    node_selector: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="Plan within the nodes this label selector matches "
        "('pool=training,zone in (a,b)'), as kube-descheduler's nodeSelector: pods elsewhere stay, nothing arrives there.",
    )
    threshold: float = Field(0.5, gt=0, le=1, description="Baselines: GPU allocation below which a node is drained.")
    workers: int | None = Field(None, ge=1, le=256, description="Worker processes for partitions (default: one per core).")
    executor: Literal["inline", "process", "ray"] = Field(
        "process",
        description="Where IPC partitions and hybrid neighbourhoods run: in this process, on a local process pool, or as "
        "Ray tasks (RAY_ADDRESS when set, else a local Ray of `workers` CPUs; the extra 'ray'). Same seed, same plan on each.",
    )
    solver: Literal["cpsat", "highs"] = Field("highs", description="Exact back-end (HiGHS proved our models faster; see benchmarks).")
    time_limit_s: float = Field(
        60.0, gt=0, le=MAX_TIME_LIMIT_S, allow_inf_nan=False, description="Time for exact, compare and hybrid, model building included."
    )
    solver_workers: int = Field(8, ge=1, le=256, description="CP-SAT workers / HiGHS threads.")
    formulation: Literal["auto", "pod", "class"] = Field("auto", description="Exact model: pod-level or class-aggregated.")
    deterministic: bool = Field(False, description="CP-SAT: deterministic search, time limit in deterministic seconds.")
    lexicographic: Literal["two-phase", "weighted"] = Field(
        "two-phase",
        description="How the exact objective (most empty nodes, then fewest moves, then fewest GPUs moved) is solved: "
        "two solves (empty nodes, then moves with them held) or one weighted solve.",
    )
    force: bool = Field(False, description="Run exact even above the size limit.")
    large_requests: list[str] = large_requests_field()
    limit_costs: bool = Field(
        False,
        description="Also plan without each limit in force that can cost vacated nodes, one at a time, and report "
        "what each cost (report.limit_costs); one more plan per limit.",
    )

    # -- objective room (issue 44) ---------------------------------------------------------------
    requests: list[str] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="Objective room: the request shapes, each <GPUs>g<CPUs>c[<GiB>m] for the whole request "
        "(e.g. 128g1536c); default 256g3072c, 128g1536c, 64g768c.",
    )
    for_pending: bool = Field(False, description="Objective room: the shapes are the snapshot's pending jobs (a required topology level is kept).")
    room_level: Literal["asw", "spine"] = Field("asw", description="Objective room: a request starts within one access switch or one spine.")
    weights: dict[str, float] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="Objective room: a weight above 0 per shape (e.g. {'128g1536c': 2, '256g3072c': 1}); the plan maximises the "
        "weighted sum of the counts instead of the counts largest shape first.",
    )

    @field_validator("requests")
    @classmethod
    def _shapes_read(cls, value: list[str] | None) -> list[str] | None:
        for text in value or []:
            room_shape(text)
        return value

    @field_validator("weights")
    @classmethod
    def _weights_read(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for text, weight in (value or {}).items():
            room_shape(text)
            if not (math.isfinite(weight) and weight > 0):
                raise ValueError(f"the weight of shape '{text[:64]}' must be a number above 0, got {weight:g}")
        return value

    @field_validator("for_pending")
    @classmethod
    def _one_source_of_shapes(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("requests") is not None:
            raise ValueError("give the shapes (requests) or take them from the pending jobs (for_pending), not both")
        return value

    @field_validator("*")
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name in ROOM_FIELDS or info.data.get("objective") == "room":
            return _used_by_room(cls, value, info)
        if info.data.get("make_room") is not None and info.data.get("method") in MAKE_ROOM_METHODS:
            return refuse_unused(cls, value, info, MAKE_ROOM_METHODS, ("method", "workers", "executor", "make_room", "large_requests"), _unused_by_make_room)
        if info.data.get("method") == "heuristic" and info.data.get("trim") == "exact":
            return refuse_unused(
                cls,
                value,
                info,
                {"heuristic": METHOD_OPTIONS["heuristic"] | TRIM_EXACT_OPTIONS},
                ("method", "workers", "executor", "large_requests"),
                unused_option_reason,
            )
        if info.field_name == "trim" and value == "exact" and info.data.get("method") == "hybrid":
            raise ValueError("hybrid spends its time limit on neighbourhood search; use trim 'greedy' with it, or method 'heuristic' with trim 'exact'")
        return refuse_unused(cls, value, info, METHOD_OPTIONS, ("method", "workers", "executor", "large_requests"), unused_option_reason)

    @field_validator("large_requests")
    @classmethod
    def _large_request_shapes_read(cls, value: list[str]) -> list[str]:
        return checked_shapes(value)

    @field_validator("node_selector")
    @classmethod
    def _selector_reads(cls, value: str | None) -> str | None:
        if value is not None:
            parse_selector(value)
        return value

    @field_validator("max_nodes_per_wave")
    @classmethod
    def _nodes_per_wave(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 2 <= value <= MAX_COUNT:
            raise ValueError(f"must be at least 2 (a move touches its source and its destination), got {value}; '100%' lifts the default budget")
        if isinstance(value, str):
            match = re.fullmatch(r"(\d+(?:\.\d+)?)%", value.strip())
            if match is None or not 0 < float(match.group(1)) <= 100:
                raise ValueError(
                    f"give a node count such as 50 or a share such as '10%' (above 0%, at most 100%: '100%' lifts the default budget), got {value!r}"
                )
        return value

    def pools(self) -> PoolPolicy:
        return PoolPolicy(self.allow_product_change, self.allow_cpu_pods_on_gpu_nodes, self.node_selector)

    def scope_nodes(self, cluster: Cluster) -> int:
        """The nodes a share of ``max_nodes_per_wave`` is of: those ``node_selector`` matches (the pool the
        plan works in, as Karpenter's budgets are per NodePool), else every node of the snapshot."""
        return len(cluster.nodes) if self.node_selector is None else len(pool_nodes(cluster, self.node_selector))

    def nodes_per_wave(self, nodes: int) -> int | None:
        """``max_nodes_per_wave`` as a count (None: no limit), a share resolved against ``nodes``, the nodes
        in scope (rounded up, at least 2); not given, the default budget ``DEFAULT_NODES_PER_WAVE``;
        '100%' is no limit."""
        per_wave = DEFAULT_NODES_PER_WAVE if self.max_nodes_per_wave is None else self.max_nodes_per_wave
        if isinstance(per_wave, int):
            return per_wave
        share = float(per_wave.strip().rstrip("%"))
        if share >= 100:
            return None
        return max(2, math.ceil(share * nodes / 100 - 1e-9))

    def limits_in_force(self, nodes: int) -> dict[str, dict[str, Any]]:
        """The report's ``limits``: per limit in force or given (and ``max_nodes_per_wave`` always, as it
        has a default), its ``value`` as applied (null or false: none, as ``--no-move-once`` or '100%'
        give), its ``source`` ('default' or 'given') and, for a share of nodes, the ``rule`` that resolved
        it against ``nodes``, the nodes in scope."""
        given = self.model_fields_set
        in_force: dict[str, dict[str, Any]] = {}
        for name in LIMIT_NAMES:
            value = getattr(self, name)
            if name == "max_nodes_per_wave":
                entry: dict[str, Any] = {"value": self.nodes_per_wave(nodes), "source": "given" if value is not None else "default"}
                share = DEFAULT_NODES_PER_WAVE if value is None else value
                if isinstance(share, str):
                    entry["rule"] = _share_rule(share, nodes, entry["value"])
                in_force[name] = entry
            elif (value is not None and value is not False) or name in given:  # 0 is a limit (max_moves 0: nothing moves)
                in_force[name] = {"value": value, "source": "given" if name in given else "default"}
        return in_force

    def limits(self, nodes: int) -> MoveLimits:
        """The limits, with a share of nodes per wave resolved against ``nodes``, the nodes in scope
        (``scope_nodes``); without ``max_nodes_per_wave``, the default budget."""
        return MoveLimits(
            self.max_moves,
            self.max_moves_per_node,
            self.same_asw,
            self.max_moves_per_wave,
            self.nodes_per_wave(nodes),
            self.max_moves_per_node_per_wave,
            self.max_unavailable_per_job,
            None if self.only_namespaces is None else tuple(self.only_namespaces),
            tuple(self.exclude_namespaces or ()),
            self.move_once,
            self.max_moves_per_namespace,
        )


def _share_rule(share: str, nodes: int, count: int | None) -> str:
    """How a share of nodes per wave became ``count`` (None: no limit)."""
    share = share.strip()
    if count is None:
        return f"{share}: no limit"
    exact = math.ceil(float(share.rstrip("%")) * nodes / 100 - 1e-9)
    return f"{share} of {nodes:,} nodes in scope, rounded up" + (", at least 2 (a move touches two nodes)" if count > exact else "")


_WAVE_LIMITS = (
    "max_moves_per_wave",
    "max_nodes_per_wave",
    "max_moves_per_node_per_wave",
    "max_unavailable_per_job",
    "max_moves_per_namespace",
    "only_namespaces",
    "exclude_namespaces",
    "move_once",
)


LIMIT_NAMES = ("max_moves", "max_moves_per_node", "same_asw", *_WAVE_LIMITS)
"""The options that limit a plan's moves, in the order the report lists those in force."""


_IPC_OPTIONS = {"partition_size", "depth", "rounds", "min_round_yield", "seed"}


WAVE_LIMIT_OPTIONS = {*_WAVE_LIMITS, "limit_costs"}
"""Limits every method honours: per-wave limits split waves, the namespace scope holds pods, and a plan
that would move a pod twice is routed again from its end state without detours."""


POOL_OPTIONS = {"allow_product_change", "allow_cpu_pods_on_gpu_nodes", "node_selector"}
"""Where pods may go (``pools.py``): every method honours them."""


_LIMIT_OPTIONS = {"max_moves", "max_moves_per_node", "same_asw"} | WAVE_LIMIT_OPTIONS | POOL_OPTIONS


_SOLVER_OPTIONS = {"solver", "time_limit_s", "solver_workers", "formulation", "deterministic", "lexicographic"}


MAKE_ROOM_OPTIONS = _LIMIT_OPTIONS | {"seed"}
"""What the make-room heuristic reads (``seed``: its ejection chains' tie-breaks)."""


MAKE_ROOM_EXACT_OPTIONS = MAKE_ROOM_OPTIONS | {"solver", "time_limit_s", "solver_workers", "deterministic"}
"""What the exact make-room model reads (``seed``: the solver's, and the heuristic's in compare)."""


MAKE_ROOM_METHODS = {"heuristic": MAKE_ROOM_OPTIONS, "exact": MAKE_ROOM_EXACT_OPTIONS, "compare": MAKE_ROOM_EXACT_OPTIONS}
"""The methods that make room, and the options each reads."""


TRIM_EXACT_OPTIONS = {"solver", "time_limit_s", "solver_workers", "formulation", "deterministic"}
"""What ``trim='exact'`` reads besides IPC's options."""


METHOD_OPTIONS: dict[str, set[str]] = {
    "heuristic": _IPC_OPTIONS | _LIMIT_OPTIONS | {"make_room", "trim"},
    "random": {"threshold", "seed"} | _LIMIT_OPTIONS,
    "descheduler": {"threshold", "seed"} | _LIMIT_OPTIONS,
    "repack": {"same_asw"} | WAVE_LIMIT_OPTIONS | POOL_OPTIONS,
    "exact": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS | {"force", "make_room"},
    "compare": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS | {"force", "make_room"},
    "hybrid": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS | {"trim"},
    "auto": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS,
}
"""The options each method reads (IPC's for the methods that start from IPC); ``method``,
``workers`` and ``executor`` apply to all. Giving any other option is refused rather than silently ignored."""


def _unused_by_make_room(method: str, name: str) -> str:
    return f"make_room does not use it with method '{method}' (it reads {', '.join(sorted(MAKE_ROOM_METHODS[method]))}); leave it out"


def unused_option_reason(method: str, name: str) -> str:
    """Why ``method`` cannot honour option ``name``, and what to do instead."""
    why = None
    if method == "repack" and name in ("max_moves", "max_moves_per_node"):
        why = "repack repacks every movable pod from scratch and has no migration budget"
    also = " (or with method heuristic and trim 'exact')" if name in TRIM_EXACT_OPTIONS else ""
    return unused_reason(method, name, METHOD_OPTIONS, why, also)


COSTED_LIMITS = ("max_moves", "max_moves_per_node", "same_asw", "max_unavailable_per_job", "only_namespaces", "exclude_namespaces", "move_once")
"""Limits that can cost vacated nodes (the per-wave ones only split waves), each priced by
``limit_costs``; the snapshot's disruption budgets are priced as ``disruption_budgets``."""


ROOM_FIELDS = ("objective", "requests", "for_pending", "room_level", "weights")
"""The options of objective room (``objective`` itself is read by every method)."""


_ROOM_HEURISTIC = _LIMIT_OPTIONS - {"limit_costs"} | {"seed", *ROOM_FIELDS}
_ROOM_EXACT = _ROOM_HEURISTIC | _SOLVER_OPTIONS - {"lexicographic"} | {"force"}


ROOM_METHODS = {"heuristic": _ROOM_HEURISTIC, "exact": _ROOM_EXACT, "compare": _ROOM_EXACT}
"""The methods that plan for room, and the options each reads (``seed``: the ejection chains' tie-breaks,
and the solver's; the exact model is lexicographic by phases, so ``lexicographic`` is not read)."""


DEFAULT_ROOM_REQUESTS = ("256g3072c", "128g1536c", "64g768c")
"""Objective room without shapes: 64, 128 and 256 GPUs of 12 CPUs each."""


def room_shape(text: str) -> Shape:
    """A request shape for objective room: CPUs required (``128g`` alone is refused as a typo)."""
    shape = parse_shape(text)
    if "c" not in text.strip().lower():
        raise ValueError(f"shape '{text[:64]}' gives no CPUs: write <GPUs>g<CPUs>c for the whole request, e.g. 128g1536c (128g0c for none)")
    return shape


def _used_by_room(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """Objective room reads ``ROOM_METHODS``' options; its own options need it."""
    method, name = info.data.get("method"), str(info.field_name)
    if name == "objective":
        if value == "room" and method not in ROOM_METHODS:
            raise ValueError(
                f"objective 'room' is planned by method {' or '.join(sorted(ROOM_METHODS))}, not '{method}'; leave method out (heuristic is the default)"
            )
        return value
    if info.data.get("objective") != "room":
        if value != cls.model_fields[name].default:
            raise ValueError("only objective 'room' reads it: add objective 'room' (--objective room) or leave it out")
        return value
    return refuse_unused(cls, value, info, ROOM_METHODS, ("method", "workers", "executor"), _unused_by_room)


def _unused_by_room(method: str, name: str) -> str:
    return f"objective 'room' does not use it (it reads {', '.join(sorted(ROOM_METHODS[method]))}); leave it out"
