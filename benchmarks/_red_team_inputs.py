"""Hostile inputs for ``benchmarks/red_team.py``: YAML and JSON of every shape, and the documents they go into.

A *shape* makes one hostile piece of text from a seeded ``random.Random`` and a target size: a value
(an alias bomb, deep nesting, a long scalar, a huge integer, a tag ``yaml.safe_load`` does not know,
control characters), extra fields of a mapping (20,000-200,000 unknown keys, duplicate keys), extra
items of a list (each one wrong), or a change to the whole document (invalid UTF-8, byte-order marks,
a multi-document stream, block nesting). A *surface* is a small valid document of one kind the planner
reads (a snapshot, a kubectl List, a policy, a plan, an import configuration) written in flow style
with three slots, so each shape goes where it is read: ``@VALUE@`` (a value), ``@FIELDS@`` (more
entries of a mapping) and ``@ITEMS@`` (more elements of a list). Nothing here runs the planner.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

KIB = 1 << 10
MIB = 1 << 20
SIZES_BYTES = (1 * KIB, 64 * KIB, 1 * MIB, 5 * MIB)
"""The target sizes a sized shape is drawn at (1 KB to 5 MB)."""
MAX_BYTES = 5 * MIB


@dataclass(frozen=True)
class Piece:
    """One shape's hostile text: where it goes (``slot``: value, fields, items or whole) and a note."""

    slot: str
    text: str
    note: str
    whole: Callable[[str], bytes] | None = None
    """For slot ``whole``: turns the valid document into the hostile bytes."""


def _sized(rng: random.Random, quick: bool) -> int:
    return SIZES_BYTES[0] if quick else rng.choice(SIZES_BYTES)


def _quote(text: str, syntax: str) -> str:
    return json.dumps(text) if syntax == "json" else "'" + text.replace("'", "''") + "'"


# -- value shapes -------------------------------------------------------------------------------


