"""The policy of an unattended ``planner apply`` (the nightly CronJob's apply step): whether to carry the plan
out at all, and how.

```yaml
apiVersion: planner.io/v1
kind: ApplyPolicy
metadata: {name: nightly}
spec:
  apply: true              # false: the plan is kept, nothing is changed (exit 0)
  onDrift: replan          # stop | replan
  steer: fit               # fit | taint | sources
  waveDeadlineSeconds: 600
  forceDelete: false
```

Read with the bounded YAML reader (size, depth and alias bounds); an unknown field, a wrong type or a value out
of range is a problem naming its path (``spec.onDrift: ...``), never ignored. A flag given on the command line
wins over the policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.bounded_input import DocumentError, short_value
from planner.bounded_yaml import load_one

API_VERSION = "planner.io/v1"
KIND = "ApplyPolicy"
FIELDS = {"apply", "onDrift", "steer", "waveDeadlineSeconds", "forceDelete"}


@dataclass(frozen=True)
class ApplyPolicy:
    apply: bool = True
    on_drift: str | None = None
    steer: str | None = None
    wave_deadline_s: float | None = None
    force_delete: bool | None = None


def _choice(spec: dict[str, Any], key: str, choices: tuple[str, ...], problems: list[str]) -> str | None:
    value = spec.get(key)
    if value is None:
        return None
    if value not in choices:
        problems.append(f"spec.{key}: {short_value(value)} is not one of {', '.join(choices)}")
        return None
    return str(value)


def _flag(spec: dict[str, Any], key: str, problems: list[str]) -> bool | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, bool):
        problems.append(f"spec.{key}: must be true or false, got {short_value(value)}")
        return None
    return value


def read_apply_policy(text: str, source: str, on_drift: tuple[str, ...], steer: tuple[str, ...]) -> ApplyPolicy:
    """The policy in ``text``; ``DocumentError`` listing every problem with its path."""
    doc = load_one(text, source)
    if not isinstance(doc, dict):
        raise DocumentError([f"{source}: an {KIND} document (apiVersion {API_VERSION}) is a mapping, got {short_value(doc)}"])
    problems = []
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        problems.append(f"apiVersion/kind: expected {API_VERSION} {KIND}, got {short_value(doc.get('apiVersion'))} {short_value(doc.get('kind'))}")
    problems += [
        f"{key}: unknown field (known: apiVersion, kind, metadata, spec)" for key in sorted(set(doc) - {"apiVersion", "kind", "metadata", "spec"}, key=str)
    ]
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        raise DocumentError([*problems, f"spec: must be a mapping, got {short_value(spec)}"])
    problems += [f"spec.{key}: unknown field (known: {', '.join(sorted(FIELDS))})" for key in sorted(set(spec) - FIELDS, key=str)]
    deadline = spec.get("waveDeadlineSeconds")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not 1 <= deadline <= 86_400):
        problems.append(f"spec.waveDeadlineSeconds: a number of seconds from 1 to 86400, got {short_value(deadline)}")
        deadline = None
    policy = ApplyPolicy(
        apply=bool(_flag(spec, "apply", problems) if spec.get("apply") is not None else True),
        on_drift=_choice(spec, "onDrift", on_drift, problems),
        steer=_choice(spec, "steer", steer, problems),
        wave_deadline_s=float(deadline) if deadline is not None else None,
        force_delete=_flag(spec, "forceDelete", problems),
    )
    if problems:
        raise DocumentError([f"{source}: {p}" for p in problems])
    return policy
