"""The snapshot's Dynamic Resource Allocation fields (an optional addition to format v1).

A node lists the ``devices`` its ResourceSlices publish (``resource.k8s.io/v1``) and a pod the
``device_claims`` it uses (ResourceClaims, or ResourceClaimTemplates: one claim per pod). The planning
meaning is carried by resources by name, derived once by the importer so that every planner obeys it
through the rules they already share: each request draws ``count`` devices of the one device kind its
selectors match on a node, charged as ``requests`` on the kind's resources and offered as ``resources``
by the node (``rules/dra.py`` states the encoding and checks it). These fields say which devices and
claims those numbers come from, and which devices a placed pod's claims hold.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

_STRICT = ConfigDict(extra="forbid")

MAX_DEVICES = 4096
"""Devices of one node at most (Kubernetes: 128 per ResourceSlice, and a node publishes a few slices)."""

Name = Annotated[str, Field(min_length=1, max_length=253)]
AttributeValue = bool | int | str


class DraDevice(BaseModel):
    """One device a DRA driver publishes for the node (a ResourceSlice's ``spec.devices[]``)."""

    model_config = _STRICT
    driver: Name
    pool: Name
    name: Name
    attributes: dict[Name, AttributeValue] = Field(default_factory=dict)
    """Qualified attribute names (``gpu.nvidia.com/productName``) to their value (a version as its string)."""
    capacity: dict[Name, str] = Field(default_factory=dict)
    """Qualified capacity names to their quantity as Kubernetes writes it (``80Gi``)."""
    serves: list[str] = Field(default_factory=list)
    """The request signatures (``dra.planner.io/sig-...``) whose selectors, with their class's, match the device."""
    kind: str | None = None
    """The resource name this device is counted in (``dra.planner.io/kind-...``: the devices serving the
    same signatures); None when no request of the snapshot can draw it."""
    held_by: str | None = None
    """The claim (``namespace/name``) holding the device; None when free."""


class DraRequest(BaseModel):
    """One request of a claim, as Kubernetes allocates it."""

    model_config = _STRICT
    name: Name
    device_class: Name
    selectors: list[Annotated[str, Field(max_length=10_240)]] = Field(default_factory=list)
    """The request's own CEL selectors (the class's are in its DeviceClass)."""
    mode: Literal["ExactCount", "All"] = "ExactCount"
    count: int = Field(default=1, ge=1, le=MAX_DEVICES)
    """Devices allocated (for ``All``: the devices of its kind on the nodes that have them)."""
    signature: str
    """The resource name of the selectors' signature (``dra.planner.io/sig-...``), charged ``count``."""
    devices: list[Name] = Field(default_factory=list)
    """``driver/pool/device`` of each device the claim holds for this request (placed pods)."""


class DraClaim(BaseModel):
    """A ResourceClaim a pod uses (``spec.resourceClaims[]``)."""

    model_config = _STRICT
    claim: Name
    """``namespace/name`` of the ResourceClaim (a template's claim before it exists: ``namespace/pod-claim``)."""
    template: Name | None = None
    """The ResourceClaimTemplate the claim comes from: a moved pod gets a fresh claim from it."""
    shared: bool = False
    """Named by more than one pod: it is charged once (on the first pod by name) and its pods stay."""
    requests: list[DraRequest] = Field(default_factory=list)
