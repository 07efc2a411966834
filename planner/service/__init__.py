"""The service's persistence and settings: the job and plan store (SQLAlchemy, Alembic migrations), the database URL, secrets."""
