"""Reading the snapshot and plan files the commands are given, with a hint when a file is something
else we recognise: Kubernetes objects (JSON or YAML) where a snapshot is expected, a snapshot or a plan
written as YAML (both are JSON). The hint comes first (it is the fix), then the parser's own problems."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.cluster import SnapshotError
from planner.plans import parse_plan
from planner.snapshot import parse_cluster, read_text


def read_snapshot(path: str, from_option: bool = True) -> Any:
    """A snapshot file; when it is not one, the problems say what it looks like instead (``snapshot_hint``)."""
    text = read_text(path)
    return _with_hint(lambda: parse_cluster(text, source=str(path)), lambda problems: snapshot_hint(text, problems, from_option))


def read_plan(path: str) -> Any:
    """A plan file; a plan written as YAML is told plans are JSON (``plan_hint``)."""
    text = read_text(path, "plan")
    return _with_hint(lambda: parse_plan(text, source=path), lambda problems: plan_hint(text, problems))


def _with_hint(parse: Callable[[], Any], hint: Callable[[list[str]], str | None]) -> Any:
    """``parse()``, its SnapshotError extended by ``hint(problems)`` when that has something to say."""
    try:
        return parse()
    except SnapshotError as err:
        extra = hint(err.problems)
        if extra:
            raise SnapshotError([extra, *err.problems]) from None  # the hint first: it is the fix
        raise


def _yaml_instead(text: str, problems: list[str]) -> list[Any] | None:
    """The documents of ``text`` read as YAML, when JSON was expected and it was not JSON (else None)."""
    from planner.adapters.kubernetes_documents import parse_yaml  # deferred: PyYAML (~15 ms at start-up), only for a hint on bad input

    if not any("not valid JSON" in problem for problem in problems):
        return None
    try:
        return [doc for doc in parse_yaml(text, "input") if doc is not None]
    except SnapshotError:
        return None


def snapshot_hint(text: str, problems: list[str], from_option: bool = True) -> str | None:
    """What to do when a snapshot could not be read and the text is something else we know: Kubernetes
    objects, JSON or YAML (``--from kubernetes`` where the command has it, else ``planner import
    kubernetes``), or a snapshot written as YAML (snapshots are JSON)."""
    convert = "convert it once with planner import kubernetes FILE --out SNAPSHOT"
    kubernetes = "SNAPSHOT: this looks like Kubernetes objects (kubectl get -o json or -o yaml): " + (
        f"add --from kubernetes, or {convert}" if from_option else convert
    )
    if any(problem.startswith(("apiVersion:", "kind:", "items:")) for problem in problems):
        return kubernetes
    docs = _yaml_instead(text, problems)
    if docs and all(isinstance(doc, dict) and ("kind" in doc or "items" in doc) for doc in docs):
        return kubernetes
    if docs and len(docs) == 1 and isinstance(docs[0], dict) and "nodes" in docs[0]:
        return "SNAPSHOT: this is YAML; snapshots are JSON: convert it (for example yq -o=json . FILE > SNAPSHOT.json, or planner's own output with --out)"
    return None


def plan_hint(text: str, problems: list[str]) -> str | None:
    """A plan written as YAML (``-o yaml``) where a plan file is read: plans are JSON."""
    docs = _yaml_instead(text, problems)
    if docs and len(docs) == 1 and isinstance(docs[0], dict) and ({"waves", "placements", "heuristic"} & set(docs[0])):
        return "PLAN: this is YAML (-o yaml); plan files are JSON: write the plan with -o json or --out FILE"
    return None
