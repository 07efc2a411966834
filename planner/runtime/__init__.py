"""Where independent pieces run (inline, a process pool, Ray) and how the process runs them (the paused collector)."""
