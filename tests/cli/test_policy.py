"""Policy documents (``planner/policy.py``) and the options of each plan kind as the command line, the
API schema and the policy see them: one options model per kind, so they cannot drift. Bad policies
are exit 2 naming the document's field path; flags override the file and the report says where each
value came from."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from planner.api.schemas import (
    SERVER_DECIDES,
    AllocateRequest,
    DefragRequest,
    PreemptRequest,
    ServiceAllocateOptions,
    ServiceDefragOptions,
    ServicePreemptOptions,
)
from planner.cli import allocate, app, defrag, preempt
from planner.cli.common import CLI_FLAGS
from planner.cli.submit import CLI_ONLY, LOCAL_ONLY
from planner.engine.allocate import AllocateOptions
from planner.engine.defrag import DefragOptions
from planner.engine.preempt import PreemptOptions
from planner.kinds import KINDS
from planner.policy import NOT_IN_POLICIES, SPECS, PolicyError, default_policies, parse_policy_text, policy_values
from tests.support.paths import FIG15

COMMANDS = {"defrag": defrag.defrag, "preempt": preempt.preempt, "allocate": allocate.allocate}
LOCAL = {"defrag": defrag.option_values, "preempt": preempt.option_values, "allocate": allocate.option_values}
API = {
    "defrag": (ServiceDefragOptions, DefragRequest),
    "preempt": (ServicePreemptOptions, PreemptRequest),
    "allocate": (ServiceAllocateOptions, AllocateRequest),
}
MODELS = {"defrag": DefragOptions, "preempt": PreemptOptions, "allocate": AllocateOptions}


def run(*args: str) -> tuple[int, str, str]:
    """``planner ARGS`` in this process: (exit code, standard output, standard error)."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(sys, "argv", ["planner", *args]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            app()
        except SystemExit as done:
            return int(done.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


class Reads(dict):  # type: ignore[type-arg]
    """A command's parameters at their defaults that records which ones ``option_values`` reads."""

    def __init__(self, values: dict[str, Any]):
        super().__init__(values)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)


def command_defaults(kind: str) -> dict[str, Any]:
    """The local command's parameters and their defaults as typer gives them to the command."""
    parameters = inspect.signature(COMMANDS[kind]).parameters.values()
    return {p.name: getattr(p.default, "default", None) for p in parameters}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_command_line_and_the_api_schema_name_the_same_options(kind: str) -> None:
    """Every option of the local command is a field of the API's options model and the other way
    round, with the same default, but the parameters that are not options (``CLI_ONLY``, with what
    becomes of them) and the ones the server decides (``LOCAL_ONLY``, refused over REST)."""
    parameters = Reads(command_defaults(kind))
    values = LOCAL[kind](parameters)
    unread = set(parameters) - parameters.read
    assert unread <= set(CLI_ONLY), f"planner {kind}: parameters neither options nor CLI-only: {sorted(unread - set(CLI_ONLY))}"
    for field in values:  # each option's flag is the field's name (or its CLI_FLAGS alias)
        assert CLI_FLAGS.get(field, field) in parameters.read
    model, request = API[kind]
    schema = model.model_json_schema()["properties"]
    assert set(values) - set(LOCAL_ONLY[kind]) == set(schema), f"{kind}: CLI-only {set(values) - set(schema)}, API-only {set(schema) - set(values)}"
    assert set(LOCAL_ONLY[kind]) <= set(SERVER_DECIDES)
    for field in schema:
        assert values[field] == model.model_fields[field].default, f"{kind}: {field} defaults to {values[field]!r} on the command line"
    request_schema = json.dumps(request.model_json_schema())
    assert f'"$ref": "#/$defs/{model.__name__}"' in request_schema and '"$ref": "#/$defs/PolicyDocument"' in request_schema


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_option_but_the_listed_ones_has_a_policy_path(kind: str) -> None:
    fields = set(MODELS[kind].model_fields)
    assert set(SPECS[kind].values()) | set(NOT_IN_POLICIES[kind]) == fields
    assert not set(SPECS[kind].values()) & set(NOT_IN_POLICIES[kind])
    assert len(set(SPECS[kind].values())) == len(SPECS[kind])  # one path per field


