"""``python -m planner``: the ``planner`` command, for a checkout that is on the path but not installed."""

from planner.cli import main

main()
