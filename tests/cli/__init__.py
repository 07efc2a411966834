"""The `planner` command as users run it: exit codes, messages, outputs, every documented command, golden plans."""
