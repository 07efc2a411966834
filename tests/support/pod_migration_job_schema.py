"""koordinator's PodMigrationJob, the subset the planner writes, as a check: written from koordinator's
published CRD (github.com/koordinator-sh/koordinator,
config/crd/bases/scheduling.koordinator.sh_podmigrationjobs.yaml: group scheduling.koordinator.sh, version
v1alpha1, kind PodMigrationJob, cluster scoped; spec.podRef required; spec.mode, spec.ttl strings;
spec.reservationOptions.template free-form) plus Kubernetes' object-name rule (DNS-1123 subdomain)."""

from __future__ import annotations

import re

DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")


SPEC_FIELDS = {"deleteOptions", "mode", "paused", "podRef", "reservationOptions", "ttl"}


POD_REF_FIELDS = {"apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid"}


RESERVATION_OPTION_FIELDS = {"preemptionOptions", "reservationRef", "template"}


def check_pod_migration_job(obj: dict) -> None:
    """The CRD subset: raises AssertionError naming the first field that breaks it."""
    assert obj["apiVersion"] == "scheduling.koordinator.sh/v1alpha1" and obj["kind"] == "PodMigrationJob"
    name = obj["metadata"]["name"]
    assert len(name) <= 253 and DNS_1123.match(name), f"metadata.name {name!r} is not a DNS-1123 subdomain"
    assert "namespace" not in obj["metadata"], "PodMigrationJob is cluster scoped"
    spec = obj["spec"]
    assert set(spec) <= SPEC_FIELDS, f"spec has unknown fields {set(spec) - SPEC_FIELDS}"
    assert isinstance(spec["podRef"], dict) and set(spec["podRef"]) <= POD_REF_FIELDS
    assert all(isinstance(v, str) for v in spec["podRef"].values())
    assert spec["mode"] in ("ReservationFirst", "EvictDirectly")
    assert isinstance(spec["ttl"], str) and DURATION.match(spec["ttl"]), f"spec.ttl {spec['ttl']!r} is not a duration"
    assert set(spec["reservationOptions"]) <= RESERVATION_OPTION_FIELDS
    for value in obj["metadata"].get("labels", {}).values():
        assert isinstance(value, str) and len(value) <= 63
