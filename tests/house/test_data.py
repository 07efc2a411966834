"""The public traces in ``planner/data/`` (``planner/data/README.md``): every file is the one
``planner/data/SHA256SUMS`` lists, the commands read them by default, and without them a command names the
missing path and the option that gives it (exit 2). ``tests/cli/test_installed_package.py`` checks that an
installed package carries them."""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.instances.openb import ENV_DIR, default_data_dir
from planner.instances.spot import DEFAULT_NODE_LIST

DATA = Path(__file__).resolve().parents[2] / "planner" / "data"
runner = CliRunner()


def listed_digests() -> dict[str, str]:
    """``SHA256SUMS`` as written by ``sha256sum`` (``<digest>  <path>``): path -> digest."""
    lines = (DATA / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    return {path: digest for digest, path in (line.split("  ", 1) for line in lines if line)}


def test_every_trace_file_is_listed_with_its_digest() -> None:
    listed = listed_digests()
    assert sorted(listed) == sorted(path.relative_to(DATA).as_posix() for path in DATA.rglob("*.csv"))
    for path, digest in listed.items():
        assert hashlib.sha256((DATA / path).read_bytes()).hexdigest() == digest, f"planner/data/{path}: not the file SHA256SUMS lists"


def test_every_file_of_the_data_directory_ships_as_package_data() -> None:
    """Each file under ``planner/data/`` matches a ``[tool.setuptools.package-data]`` pattern, so a wheel carries
    it (``tests/cli/test_installed_package.py`` builds one; this check needs no build tools)."""
    config = tomllib.loads((DATA.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["planner"]
    files = sorted(p.relative_to(DATA.parent).as_posix() for p in DATA.rglob("*") if p.is_file())
    assert len(files) == len(listed_digests()) + 2  # the traces, README.md and SHA256SUMS
    left_out = [path for path in files if not any(fnmatch.fnmatchcase(path, pattern) and path.count("/") == pattern.count("/") for pattern in patterns)]
    assert not left_out, f"not package data (pyproject.toml [tool.setuptools.package-data]): {left_out}"


def test_the_defaults_are_the_copies_in_the_package() -> None:
    assert default_data_dir() == DATA / "openb-2023"
    assert DEFAULT_NODE_LIST == DATA / "spot-gpu-2026" / "node_info_df.csv"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["generate", "spot", "--nodes", "5", "--node-list", "{missing}/node_info_df.csv"], "--node-list"),
        (["simulate", "spot", "--nodes", "5", "--days", "0.1", "--no-progress", "--node-list", "{missing}/node_info_df.csv"], "--node-list"),
        (["generate", "openb", "--at", "100", "--data-dir", "{missing}"], "--data-dir"),
        (["simulate", "placement", "--seeds", "1", "--no-progress", "--data-dir", "{missing}"], "--data-dir"),
    ],
)
def test_a_missing_trace_names_the_path_and_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], named: str) -> None:
    """As an install whose trace files are missing sees it."""
    monkeypatch.delenv(ENV_DIR, raising=False)
    missing = str(tmp_path / "missing")
    done = runner.invoke(app, [arg.replace("{missing}", missing) for arg in args])
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    assert missing in done.stderr and named in done.stderr, done.stderr