def alias_bomb(rng: random.Random, size: int, syntax: str) -> Piece | None:
    """Billion laughs in one flow sequence (anchors defined inline), classic (9 levels of 9) or wide
    (one anchored list of n items aliased m times, n * m values from a file of the target size)."""
    if syntax != "yaml":
        return None
    if size <= 4 * KIB or rng.random() < 0.5:
        levels, fanout = rng.choice([(9, 9), (10, 8), (12, 6), (20, 3)])
        parts = ["&a0 [" + ", ".join(["lol"] * fanout) + "]"]
        parts += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]" for i in range(1, levels)]
        return Piece("value", "[" + ", ".join(parts) + f", *a{levels - 1}]", f"alias bomb {fanout}^{levels}")
    n = max(1, size // 10)
    m = max(1, (size - 4 * n) // 5)
    text = "[&w [" + ", ".join(["x"] * n) + "], " + ", ".join(["*w"] * m) + "]"
    return Piece("value", text, f"wide alias bomb {n:,} x {m:,}")


def deep_nesting(rng: random.Random, size: int, syntax: str) -> Piece:
    """1,000-100,000 levels of flow lists or maps."""
    levels = rng.choice([1_000, 10_000, 100_000]) if size > KIB else 1_000
    if rng.random() < 0.5:
        return Piece("value", "[" * levels + "1" + "]" * levels, f"{levels:,} nested lists")
    key = '"a"' if syntax == "json" else "a"
    return Piece("value", ("{" + key + ": ") * levels + "1" + "}" * levels, f"{levels:,} nested maps")


def long_scalar(rng: random.Random, size: int, syntax: str) -> Piece:
    length = max(KIB, size - 64)
    text = "".join(rng.choice("abcdefghij-./") for _ in range(256)) * (length // 256 + 1)
    return Piece("value", _quote(text[:length], syntax), f"{length:,}-character string")


def huge_number(rng: random.Random, size: int, syntax: str) -> Piece:
    """A 5,000+ digit integer, or a float with a 5,000-digit exponent or mantissa."""
    digits = max(5_000, min(size, MIB))
    form = rng.choice(["int", "int", "exponent", "fraction", "negative"])
    body = str(rng.randrange(1, 10)) + "".join(rng.choice("0123456789") for _ in range(min(digits, 4096) - 1))
    body = (body * (digits // len(body) + 1))[:digits]
    text = {"int": body, "negative": "-" + body, "exponent": "1e" + body, "fraction": "0." + body}[form]
    return Piece("value", text, f"{digits:,}-digit number ({form})")


UNSAFE_TAGS = (
    "!!binary aGVsbG8gd29ybGQ=",
    "!!set {a: null, b: null}",
    "!!timestamp 2001-12-14t21:59:43.10-05:00",
    "!!omap [{a: 1}, {b: 2}]",
    "!!pairs [{a: 1}, {a: 2}]",
    "!!python/object:os.system {}",
    "!!python/object/apply:os.system ['true']",
    "!!python/name:os.system ''",
    "!!python/tuple [1, 2]",
    "!Custom x",
    "!<tag:example.com,2000:app/foo> x",
    "!!str &t1 !!int 3",
)


def unsafe_tags(rng: random.Random, size: int, syntax: str) -> Piece | None:
    """Tags the safe loader does not construct: one, or a list of them up to the target size."""
    if syntax != "yaml":
        return None
    tag = rng.choice(UNSAFE_TAGS)
    if size <= KIB:
        return Piece("value", tag, f"tag {tag.split()[0]}")
    count = max(2, size // (len(tag) + 2))
    return Piece("value", "[" + ", ".join([tag] * count) + "]", f"{count:,} x tag {tag.split()[0]}")


CONTROL = ("\x00", "\x1b[31m", "\r\n", "\x07", "\x7f", "\u2028", "\u202e", "\x1b]0;owned\x07", "\ufeff")


def control_chars(rng: random.Random, size: int, syntax: str) -> Piece:
    """NUL, escapes, CR/LF, bidi overrides: raw in the text (invalid JSON and YAML) or escaped (valid)."""
    chars = "".join(rng.choice(CONTROL) for _ in range(8))
    text = "n" + chars + "x" * max(0, min(size, 64 * KIB) - 16)
    if rng.random() < 0.5:
        return Piece("value", json.dumps(text), "control characters (escaped)")
    return Piece("value", '"' + text.replace('"', "") + '"', "control characters (raw)")


# -- mapping and list shapes --------------------------------------------------------------------


def unknown_fields(rng: random.Random, size: int, syntax: str) -> Piece:
    """20,000-200,000 unknown keys in one mapping (the count, not the size bucket, decides its size)."""
    count = rng.choice([20_000, 50_000, 200_000]) if size > KIB else 20_000
    fmt = '"u{0}x": {0}' if syntax == "json" else "u{0}x: {0}"
    return Piece("fields", ", " + ", ".join(fmt.format(i) for i in range(count)), f"{count:,} unknown fields")


def duplicate_keys(rng: random.Random, size: int, syntax: str) -> Piece:
    key = rng.choice(["name", "gpus", "kind", "apiVersion", "spec", "metadata", "pod", "node"])
    count = max(1, min(size, MAX_BYTES) // (len(key) + 12))
    fmt = '"{k}": {i}' if syntax == "json" else "{k}: {i}"
    return Piece("fields", ", " + ", ".join(fmt.format(k=key, i=i) for i in range(count)), f"key '{key}' {count:,} more times")


def many_bad_items(rng: random.Random, size: int, syntax: str) -> Piece:
    """List elements each wrong in its own way: the number of listed errors must be capped."""
    item = rng.choice(['{"name": -1, "gpus": "x"}', '{"kind": 7}', "[]", '"?"', "null", '{"pod": 1, "from": 2}'])
    count = max(10, size // (len(item) + 2))
    return Piece("items", ", " + ", ".join([item] * count), f"{count:,} bad list items")


# -- whole-document shapes ----------------------------------------------------------------------


def invalid_utf8(rng: random.Random, size: int, syntax: str) -> Piece:
    junk = rng.choice([b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80" * 64])

    def whole(doc: str) -> bytes:
        data = doc.encode()
        cut = data.find(b'"', len(data) // 3) + 1 or len(data) // 2
        return data[:cut] + junk + data[cut:]

    return Piece("whole", "", f"invalid UTF-8 {junk[:8]!r}", whole)


def byte_order_mark(rng: random.Random, size: int, syntax: str) -> Piece:
    form = rng.choice(["utf-8", "utf-16", "utf-32", "utf-8 twice", "utf-8 inside"])

    def whole(doc: str) -> bytes:
        if form == "utf-8":
            return b"\xef\xbb\xbf" + doc.encode()
        if form == "utf-8 twice":
            return b"\xef\xbb\xbf\xef\xbb\xbf" + doc.encode()
        if form == "utf-8 inside":
            return doc[: len(doc) // 2].encode() + b"\xef\xbb\xbf" + doc[len(doc) // 2 :].encode()
        return doc.encode(form)  # Python writes the BOM for utf-16 and utf-32

    return Piece("whole", "", f"byte-order mark ({form})", whole)


def multi_document(rng: random.Random, size: int, syntax: str) -> Piece | None:
    if syntax != "yaml":
        return None
    empty = rng.random() < 0.3

    def whole(doc: str) -> bytes:
        part = ("---\n" if empty else "---\n" + doc + "\n") + ("...\n" if rng.random() < 0.5 else "")
        return (doc + "\n" + part * max(1, size // len(part))).encode()

    return Piece("whole", "", "multi-document stream" + (" of empty documents" if empty else ""), whole)


def block_nesting(rng: random.Random, size: int, syntax: str) -> Piece | None:
    """Block-style nesting appended as one more top-level key (indentation makes n levels n^2/2 bytes)."""
    if syntax != "yaml":
        return None
    levels = max(100, min(3_000, int((2 * size) ** 0.5)))

    def whole(doc: str) -> bytes:
        nested = "".join(" " * i + "a:\n" for i in range(levels)) + " " * levels + "b: 1\n"
        return (_as_block(doc) + "zz:\n" + "".join(" " + line + "\n" for line in nested.splitlines())).encode()

    return Piece("whole", "", f"{levels:,} levels of block nesting", whole)


def _as_block(doc: str) -> str:
    """A flow document as one block mapping line per top-level key (so a block key can follow it)."""
    data = json.loads(doc)
    return "".join(f"{json.dumps(k)}: {json.dumps(v)}\n" for k, v in data.items())


SHAPES: dict[str, Callable[[random.Random, int, str], Piece | None]] = {
    "alias-bomb": alias_bomb,
    "deep-nesting": deep_nesting,
    "long-scalar": long_scalar,
    "huge-number": huge_number,
    "unsafe-tag": unsafe_tags,
    "control-chars": control_chars,
    "unknown-fields": unknown_fields,
    "duplicate-keys": duplicate_keys,
    "bad-items": many_bad_items,
    "invalid-utf8": invalid_utf8,
    "bom": byte_order_mark,
    "multi-document": multi_document,
    "block-nesting": block_nesting,
}
QUICK_SHAPES = ("alias-bomb", "deep-nesting", "huge-number", "unsafe-tag", "unknown-fields", "invalid-utf8")


# -- the documents (flow style, valid once the slots are emptied) -------------------------------

SNAPSHOT = (
    '{"version": 1, "time_s": 0, "nodes": ['
    '{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 256, "asw": "a0", "labels": {"pool": @VALUE@}@FIELDS@}, '
    '{"name": "n1", "gpus": 8, "cpus": 64, "memory_gib": 256, "asw": "a0"}@ITEMS@], '
    '"pods": [{"name": "p0", "node": "n0", "gpus": 2, "cpus": 8, "job": "j0"}, {"name": "p1", "node": "n1", "gpus": 4, "cpus": 8}, '
    '{"name": "w0", "gpus": 8, "cpus": 8, "job": "wait"}], '
    '"jobs": [{"name": "j0"}, {"name": "wait"}]}'
)
PLAN = '{"version": 1, "kind": "defrag", "waves": [[{"pod": @VALUE@, "from": "n0", "to": "n1"@FIELDS@}]@ITEMS@], "vacated_nodes": ["n0"]}'
POLICY = (
    '{"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "metadata": {"name": @VALUE@}, '
    '"spec": {"method": "heuristic", "budgets": {"maxMovesPerWave": 3@FIELDS@}, '
    '"scope": {"namespaces": {"exclude": ["kube-system"@ITEMS@]}}}}'
)
KUBE_LIST = (
    '{"apiVersion": "v1", "kind": "List", "items": ['
    '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "h0", "labels": {"nvidia.com/gpu.product": @VALUE@}@FIELDS@}, '
    '"status": {"allocatable": {"cpu": "96", "memory": "1024Gi", "pods": "110", "nvidia.com/gpu": "8"}}}, '
    '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0", "namespace": "ml", "uid": "u0"}, '
    '"spec": {"nodeName": "h0", "containers": [{"name": "c", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "2"}}}]}, '
    '"status": {"phase": "Running"}}@ITEMS@]}'
)
IMPORT_CONFIG = '{"gpu_resources": ["nvidia.com/gpu"], "gpu_model_label": @VALUE@, "ignored_resources": ["x"@ITEMS@]@FIELDS@}'
SLOT_DEFAULTS = {"@VALUE@": '"ok"', "@FIELDS@": "", "@ITEMS@": ""}


def fill(template: str, piece: Piece | None = None) -> bytes:
    """``template`` with ``piece`` in its slot and the other slots emptied (a valid document without a piece)."""
    text = template
    if piece is not None and piece.slot != "whole":
        text = text.replace("@" + piece.slot.upper() + "@", piece.text, 1)
    for slot, default in SLOT_DEFAULTS.items():
        text = text.replace(slot, default)
    if piece is not None and piece.whole is not None:
        return piece.whole(text)
    return text.encode("utf-8", "surrogatepass")


def make_piece(shape: str, rng: random.Random, syntax: str, quick: bool) -> Piece | None:
    """Shape ``shape`` at a size drawn for it (1 KB in a quick run); None when it has no ``syntax`` form."""
    return SHAPES[shape](rng, _sized(rng, quick), syntax)


# -- names and quantities -----------------------------------------------------------------------

ARG_MAX_BYTES = 128 * KIB - 1
"""Linux refuses a single command-line argument of 128 KiB or more, its NUL included (MAX_ARG_STRLEN): longer names
go in files and bodies."""
NAME_SIZES = (64, 26 * KIB, 100 * KIB, MIB)
NAME_FORMS = ("plain", "traversal", "crlf", "percent", "escape", "unicode")


def hostile_name(rng: random.Random, length: int, form: str | None = None) -> str:
    """A name of ``length`` characters of one hostile form (path traversal, CR/LF, percent-encoding,
    terminal escapes, bidi overrides and non-ASCII)."""
    form = form or rng.choice(NAME_FORMS)
    head = {
        "plain": "job",
        "traversal": "../../v1/jobs/../",
        "crlf": "a\r\nX-Injected: 1\r\n",
        "percent": "%2e%2e%2f%2e%2e%2fv1%2fjobs%00",
        "escape": "\x1b[2J\x1b]0;x\x07$(touch pwned)`id`",
        "unicode": "\u202eevil\u0130\u00df\U0001f600",
    }[form]
    filler = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-") for _ in range(64))
    return (head + filler * (length // len(filler) + 1))[: max(length, len(head))]


def as_argument(name: str) -> str:
    """``name`` cut to fit one command-line argument (``ARG_MAX_BYTES`` of UTF-8)."""
    return name.encode()[:ARG_MAX_BYTES].decode("utf-8", "ignore")


QUANTITIES = (
    " 8",
    "8\n",
    "8 ",
    "0x10",
    "\u0668",
    "+8",
    "8.",
    ".5",
    "1e3",
    "1E3",
    "8Ki",
    "8ki",
    "1e" + "9" * 5000,
    "1" + "0" * 5000,
    "1e-5000",
    "-8",
    "NaN",
    "Infinity",
    "8e",
    "",
)
INVALID_QUANTITIES = frozenset({" 8", "8\n", "8 ", "0x10", "\u0668", "8ki", "NaN", "Infinity", "8e", ""})
"""Strings Kubernetes' quantity parser refuses (the regular expression of resource.ParseQuantity): a planner that
accepts one repairs the input silently."""


def quantity_list(value: str, where: str) -> bytes:
    """A kubectl List whose node allocatable (``where`` node) or pod request (``where`` pod) CPU is ``value``."""
    data = json.loads(fill(KUBE_LIST))
    if where == "node":
        data["items"][0]["status"]["allocatable"]["cpu"] = value
    else:
        data["items"][1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = value
    return json.dumps(data).encode()
