"""Reading the snapshot and plan files the commands are given, with a hint when a file is something
else we recognise: Kubernetes objects (JSON or YAML) where a snapshot is expected, a snapshot or a plan
written as YAML (both are JSON). The hint comes first (it is the fix), then the parser's own problems."""

from __future__ import annotations

import json
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
    if not any("not valid JSON" in problem for problem in problems):
        return None
    return _yaml_documents(text)


def _yaml_documents(text: str) -> list[Any] | None:
    """The non-empty documents of ``text`` read as YAML (the bounded reader), None when it is not YAML."""
    from planner.adapters.kubernetes_documents import parse_yaml  # deferred: PyYAML (~15 ms at start-up), only for a hint on bad input

    try:
        return [doc for doc in parse_yaml(text, "input") if doc is not None]
    except SnapshotError:
        return None


def _is_kubernetes_list(text: str) -> bool:
    """Whether ``text`` is a Kubernetes List, JSON or YAML (``kubectl get ... -o json|yaml``): one object with
    an ``items`` array and ``kind: List`` (or ``NodeList``, ...) or ``apiVersion: v1``. Read from the document
    itself, not from the snapshot parser's problems, so a List the parser stops early on (a duplicate key) is
    recognised too. Only text that names ``items`` is read again, and only on this error path."""
    if "items" not in text:
        return False
    try:
        documents: list[Any] | None = [json.loads(text)]
    except RecursionError:
        return False
    except ValueError:
        documents = _yaml_documents(text)
    if not documents or len(documents) != 1 or not isinstance(documents[0], dict):
        return False
    document = documents[0]
    kind, api_version = document.get("kind"), document.get("apiVersion")
    return isinstance(document.get("items"), list) and ((isinstance(kind, str) and kind.endswith("List")) or api_version == "v1")


def snapshot_hint(text: str, problems: list[str], from_option: bool = True) -> str | None:
    """What to do when a snapshot could not be read and the text is something else we know: a kubectl List
    or other Kubernetes objects, JSON or YAML (``--from kubernetes`` where the command has it, else ``planner
    import kubernetes``), or a snapshot written as YAML (snapshots are JSON)."""
    convert = "convert it once with planner import kubernetes FILE --out SNAPSHOT"
    fix = f"add --from kubernetes, or {convert}" if from_option else convert
    if _is_kubernetes_list(text):
        return f"SNAPSHOT: this is a kubectl List (kubectl get ... -o json or -o yaml), not a snapshot: {fix}"
    kubernetes = f"SNAPSHOT: this looks like Kubernetes objects (kubectl get -o json or -o yaml): {fix}"
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
