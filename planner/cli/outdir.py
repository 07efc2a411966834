"""``--out-dir DIR``: a defrag plan's PodMigrationJobs one file per wave, with ``index.txt``
(``render/kubernetes_waves.py`` writes the files' text; this module puts them on disk).

A directory that exists and is not empty is refused (exit 2) unless ``--force``: wave files left from
another plan would be applied with this one's. With ``--force`` the files this writer writes
(``wave-*.yaml``, ``index.txt``) are removed first, and nothing else is touched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from planner.cluster import SnapshotError
from planner.render.kubernetes_waves import INDEX, wave_files


def _ours(name: str) -> bool:
    return name == INDEX or (name.startswith("wave-") and name.endswith(".yaml"))


def check_out_dir(fmt: str | None, out_dir: str | None, force: bool | None) -> None:
    """Before any work: ``--out-dir`` goes with ``-o podmigrationjob``, and names a new directory, an
    empty one, or (with ``force``) one whose files may be replaced; else exit 2 naming the fix.
    ``force`` None: the command has no ``--force`` for this (``defrag``'s means something else)."""
    if out_dir is None:
        return
    if fmt not in (None, "podmigrationjob"):
        raise SnapshotError([f"--out-dir: writes PodMigrationJobs one file per wave; use it with -o podmigrationjob, not -o {fmt}"])
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise SnapshotError([f"--out-dir: '{out_dir}' is a file, not a directory; give a directory (it is created if missing)"])
    entries = sorted(os.listdir(path)) if path.is_dir() else []
    if entries and not force:
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        fix = (
            "--force to replace the planner's files there (wave-*.yaml, index.txt)"
            if force is not None
            else "write the plan with --out and run planner render PLAN --snapshot SNAPSHOT --out-dir DIR --force to replace the planner's files there"
        )
        raise SnapshotError(
            [
                (
                    f"--out-dir: '{out_dir}' exists and is not empty ({shown}); wave files from another plan would be applied with this one's. "
                    f"Give a new or empty directory, or {fix}"
                )
            ]
        )


def write_wave_files(objects: list[dict[str, Any]], out_dir: str, force: bool | None) -> list[str]:
    """Write the wave files and the index into ``out_dir`` (created if missing); their names. Exit 2
    (``SnapshotError``) when the directory is refused or cannot be written."""
    check_out_dir(None, out_dir, force)
    path = Path(out_dir)
    files = wave_files(objects)
    try:
        path.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(path):
            if _ours(name) and (path / name).is_file():
                (path / name).unlink()
        for name, text in files.items():
            (path / name).write_text(text, encoding="utf-8")
    except OSError as err:
        raise SnapshotError([f"--out-dir: cannot write '{out_dir}': {err.strerror or err}"]) from None
    return list(files)
