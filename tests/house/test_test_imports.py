"""A house rule of issue 41 for the tests: no module imports a test module (``test_*``) or a conftest. A helper,
oracle, strategy or cluster that two test files (or a benchmark) share lives in ``tests/support/``; a fixture
lives in a conftest, which pytest loads by itself."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _named_modules(statement: ast.Import | ast.ImportFrom) -> list[str]:
    """Every module an import statement may name, dotted in full: ``from tests.a import b`` names tests.a
    and tests.a.b (b may be a module); a relative import keeps its leading dots."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    base = "." * statement.level + (statement.module or "")
    joint = "." if statement.module else ""
    return [base, *(f"{base}{joint}{alias.name}" for alias in statement.names)]


def _imports_of_test_modules(path: Path) -> list[str]:
    """Imports in ``path`` of a test module (``test_*``) or of a conftest: a helper two test files share
    belongs in ``tests/support/``, a fixture in a conftest (which pytest loads by itself)."""
    offenders = []
    for statement in ast.walk(ast.parse(path.read_text())):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            parts = [part for module in _named_modules(statement) for part in module.split(".")]
            if any(part.startswith("test_") or part == "conftest" for part in parts):
                offenders.append(f"{path.relative_to(REPO)}:{statement.lineno}: {ast.unparse(statement)}")
    return offenders


def test_no_module_imports_a_test_module_or_conftest():
    modules = sorted({*REPO.joinpath("tests").rglob("*.py"), *REPO.joinpath("benchmarks").rglob("*.py")})
    assert len(modules) > 100, "the tests and benchmarks were not found"
    offenders = [o for p in modules for o in _imports_of_test_modules(p)]
    print("\n".join(offenders))
    assert not offenders, "modules importing a test module (move the shared helper to tests/support/):\n" + "\n".join(offenders)
