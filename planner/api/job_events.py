"""Job ends announced across replicas: on PostgreSQL the store sends ``NOTIFY planner_jobs, '<job id>'``
when a job succeeds, fails or is cancelled (delivered when that transaction commits), and every
replica listens, so a request waiting on ``?wait=`` for a job another replica ran answers at once
instead of at its next poll of the store (once a second). A lost connection is reopened; the poll
stays as the fallback, so a missed notification costs at most that second."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.engine import make_url

CHANNEL = "planner_jobs"
log = logging.getLogger("planner.api")


class JobEndListener(threading.Thread):
    """Calls ``on_end(job_id)`` for every job end any replica announces."""

    def __init__(self, url: str, on_end: Callable[[str], None]):
        super().__init__(name="planner-job-events", daemon=True)
        parsed = make_url(url)
        self.conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        self.on_end = on_end
        self.stopping = threading.Event()

    def run(self) -> None:
        import psycopg  # deferred: psycopg (PostgreSQL only; SQLite stores never load it)

        while not self.stopping.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not self.stopping.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self.on_end(note.payload)
            except Exception as err:  # noqa: BLE001 - the database restarted or the network dropped: listen again
                if not self.stopping.is_set():
                    log.warning(
                        "job-end notifications interrupted (%s); reconnecting in 1 s",
                        str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__,
                    )
                    self.stopping.wait(1.0)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=5)
