"""A fake ``kubectl`` that records every call in order (and the objects applied), and runs a generated
script with it first on PATH: the render tests, the round trip and benchmarks/kubernetes.py use it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

FAKE_KUBECTL = r"""#!/usr/bin/env bash
# records each call (and the objects applied) and answers status queries from $FAKE_PHASES
echo "$*" >> "$FAKE_LOG"
if [[ "$1" == "apply" ]]; then
  cat | grep -E '^  name: ' | sed 's/^  name: /  applied /' >> "$FAKE_LOG"
  exit 0
fi
if [[ "$1" == "get" ]]; then
  name="${2#podmigrationjob/}"
  if [[ -n "${FAKE_FAIL:-}" && "$name" == *"$FAKE_FAIL"* ]]; then echo -n Failed; else echo -n Succeeded; fi
  exit 0
fi
exit 1
"""


def run_script(tmp_path: Path, script: str, fake_kubectl: str = FAKE_KUBECTL, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``script`` with ``fake_kubectl`` first on PATH; its recorded calls (non-empty lines)."""
    fake = tmp_path / "bin" / "kubectl"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(fake_kubectl)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    path = tmp_path / "plan.sh"
    path.write_text(script)
    log = tmp_path / "calls.log"
    log.write_text("")
    environment = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "FAKE_LOG": str(log), "POLL_S": "0", **env}
    done = subprocess.run(["bash", str(path)], env=environment, capture_output=True, text=True, timeout=60)
    return done, [line for line in log.read_text().splitlines() if line]
