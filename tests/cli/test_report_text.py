"""``planner report``'s tables say what they count: GFR is a share of all nodes (CPU-only ones too), the
request counts of ``--shape`` add up from the GPU models to the cluster and the title says whether a
request is one pod or multi-node, and each row of stranded GPUs names its cause once."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from planner.cli import app

runner = CliRunner()

MIXED = {
    "nodes": [
        {"name": "a0", "gpus": 8, "cpus": 128, "memory_gib": 1024, "gpu_model": "A100", "asw": "s1"},
        {"name": "a1", "gpus": 8, "cpus": 128, "memory_gib": 1024, "gpu_model": "A100", "asw": "s1"},
        {"name": "b0", "gpus": 16, "cpus": 256, "memory_gib": 2048, "gpu_model": "H200", "asw": "s2"},
        {"name": "c0", "gpus": 0, "cpus": 64, "memory_gib": 256, "asw": "s2"},
    ],
    "pods": [{"name": "web", "node": "c0", "gpus": 0, "cpus": 8}],
}
"""Two empty 8-GPU nodes under one switch, an empty 16-GPU node, and a CPU-only node with one pod (slack)."""


def report(tmp_path: Path, *flags: str) -> str:
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(MIXED))
    done = runner.invoke(app, ["report", str(path), *flags], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    return done.stdout


def row(text: str, label: str) -> list[str]:
    """The cells of the table row that starts with ``label``."""
    match = re.search(rf"│\s*{re.escape(label)}\s*│(.*)│", text)
    assert match is not None, text
    return [cell.strip() for cell in match.group(1).split("│")]


def test_gfr_is_labelled_as_the_share_of_all_nodes_it_counts(tmp_path: Path) -> None:
    text = report(tmp_path)
    # columns: cluster, A100, H200, cpu-only; the one node with slack is the CPU-only node: 1 of 4 nodes
    assert row(text, "nodes") == ["4", "2", "1", "1"]
    assert row(text, "nodes with slack") == ["1", "0", "0", "1"]
    assert row(text, "GFR (nodes neither empty nor full / nodes)") == ["0.2500", "0", "0", "1"]


def test_shape_counts_add_up_from_the_models_and_name_each_cause_once(tmp_path: Path) -> None:
    text = report(tmp_path, "--shape", "16g64c")
    assert "Requests of shape 16g64c (one pod on one node: the largest node has 16 GPUs)" in " ".join(text.split())
    fit = row(text, "requests that fit")
    assert fit == ["1", "0", "1"] and int(fit[0]) == int(fit[1]) + int(fit[2])
    assert "cluster = the sum of the GPU models: a request takes the GPUs of one model" in text
    assert row(text, "stranded: too few whole GPUs on their node") == ["16", "16", "0"]
    assert "stranded: stranded" not in text and "stranded: insufficient" not in text
    multi = report(tmp_path, "--shape", "24g64c")
    assert "Requests of shape 24g64c (multi-node, from one access switch: the largest node has 16 GPUs)" in " ".join(multi.split())
    assert row(multi, "stranded: too few slots left of the model") == ["32", "16", "16"]
