"""A non-editable install carries the bundled traces (``planner/data/``, package data in ``pyproject.toml``).

The package is installed as ``deploy/Dockerfile`` installs it: pip builds it from the files the image copies
(``pyproject.toml``, ``README.md``, ``planner/``) into a fresh directory, no repository beside it. That
install's ``planner`` command, run from a directory outside the repository with this checkout off the path,
generates the spot and openb instances from the copies it carries, and those copies are the files
``SHA256SUMS`` lists. The build runs without build isolation (no network): it needs ``setuptools>=68`` and
``wheel``, the build-system's requirements, which the ``test`` extra installs (without them the tests are
skipped, saying so, as the other test extras' tests are).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

IMAGE_SOURCES = ("pyproject.toml", "README.md")
"""What deploy/Dockerfile copies besides ``planner/``."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package installed with ``pip install --no-deps --target``; the directory it is in."""
    if not _build_requirements_installed():
        pytest.skip("the test extra's setuptools>=68 and wheel (the build-system's requirements) are not installed: pip install -e '.[test]'")
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    source.mkdir()
    for name in IMAGE_SOURCES:
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "planner", source / "planner", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    target = root / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def _build_requirements_installed() -> bool:
    """``setuptools>=68`` and ``wheel`` importable here: the build runs without isolation, offline."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
        importlib.metadata.version("wheel")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 68


def _without_checkout(**extra: str) -> dict[str, str]:
    """The environment minus anything that points at this checkout's code, trace or store (``PYTHONPATH``,
    ``PLANNER_OPENB_DIR``, ``DATABASE_URL``)."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PLANNER_OPENB_DIR", "DATABASE_URL", "DATABASE_URL_FILE"}}
    return {**env, "COLUMNS": "200", "TERM": "dumb", **extra}


def _run_installed(site: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``planner`` console script (what the image's ENTRYPOINT runs), from ``cwd``."""
    return subprocess.run(
        [str(site / "bin" / "planner"), *args], capture_output=True, text=True, cwd=cwd, env=_without_checkout(PYTHONPATH=str(site), **env), timeout=300
    )


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory outside the repository (and outside the install)."""
    assert not tmp_path.resolve().is_relative_to(REPO)
    return tmp_path


def test_the_install_is_the_copy_not_this_checkout(installed: Path, elsewhere: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import planner; print(planner.__file__)"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=_without_checkout(PYTHONPATH=str(installed)),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == (installed / "planner" / "__init__.py").resolve()


def test_the_install_carries_every_trace_file_sha256sums_lists(installed: Path) -> None:
    data = installed / "planner" / "data"
    assert (data / "README.md").read_text(encoding="utf-8").startswith("# Public traces")
    lines = (data / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    listed = dict(reversed(line.split("  ", 1)) for line in lines if line)
    assert sorted(listed) == sorted(p.relative_to(data).as_posix() for p in data.rglob("*.csv"))
    assert len(listed) == 9
    for path, digest in listed.items():
        assert hashlib.sha256((data / path).read_bytes()).hexdigest() == digest, path


def test_an_installed_planner_generates_spot(installed: Path, elsewhere: Path) -> None:
    done = _run_installed(installed, elsewhere, "generate", "spot", "--nodes", "20", "--seed", "3", "--out", "spot.json")
    assert done.returncode == 0, done.stdout + done.stderr
    snapshot = json.loads((elsewhere / "spot.json").read_text())
    assert len(snapshot["nodes"]) == 20 and snapshot["pods"]


def test_an_installed_planner_generates_openb(installed: Path, elsewhere: Path) -> None:
    done = _run_installed(installed, elsewhere, "generate", "openb", "--at", "100", "--out", "openb.json")
    assert done.returncode == 0, done.stdout + done.stderr
    snapshot = json.loads((elsewhere / "openb.json").read_text())
    assert len(snapshot["nodes"]) == 1213 and snapshot["pods"]


def test_an_installed_planner_still_takes_another_trace_directory(installed: Path, elsewhere: Path) -> None:
    """``--data-dir`` and ``$PLANNER_OPENB_DIR`` still override the bundled copy."""
    missing = str(elsewhere / "none")
    done = _run_installed(installed, elsewhere, "generate", "openb", "--at", "100", "--data-dir", missing)
    assert done.returncode == 2 and missing in done.stderr and "from --data-dir" in done.stderr, done.stderr
    done = _run_installed(installed, elsewhere, "generate", "openb", "--at", "100", PLANNER_OPENB_DIR=missing)
    assert done.returncode == 2 and missing in done.stderr and "from $PLANNER_OPENB_DIR" in done.stderr, done.stderr
    done = _run_installed(installed, elsewhere, "generate", "spot", "--nodes", "5", "--node-list", f"{missing}/node_info_df.csv")
    assert done.returncode == 2 and missing in done.stderr and "--node-list" in done.stderr, done.stderr


def test_an_installed_planner_carries_its_store_migrations(installed: Path, elsewhere: Path) -> None:
    """What the image's ``planner serve`` runs at start: the store's schema migrations, from the install."""
    done = _run_installed(installed, elsewhere, "db", "upgrade", "--db", "store.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("revision none -> ") and (elsewhere / "store.db").is_file(), done.stdout
