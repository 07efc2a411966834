"""``python -m planner.cli``: the ``planner`` command (as ``python -m planner``)."""

from planner.cli import main

main()
