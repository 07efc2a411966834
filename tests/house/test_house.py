"""House rules of issue 41 that a reading of the source can check: imports inside functions only where
a heavy or optional dependency is deferred (and the comment says which), and no module over 500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "planner"
MAX_LINES = 500


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.relative_to(PACKAGE).parts)


def _undocumented_deferred_imports(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    found = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                nearby = lines[max(0, node.lineno - 3) : node.lineno]  # its line and the 2 above
                if not any("deferred:" in line for line in nearby):
                    found.add((node.lineno, ast.unparse(node)))
    return [f"planner/{path.relative_to(PACKAGE)}:{line}: {statement}" for line, statement in sorted(found)]


def test_imports_inside_functions_say_what_they_defer():
    offenders = [o for p in _modules() for o in _undocumented_deferred_imports(p)]
    print("\n".join(offenders))
    assert not offenders, "imports inside functions without a 'deferred: <what> (<why>)' comment:\n" + "\n".join(offenders)


def test_no_module_over_500_lines():
    long = [f"planner/{p.relative_to(PACKAGE)}: {n} lines" for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES]
    print("\n".join(long))
    assert not long, "modules over 500 lines:\n" + "\n".join(long)
