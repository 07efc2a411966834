"""The client ``planner apply`` talks to a cluster with: the official ``kubernetes`` package (the same client
``tests/kube`` uses to check the throwaway control plane), set up from a kubeconfig and a context, probed before
anything is changed, and asked through SelfSubjectAccessReviews whether every verb the executor needs is allowed.

Why the official client: it is generated from the API server's OpenAPI (every kind and subresource the
executor uses, ``pods/eviction`` with ``policy/v1`` included), it reads kubeconfigs the way kubectl does (exec
plugins, tokens, client certificates), it is maintained by the Kubernetes project, and the test suite
already depends on it; kr8s and lightkube are smaller but would add a second client to the project.

Every problem is an ``ApplyError``: the messages to print and the exit code (2 bad input: the kubeconfig,
the context, an unreachable or refusing server, a missing permission)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from planner.kube.errors import EXIT_BAD_INPUT, KubeProblem

EXIT_STOPPED = 1
REQUEST_TIMEOUT_S = 30.0
"""Each API request's own timeout (connect and read), so a stuck server cannot hang the executor."""


class ApplyError(KubeProblem):
    """A problem of ``planner apply`` to report to the user."""


@dataclass(frozen=True)
class Permission:
    """One permission the executor needs: ``verb`` on ``resource`` (with its ``subresource``) in ``group``."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespaced_in_state: bool = False

    def name(self) -> str:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{self.verb} {resource}" + (f" ({self.group})" if self.group else "")


PERMISSIONS = (
    Permission("list", "pods"),
    Permission("watch", "pods"),
    Permission("get", "pods"),
    Permission("create", "pods"),
    Permission("patch", "pods"),
    Permission("create", "pods", subresource="eviction"),
    Permission("get", "nodes"),
    Permission("list", "nodes"),
    Permission("patch", "nodes"),
    Permission("get", "poddisruptionbudgets", group="policy"),
    Permission("create", "events"),
    Permission("get", "configmaps", namespaced_in_state=True),
    Permission("create", "configmaps", namespaced_in_state=True),
    Permission("update", "configmaps", namespaced_in_state=True),
    Permission("delete", "configmaps", namespaced_in_state=True),
)
"""What ``apply`` needs (``deploy/kubernetes/planner-apply-rbac.yaml`` grants exactly these, plus ``delete pods`` for
``--force-delete`` and ``--abort``)."""
DELETE_PODS = Permission("delete", "pods")
REPLAN_PERMISSIONS = (
    Permission("list", "namespaces"),
    Permission("list", "replicationcontrollers"),
    Permission("list", "poddisruptionbudgets", group="policy"),
    Permission("list", "replicasets", group="apps"),
    Permission("list", "deployments", group="apps"),
    Permission("list", "statefulsets", group="apps"),
)
"""What ``--on-drift replan`` needs beyond ``PERMISSIONS``: reading the live cluster into a snapshot."""


@dataclass
class Kube:
    """A connected client: the API groups the executor uses, the context's name and the server's address."""

    api_client: Any
    core: Any
    policy: Any
    context: str
    server: str


def _kubernetes() -> Any:
    try:
        import kubernetes  # deferred: the kubernetes client (a test extra; a missing one is exit 2 with the install command)
    except ImportError:
        raise ApplyError(["planner apply needs the official Kubernetes client: pip install 'kubernetes>=29'"]) from None
    return kubernetes


def server_answer(err: Exception) -> str:
    """What the server said, in one line: the status code and the message of an API error, else the error."""
    status = getattr(err, "status", None)
    if status is None:
        reason = getattr(err, "reason", None) or str(err)
        return " ".join(str(reason).split())[:300]
    message = ""
    body = getattr(err, "body", None)
    if body:
        try:
            message = str(json.loads(body).get("message") or "")
        except (ValueError, AttributeError):
            message = str(body)
    return f"{status} {getattr(err, 'reason', '') or ''}: {' '.join((message or '(no message)').split())[:300]}".strip()


def connect(kubeconfig: str, context: str | None) -> Kube:
    """Load ``kubeconfig`` (its ``context``, else its current one) and probe the server (``GET /version``, then a
    list of one node): a file that is not a kubeconfig, a missing context, a server that does not answer or
    refuses the credentials is an ``ApplyError`` naming the context and the server's answer."""
    kubernetes = _kubernetes()
    config = kubernetes.config
    try:
        contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
    except (config.ConfigException, OSError, ValueError, TypeError, AttributeError, yaml.YAMLError) as err:
        raise ApplyError([f"--kubeconfig {kubeconfig}: not a usable kubeconfig ({' '.join(str(err).split())[:200]})"]) from None
    names = [c.get("name") for c in contexts or []]
    name = context or (current or {}).get("name")
    if name not in names:
        known = ", ".join(str(n) for n in names) or "none"
        raise ApplyError([f"--context {name!r}: not in {kubeconfig} (its contexts: {known})"])
    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=name)
    except (config.ConfigException, OSError, ValueError, TypeError, AttributeError) as err:
        raise ApplyError([f"context {name!r} of {kubeconfig}: cannot be used ({' '.join(str(err).split())[:200]})"]) from None
    return _probe(kubernetes, api_client, str(name))


