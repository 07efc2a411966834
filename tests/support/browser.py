"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol: load a page, count the
requests it makes, wait until its charts are drawn, read values out of it and take a screenshot. For
the view tests and ``benchmarks/view.py``."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Self

import httpx
import websocket

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one tab; ``load`` a URL, then ``evaluate`` JavaScript in it."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        assert CHROMIUM is not None, "needs Debian's chromium"
        self.profile = tempfile.mkdtemp(prefix="view-chromium-")
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        targets = httpx.get(f"http://127.0.0.1:{port}/json", timeout=30).json()
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=120, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.call("Network.enable")
        self.call("Page.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def _wait_event(self, method: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            self.events.append(json.loads(self.ws.recv()))
        self.ws.settimeout(120)

    def load(self, url: str, timeout_s: float = 120) -> dict[str, Any]:
        """Open ``url`` and wait for its charts: the requests it made (the page's own first) and the
        milliseconds from the request to the load event and to ``window.viewReady``."""
        self.events = []
        self.call("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired", timeout_s)
        deadline = time.monotonic() + timeout_s
        while self.evaluate("typeof window.viewReady") != "number":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: the charts were not drawn ({self.evaluate('document.title')})")
            time.sleep(0.05)
        timing = self.evaluate(
            "(() => { const n = performance.getEntriesByType('navigation')[0]; return [n.loadEventEnd, window.viewReady, window.viewDrawMs]; })()"
        )
        self.call("Runtime.evaluate", expression="0")  # drains the events the page sent meanwhile
        requests = [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]
        return {"requests": requests, "load_ms": timing[0], "ready_ms": timing[1], "draw_ms": timing[2]}

    def headers(self, **headers: str) -> None:
        """Send ``headers`` with every request from now on (``Authorization`` for the service)."""
        self.call("Network.setExtraHTTPHeaders", headers=headers)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1400, height: int = 1800) -> None:
        """A PNG of the top ``height`` pixels of the page."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(0.5)
        shot = self.call("Page.captureScreenshot", format="png", clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            if hasattr(self, "ws"):
                self.ws.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def page_requests(loaded: dict[str, Any], page_url: str) -> list[str]:
    """The requests a page made besides its own document (``data:`` URLs never leave it)."""
    return [url for url in loaded["requests"] if url != page_url and not url.startswith("data:")]
