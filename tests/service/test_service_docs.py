"""The API docs work offline: Swagger UI and ReDoc assets come from the service itself, and the pages
render in a real headless Chromium (Debian's ``chromium``, which ``.ci/run`` installs)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.harness import Server

TOKEN = "docs-token-0123456789"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("docs") / "planner.db", TOKEN, "--workers", "1").start()
    yield srv
    srv.stop()


def rendered(url: str) -> str:
    """The DOM of ``url`` after its scripts ran, in headless Chromium."""
    done = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--virtual-time-budget=15000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_docs_pages_load_their_assets_from_the_service(server: Server) -> None:
    for page in ("/docs", "/redoc"):
        html = httpx.get(server.url + page, timeout=30).text  # no token: the docs are public by default
        sources = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert sources and all(s.startswith("/docs-static/") or s == "/openapi.json" for s in sources), sources
        for source in sources:
            asset = httpx.get(server.url + source, timeout=30)
            assert asset.status_code == 200, source
            assert "cdn.redoc.ly" not in asset.text and "cdn.jsdelivr" not in asset.text, source  # no image or script from a CDN
    assert httpx.get(server.url + "/openapi.json", timeout=30).json()["info"]["title"] == "GPU fleet planner"
    assert httpx.get(server.url + "/v1/jobs", timeout=30).status_code == 401  # the API itself still needs the token


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it); the docs were not rendered")
def test_swagger_ui_and_redoc_render_every_route_in_headless_chromium(server: Server) -> None:
    spec = httpx.get(server.url + "/openapi.json", timeout=30).json()
    swagger = rendered(server.url + "/docs")
    assert "Authorize" in swagger  # the bearer scheme gives the Authorize button
    for path, operations in spec["paths"].items():
        assert f">{path}<" in swagger.replace("<wbr>", "") or path in swagger, path
        for operation in operations.values():
            assert operation["summary"] in swagger, operation["summary"]
    redoc = rendered(server.url + "/redoc")
    assert all(op["summary"] in redoc for ops in spec["paths"].values() for op in ops.values())


def test_private_docs_need_the_token(tmp_path: Path) -> None:
    srv = Server(tmp_path / "private.db", TOKEN, "--workers", "1", "--private-docs").start()
    try:
        assert [httpx.get(srv.url + p, timeout=30).status_code for p in ("/docs", "/openapi.json", "/docs-static/swagger-ui.css")] == [401] * 3
        with srv.client() as client:
            assert client.get("/docs").status_code == 200
    finally:
        srv.stop()
