"""Executing an exact room plan's end state (issue 44): trimmed, routed make-before-break, dropped moves re-targeted.

Used by ``models/room_exact.py`` on every end state it returns; the passes themselves are
``heuristics/room_trim.py``'s.
"""

from __future__ import annotations

from planner.heuristics.room_trim import retarget_dropped, trim_room_end_state
from planner.heuristics.switch_room import RoomShape
from planner.heuristics.trim import target_of
from planner.limits import MoveBudget
from planner.state import ClusterState
from planner.waves import WavePlan, target_to_waves

RETARGET_ROUNDS = 4
"""How many times ``execute`` re-targets the moves the router dropped and routes again."""


def execute(state: ClusterState, target: dict[int, int], rooms: list[RoomShape], budget: MoveBudget) -> WavePlan:
    """Make-before-break waves towards a solution's end state ``target`` (pod -> node; ``state`` is
    not changed): the end state trimmed first (``trim_room_end_state``: pods sent home where every
    count holds), then routed; while the router drops moves (a cycle of full nodes it cannot break
    under ``move_once``), the dropped pods are re-targeted where every count holds
    (``retarget_dropped``) and the end state routed again, kept while fewer moves are dropped."""
    end = state.clone()
    for p, n in target.items():
        if n != int(state.pod_node[p]):
            end.move(p, n)
    trim_room_end_state(state, end, rooms)
    executed = target_to_waves(state.clone(), target_of(state, end), budget)
    for _ in range(RETARGET_ROUNDS):
        if not executed.dropped or retarget_dropped(state, end, rooms, executed.dropped, budget) == 0:
            break
        again = target_to_waves(state.clone(), target_of(state, end), budget)
        if len(again.dropped) >= len(executed.dropped):
            break
        executed = again
    return executed
