"""Kubernetes quantities and names as the export writes them: exact decimal quantities that read back
as the snapshot's numbers, label values and object names checked or made valid, stable UIDs."""

from __future__ import annotations

import hashlib
import re
import uuid
from decimal import Decimal
from fractions import Fraction

from planner.adapters.kubernetes_config import GIB

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_UID_SPACE = uuid.UUID("6f1d3b2e-4c1a-5b8e-9a57-0d6c2f3e8a41")


def exact(value: float) -> Fraction:
    """The decimal a float prints as (its shortest round-trip form): the quantity that reads back as it."""
    return Fraction(Decimal(repr(float(value))))


def _decimal(amount: Fraction) -> str:
    """A terminating fraction (denominator 2^a 5^b) as a plain decimal string."""
    digits = 0
    while (amount * 10**digits).denominator != 1:
        digits += 1
    return format(Decimal(int(amount * 10**digits)).scaleb(-digits), "f")


def cpu_quantity(cores: Fraction) -> str:
    """'96', '500m', else the exact decimal."""
    if cores.denominator == 1:
        return str(cores.numerator)
    if (cores * 1000).denominator == 1:
        return f"{(cores * 1000).numerator}m"
    return _decimal(cores)


def memory_quantity(amount_bytes: Fraction) -> str:
    """'1152Gi', '64Mi', whole bytes, else the exact decimal of GiB ('0.3Gi')."""
    for suffix, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if amount_bytes and (amount_bytes / scale).denominator == 1:
            return f"{(amount_bytes / scale).numerator}{suffix}"
    if amount_bytes.denominator == 1:
        return str(amount_bytes.numerator)
    return f"{_decimal(amount_bytes / GIB)}Gi"


def object_uid(*parts: str) -> str:
    """A stable UID for the object these parts name (the same snapshot exports the same UIDs)."""
    return str(uuid.uuid5(_UID_SPACE, "/".join(parts)))


def label_name(text: str) -> str:
    """``text`` if it is a valid label name (value), else a digest of it that is."""
    if len(text) <= 63 and LABEL_VALUE.match(text):
        return text
    return "g-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def name_ok(name: str, where: str, errors: list[str]) -> bool:
    """Whether ``name`` is a Kubernetes object name; if not, a message naming ``where`` is added to ``errors``."""
    if len(name) <= 253 and DNS_SUBDOMAIN.match(name):
        return True
    errors.append(f"{where}: '{name}' is not a Kubernetes object name (lower-case DNS subdomain, at most 253 characters)")
    return False