def connect_in_cluster() -> Kube:
    """The cluster the process runs in, through its ServiceAccount (a pod of the nightly CronJob or of the
    service), probed as ``connect`` probes; outside a pod an ``ApplyError`` saying so."""
    kubernetes = _kubernetes()
    configuration = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_incluster_config(client_configuration=configuration)
    except (kubernetes.config.ConfigException, OSError, ValueError) as err:
        raise ApplyError([f"no --kubeconfig and not inside a pod with a ServiceAccount ({' '.join(str(err).split())[:200]}): give --kubeconfig FILE"]) from None
    return _probe(kubernetes, kubernetes.client.ApiClient(configuration), "in-cluster")


def _probe(kubernetes: Any, api_client: Any, name: str) -> Kube:
    """``GET /version`` and a list of one node: a server that does not answer or refuses the credentials is
    an ``ApplyError`` naming the context and the server's answer."""
    server = str(api_client.configuration.host)
    api_client.configuration.retries = 1
    kube = Kube(api_client, kubernetes.client.CoreV1Api(api_client), kubernetes.client.PolicyV1Api(api_client), name, server)
    try:
        kubernetes.client.VersionApi(api_client).get_code(_request_timeout=REQUEST_TIMEOUT_S)
        kube.core.list_node(limit=1, _request_timeout=REQUEST_TIMEOUT_S)
    except Exception as err:  # noqa: BLE001 - any failure of the probe is the server's answer to report
        raise ApplyError(
            [f"context {name!r} (server {server}): the cluster did not accept the connection: {server_answer(err)}; nothing was changed"]
        ) from None
    return kube


def missing_permissions(kube: Kube, state_namespace: str, extra: tuple[Permission, ...] = ()) -> list[str]:
    """The permissions of ``PERMISSIONS`` (and ``extra``) the server denies to these credentials, each as
    ``verb resource``, by SelfSubjectAccessReview (which every authenticated user may create)."""
    client = _kubernetes().client
    authz = client.AuthorizationV1Api(kube.api_client)
    missing = []
    for permission in (*PERMISSIONS, *extra):
        attributes = client.V1ResourceAttributes(
            verb=permission.verb,
            resource=permission.resource,
            group=permission.group,
            subresource=permission.subresource or None,
            namespace=state_namespace if permission.namespaced_in_state else None,
        )
        review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes))
        try:
            answer = authz.create_self_subject_access_review(review, _request_timeout=REQUEST_TIMEOUT_S)
        except Exception as err:  # noqa: BLE001 - the review itself refused: report it as the server's answer
            raise ApplyError([f"context {kube.context!r}: cannot ask the server what is allowed: {server_answer(err)}"]) from None
        if not answer.status.allowed:
            where = f" in namespace {state_namespace}" if permission.namespaced_in_state else ""
            missing.append(permission.name() + where)
    return missing


def refused(err: Exception, verb: str, resource: str) -> ApplyError:
    """A 403 met while running: exit 2 naming the verb and resource, and the Role that grants them."""
    return ApplyError(
        [f"the server refused {verb} {resource}: {server_answer(err)}; grant the Role in deploy/kubernetes/planner-apply-rbac.yaml"],
        EXIT_BAD_INPUT,
    )
