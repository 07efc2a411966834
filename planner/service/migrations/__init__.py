"""Alembic migrations of the job store (``planner.service.store``). ``Store`` upgrades a database to the
newest revision when it opens it; ``planner db upgrade`` does it explicitly (an init container)."""