def test_a_policy_reads_into_options_fields_with_their_paths() -> None:
    document = parse_policy_text(
        "apiVersion: planner.io/v1\nkind: DefragPolicy\nspec:\n  budgets: {maxNodesPerWave: 10%}\n  scope: {namespaces: {only: [a]}, pools: {allowProductChange: true}}\n",
        "p.yaml",
    )
    values, paths = policy_values(document, "defrag")
    assert values == {"max_nodes_per_wave": "10%", "only_namespaces": ["a"], "allow_product_change": True}
    assert paths["allow_product_change"] == "spec.scope.pools.allowProductChange"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxNodesPerWaves: 3}}\n",
            "spec.budgets.maxNodesPerWaves: unknown field; did you mean 'maxNodesPerWave'?",
        ),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budget: {}}\n", "spec.budget: unknown field; did you mean 'budgets'?"),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nextra: 1\n", "extra: unknown field"),
        ("apiVersion: planner.io/v2\nkind: DefragPolicy\n", "apiVersion: input should be 'planner.io/v1', got 'planner.io/v2'"),
        ("apiVersion: planner.io/v1\nkind: Descheduler\n", "kind: input should be 'DefragPolicy', 'PreemptPolicy' or 'AllocatePolicy'"),
        ("apiVersion: planner.io/v1\nkind: AllocatePolicy\n", "kind: a AllocatePolicy configures planner allocate; this plans defrag and reads a DefragPolicy"),
        (
            "apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxNodesPerWave: 120%}}\n",
            "spec.budgets.maxNodesPerWave: give a node count such as 50 or a share such as '10%'",
        ),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxNodesPerWave: ten%}}\n", "spec.budgets.maxNodesPerWave: give a node count"),
        (
            "apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxMovesPerNode: -1}}\n",
            "spec.budgets.maxMovesPerNode: input should be greater than or equal to 0, got -1",
        ),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxMoves: many}}\n", "spec.budgets.maxMoves: must be"),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {scope: {namespaces: {only: [a, 3]}}}\n", "spec.scope.namespaces.only[1]: must be"),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {scope: {nodeSelector: 'pool in (a'}}\n", "spec.scope.nodeSelector:"),
        (
            "apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {method: repack, budgets: {maxMoves: 3}}\n",
            "spec.budgets.maxMoves: repack repacks every movable pod",
        ),
        ("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {scope: 3}\n", "spec.scope: must be a mapping"),
        ("- a\n- b\n", "(document): must be a mapping"),
        ("apiVersion: [\n", "not valid YAML or JSON: line 2 column 1"),
        ("a: 1\n---\nb: 2\n", "holds 2 documents; a policy file holds one"),
    ],
)
def test_a_bad_policy_file_is_exit_2_naming_the_field_path(text: str, expected: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    code, out, err = run("defrag", str(FIG15), "--policy", str(policy))
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"error: --policy {policy}: {expected}" in err or (expected in err and str(policy) in err), err


def test_flags_override_the_policy_and_the_report_says_where_each_value_came_from(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"  # JSON is YAML
    policy.write_text(json.dumps({"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"budgets": {"maxMoves": 1, "maxNodesPerWave": 2}}}))
    code, out, err = run("defrag", str(FIG15), "--policy", str(policy), "--max-moves", "2", "--seed", "0", "--executor", "inline", "-o", "json")
    assert code == 0, err
    provenance = json.loads(out)["report"]["provenance"]
    assert provenance["options"]["max_moves"] == 2 and provenance["options"]["max_nodes_per_wave"] == 2
    sources = provenance["option_sources"]
    assert sources["max_moves"] == "given" and sources["max_nodes_per_wave"] == "policy" and sources["depth"] == "default" and sources["seed"] == "given"
    assert set(sources) == set(DefragOptions.model_fields)
    plain = json.loads(run("defrag", str(FIG15), "--executor", "inline", "-o", "json")[1])
    assert "option_sources" not in plain["report"]["provenance"]  # without a policy every value is a flag's or the default: plans unchanged


def test_a_flag_that_the_policys_method_does_not_read_is_refused_naming_the_flag(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {method: repack}\n")
    code, _, err = run("defrag", str(FIG15), "--policy", str(policy), "--max-moves", "3")
    assert code == 2 and "error: --max-moves: repack repacks every movable pod" in err
    code, out, err = run("defrag", str(FIG15), "--policy", str(policy), "--method", "heuristic", "--max-moves", "3", "-o", "json")
    assert code == 0 and json.loads(out)["report"]["provenance"]["option_sources"]["method"] == "given"


def test_preempt_and_allocate_read_their_policies(tmp_path: Path) -> None:
    policy = tmp_path / "preempt.yaml"
    policy.write_text("apiVersion: planner.io/v1\nkind: PreemptPolicy\nspec: {method: flextopo, heuristic: {alpha: 2}}\n")
    code, _, err = run("preempt", str(FIG15), "--job", "x", "--policy", str(policy))
    assert code == 2 and f"--policy {policy}: spec.heuristic.alpha: input should be less than or equal to 1" in err


def test_the_servers_default_policies_are_one_per_kind_and_checked() -> None:
    two = "apiVersion: planner.io/v1\nkind: DefragPolicy\n---\napiVersion: planner.io/v1\nkind: DefragPolicy\n"
    with pytest.raises(PolicyError, match="document 2: kind: a second DefragPolicy"):
        default_policies(two, "f.yaml")
    with pytest.raises(PolicyError, match="f.yaml: spec.solver.timeLimitSeconds: input should be greater than 0"):
        default_policies("apiVersion: planner.io/v1\nkind: PreemptPolicy\nspec: {method: exact, solver: {timeLimitSeconds: 0}}\n", "f.yaml")
    assert set(default_policies("apiVersion: planner.io/v1\nkind: AllocatePolicy\nspec: {method: alg2}\n", "f.yaml")) == {"allocate"}


def test_the_policy_reference_describes_every_field() -> None:
    """docs/reference/policy.md has a row for every ``spec`` field of every kind, in the kind's section."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "policy.md").read_text()
    for kind, spec in SPECS.items():
        section = text.split(f"## {kind.capitalize()}Policy", 1)[1].split("\n## ", 1)[0]
        for path, field in spec.items():
            assert f"| `{path}` | `{field}` (" in section, f"docs/reference/policy.md: no row for {kind} spec.{path}"


def test_submit_checks_flags_and_policy_as_the_local_command_before_sending(tmp_path: Path) -> None:
    """Exit 2 naming the flag or the policy's path, with no server to ask (exit 4 would mean it tried)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxNodesPerWave: 0%}}\n")
    nowhere = ("--server", "http://127.0.0.1:9", "--wait", "0")
    code, _, err = run("submit", "defrag", str(FIG15), *nowhere, "--policy", str(policy))
    assert code == 2 and f"--policy {policy}: spec.budgets.maxNodesPerWave: give a node count" in err
    code, _, err = run("submit", "defrag", str(FIG15), *nowhere, "--method", "repack", "--max-moves", "3")
    assert code == 2 and "error: --max-moves: repack repacks every movable pod" in err
    code, _, err = run("submit", "preempt", str(FIG15), *nowhere, "--method", "spotgpu", "--alpha", "0.3", "--job", "x")
    assert code == 2 and "error: --alpha: method 'spotgpu' does not use it" in err
    code, _, err = run("submit", "preempt", str(FIG15), *nowhere)
    assert code == 2 and "--job / --reactivate: give one" in err


def test_the_references_example_is_the_nightly_policy_and_reads() -> None:
    """The example at the top of docs/reference/policy.md is deploy/kubernetes/defrag-policy.yaml's policy, and it reads."""
    repo = Path(__file__).resolve().parents[2]
    example = (repo / "docs" / "reference" / "policy.md").read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    config_map = yaml.safe_load((repo / "deploy" / "kubernetes" / "defrag-policy.yaml").read_text())
    assert yaml.safe_load(example) == yaml.safe_load(config_map["data"]["defrag-policy.yaml"])
    values, _ = policy_values(yaml.safe_load(example), "defrag")
    assert DefragOptions(**values).limits(200).max_nodes_per_wave == 20
