"""Where the planner writes files: ``--out-dir DIR`` (a defrag plan's PodMigrationJobs one file per
wave, with ``index.txt``; ``render/kubernetes_waves.py`` writes the files' text) and ``--out FILE``.

A file is written only where asked, whoever else can write the directory:

* ``--out-dir``: a directory that exists and is not empty is refused (exit 2) unless ``--force``:
  wave files left from another plan would be applied with this one's. With ``--force`` the files this
  writer writes (``wave-*.yaml``, ``index.txt``) are removed first, and nothing else is touched. Every
  file is then created new (``O_CREAT | O_EXCL | O_NOFOLLOW``, relative to the directory opened once),
  so a symbolic link put in the directory is never followed: one named like the planner's files is
  refused (exit 2, naming it) before anything is removed, and one that appears while the files are
  written makes the create fail (exit 2) instead of writing where it points.
* ``--out``: a regular file is replaced (or created) at the path given, never through a symbolic link
  (``O_NOFOLLOW``). A symbolic link at that path is refused (exit 2, naming it and its target) when it
  is dangling or points to a regular file, which would create or replace a file elsewhere; a link to
  a device, a pipe or a terminal (``--out /dev/stdout``) is written through, as nothing is created.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from planner.cluster import SnapshotError
from planner.render.kubernetes_waves import INDEX, wave_files

NEW_FILE_MODE = 0o644
"""Permissions of a file the planner creates (before the umask): plans and objects are not secret."""


def _ours(name: str) -> bool:
    return name == INDEX or (name.startswith("wave-") and name.endswith(".yaml"))


def _link_target(path: str, dir_fd: int | None = None) -> str:
    try:
        return os.readlink(path, dir_fd=dir_fd)
    except OSError:
        return "?"


def check_out_dir(fmt: str | None, out_dir: str | None, force: bool | None) -> None:
    """Before any work: ``--out-dir`` goes with ``-o podmigrationjob``, and names a new directory, an
    empty one, or (with ``force``) one whose files may be replaced; else exit 2 naming the fix.
    ``force`` None: the command has no ``--force`` for this (``defrag``'s means something else)."""
    if out_dir is None:
        return
    if fmt not in (None, "podmigrationjob"):
        raise SnapshotError([f"--out-dir: writes PodMigrationJobs one file per wave; use it with -o podmigrationjob, not -o {fmt}"])
    path = Path(out_dir)
    if path.is_symlink() and not path.exists():
        raise SnapshotError([f"--out-dir: '{out_dir}' is a dangling symbolic link (to '{_link_target(out_dir)}'); give a directory"])
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


def _replaceable(out_dir: str, dir_fd: int) -> list[str]:
    """The planner's files in the directory, to remove before writing; exit 2 naming an entry with a
    planner file's name that is not a regular file (a symbolic link, a directory, a pipe)."""
    names = []
    for name in sorted(os.listdir(dir_fd)):
        if not _ours(name):
            continue
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
        entry = os.path.join(out_dir, name)
        if stat.S_ISLNK(mode):
            raise SnapshotError(
                [
                    (
                        f"--out-dir: '{entry}' is a symbolic link (to '{_link_target(name, dir_fd)}'), not a file the planner wrote; "
                        "the planner writes only new files in the directory and never follows a link out of it. Remove the link, or give another directory"
                    )
                ]
            )
        if not stat.S_ISREG(mode):
            raise SnapshotError([f"--out-dir: '{entry}' is not a regular file; remove it, or give another directory"])
        names.append(name)
    return names


def _create(name: str, text: str, dir_fd: int) -> None:
    """Create ``name`` new in the directory ``dir_fd`` and write ``text``: fails (FileExistsError)
    if anything, a symbolic link included, has that name."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, NEW_FILE_MODE, dir_fd=dir_fd)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text)


def write_wave_files(objects: list[dict[str, Any]], out_dir: str, force: bool | None) -> list[str]:
    """Write the wave files and the index into ``out_dir`` (created if missing); their names. Exit 2
    (``SnapshotError``) when the directory is refused or cannot be written (module docstring)."""
    check_out_dir(None, out_dir, force)
    files = wave_files(objects)
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as err:
        raise SnapshotError([f"--out-dir: cannot write '{out_dir}': {err.strerror or err}"]) from None
    try:
        for name in _replaceable(out_dir, dir_fd):
            os.unlink(name, dir_fd=dir_fd)
        for name, text in files.items():
            try:
                _create(name, text, dir_fd)
            except FileExistsError:
                raise SnapshotError(
                    [
                        f"--out-dir: '{os.path.join(out_dir, name)}' appeared while the files were written (another process writes the directory); nothing was written through it"
                    ]
                ) from None
    except OSError as err:
        raise SnapshotError([f"--out-dir: cannot write '{out_dir}': {err.strerror or err}"]) from None
    finally:
        os.close(dir_fd)
    return list(files)


@contextlib.contextmanager
def open_out_file(out: str, flag: str = "--out") -> Iterator[IO[str]]:
    """``out`` opened for writing text as the module docstring says (a regular file replaced or
    created at that very path, never through a symbolic link to a file); ``SnapshotError`` (exit 2)
    naming ``flag`` and the path when refused. Other errors are the OSError of ``open``."""
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, NEW_FILE_MODE)
    except OSError:
        if not os.path.islink(out):
            raise
        fd = _through_link(out, flag)
    with open(fd, "w", encoding="utf-8") as f:
        yield f


def _through_link(out: str, flag: str) -> int:
    """``out`` is a symbolic link: a descriptor for what it points to when that is not a regular file
    (a device, a pipe, a terminal); else exit 2 naming it. Opened without creating or truncating, and
    checked on the descriptor, so a link switched meanwhile cannot make it write a file."""
    refusal = SnapshotError(
        [
            (
                f"{flag}: '{out}' is a symbolic link (to '{_link_target(out)}'); the planner writes a file only at the path given, "
                "never through a link to another file. Remove the link, or give the target's path"
            )
        ]
    )
    try:
        fd = os.open(out, os.O_WRONLY)
    except OSError:
        raise refusal from None  # dangling, or not writable: either way not a file to create through it
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise refusal
    return fd
