"""Where the bundled public traces are: ``planner/data/`` inside the package (``planner/data/README.md`` gives
their source, terms and ``SHA256SUMS``).

They are package data (``[tool.setuptools.package-data]`` in ``pyproject.toml``), so a wheel, ``pip install .``
and the image of ``deploy/`` carry them as an editable install does, and ``planner generate openb`` / ``spot``
work from any directory. ``importlib.resources`` finds them where the package is; ``pip`` installs a package as
files, so that is a directory on disk. (A package imported from a zip archive has no such directory: the path
then names nothing, and the readers say the file is missing and which option gives another.)
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

TRACES_PACKAGE = "planner"
TRACES_DIRECTORY = "data"


def bundled_trace_path(*parts: str) -> Path:
    """The path of ``planner/data/<parts...>`` where the installed package has it (it may not exist)."""
    path = files(TRACES_PACKAGE) / TRACES_DIRECTORY
    for part in parts:
        path = path / part
    return Path(str(path))
