"""The service's /docs page as headless Chromium renders it offline -> benchmarks/results/docs.png.

Starts `planner serve` with a token (the docs are public by default), loads /docs in Debian's
`chromium` (the Swagger UI assets come from the service, not a CDN) and saves a screenshot.

    .venv/bin/python benchmarks/docs_screenshot.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.harness import Server

OUT = REPO / "benchmarks" / "results" / "docs.png"


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs Debian's chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "planner.db", "docs-token-0123456789", "--workers", "1").start()
        try:
            subprocess.run(
                [
                    chromium,
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--hide-scrollbars",
                    "--virtual-time-budget=15000",
                    "--window-size=1280,1600",
                    f"--screenshot={OUT}",
                    f"{server.url}/docs",
                ],
                capture_output=True,
                check=True,
                timeout=120,
            )
        finally:
            server.stop()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
