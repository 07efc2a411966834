"""The pinned solver versions work together in one process, in either import order."""

from __future__ import annotations

import subprocess
import sys

import pytest

SOLVE_ALL = """
import {first}
import {second}
from ortools.sat.python import cp_model
import highspy
import pulp

# maximise x subject to 2x <= 7, x integer in [0, 10]: optimum 3
m = cp_model.CpModel()
x = m.new_int_var(0, 10, "x")
m.add(2 * x <= 7)
m.maximize(x)
s = cp_model.CpSolver()
s.parameters.num_workers = 2
s.parameters.max_time_in_seconds = 10
assert s.solve(m) == cp_model.OPTIMAL and s.value(x) == 3, "cp-sat"

h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.setOptionValue("time_limit", 10.0)
h.addVar(0, 10)
h.changeColCost(0, -1)
h.changeColIntegrality(0, highspy.HighsVarType.kInteger)
h.addRow(-highspy.kHighsInf, 7, 1, [0], [2.0])
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.getModelStatus()
assert round(h.getSolution().col_value[0]) == 3, "highspy"

for solver in (pulp.HiGHS(msg=False, timeLimit=10), pulp.PULP_CBC_CMD(msg=False, timeLimit=10)):
    p = pulp.LpProblem("one", pulp.LpMaximize)
    y = pulp.LpVariable("y", 0, 10, cat="Integer")
    p += y
    p += 2 * y <= 7
    p.solve(solver)
    assert pulp.LpStatus[p.status] == "Optimal" and round(y.value()) == 3, type(solver).__name__
print("ok")
"""


@pytest.mark.parametrize(
    "first,second",
    [("highspy", "ortools.linear_solver.pywraplp"), ("ortools.linear_solver.pywraplp", "highspy")],
)
def test_ortools_and_highspy_solve_in_one_process(first: str, second: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SOLVE_ALL.format(first=first, second=second)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_pinned_versions_are_installed() -> None:
    from importlib.metadata import version

    assert version("ortools") == "9.15.6755"
    assert version("highspy") == "1.12.0"
