"""Red team (issue 59): hostile inputs, generated from explicit seeds, against the real CLI and the real service.

Six categories, every case measured (wall time, peak RSS of each process, exit code or HTTP status, the
size of the error message and whether it is a traceback) and checked against the issue's target: no
request longer than its limit plus 2 s, no process above 1 GiB, no exit 3 or HTTP 5xx, no traceback,
no file written outside the named directory; also no error message above 64 KiB, no stored job or plan
lost, and no quantity Kubernetes refuses accepted.

1. yaml: YAML and JSON of every shape at 1 KB-5 MB (``_red_team_inputs.SHAPES``: alias bombs, 1k-100k
   levels of nesting, long scalars, 5,000+ digit numbers, every tag ``yaml.safe_load`` does not know,
   20k-200k unknown fields, duplicate keys, control characters, invalid UTF-8, byte-order marks,
   multi-document streams) as snapshot files (``report``), kubectl Lists (``import kubernetes``,
   ``defrag --from kubernetes``), policies (``defrag --policy``, ``serve --default-policy``), plans
   (``validate``, ``render``) and import configurations (``import kubernetes --config``);
2. http: the same shapes (their JSON forms) as the bodies of every POST route (``planner/api/routes``);
3. names: names and ids up to 1 MB (path traversal, CR/LF, percent-encodings, terminal escapes, bidi):
   in snapshots, as ``--job``/``--pod``/``--node``/``--make-room``/``--jobs`` (at most 128 KiB: Linux's
   limit on one argument), as ids of ``planner jobs``/``plans get``/``delete`` and of the HTTP routes;
4. files: ``--out-dir`` with symlinks (dangling and live) pointing outside, ``--out`` beside them: the
   tree outside is fingerprinted before and after each run;
5. quantities: Kubernetes quantities (" 8", "8\\n", 5,000-digit exponents, ...) in Lists;
6. burst: 100 concurrent requests (hostile names and bodies, ids, ``/healthz``) while the server's
   processes are sampled.

Limits: a command (the tiny inputs here) ``CLI_LIMIT_S``; a POST route the whole-request time
of its rule in ``planner/api/route_rules.py``; a GET or DELETE by id ``ID_LIMIT_S``; ``/healthz``
``HEALTH_LIMIT_S``. The seeds decide sizes, forms and placements (``--seeds``; the defaults are fixed and
were not tuned on). Only 127.0.0.1; every loop is bounded in count and time.

Writes benchmarks/results/red-team.md (``--out`` elsewhere) and, with ``--json``, every case; exits 1 when
any violation is seen (2 when the harness itself broke). ``--quick`` is a smoke run (about a minute); the full run took 23 minutes on 2 cores at a load
average of 14-16 against commit 6b67c06's planner, most of it in cases that ran to their kill deadline (17 s, or 12 s
for explain): a planner that holds its limits takes less.
``--self-check`` runs planted bad cases (a dummy over its time and memory limits that exits 3 with a
traceback and writes outside its directory, and a stub server answering 500) and exits 0 when every
planted violation is flagged.

    .venv/bin/python benchmarks/red_team.py [--seeds 5901 5902] [--quick] [--only yaml,http,...] [--out FILE] [--json FILE]
    .venv/bin/python benchmarks/red_team.py --self-check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support
from _measure import REPO, RESULTS, code_version, machine
from _red_team_measure import KINDS, Case
from _red_team_suites import CATEGORIES, CLI_LIMIT_S, HEALTH_LIMIT_S, HTTP_LIMIT_S, ID_LIMIT_S, Context, run_category, self_check

DEFAULT_SEEDS = (5901, 5902)
MAX_LISTED = 400


def write_results(
    cases: list[Case], errors: list[str], args: argparse.Namespace, loads: tuple[tuple[float, ...], tuple[float, ...]], wall_s: float, out: Path
) -> str:
    """The markdown record: counts per category and violation kind, the seeds, the load, each violation."""
    command = ".venv/bin/python benchmarks/red_team.py" + "".join(f" {a}" for a in sys.argv[1:])
    categories = [c for c in CATEGORIES if any(case.category == c for case in cases)]
    lines = [
        "# Red team (issue 59)",
        "",
        (
            f"Machine: {machine()}; load average before {_load(loads[0])}, after {_load(loads[1])}. {code_version()}. "
            f"Seeds: {', '.join(map(str, args.seeds))}{' (quick run)' if args.quick else ''}. {len(cases):,} cases in {wall_s:.0f} s. "
            f"Reproduce: `{command}`."
        ),
        "",
        (
            "A case is one hostile input (see the script's docstring); its violations are the kinds below. Limits: a command "
            f"on these inputs {CLI_LIMIT_S:g} s, a POST route the whole-request time of its rule (`planner/api/route_rules.py`: explain 15 s, the others 120 s), else "
            f"{HTTP_LIMIT_S:g} s, a GET or DELETE by id {ID_LIMIT_S:g} s, `/healthz` {HEALTH_LIMIT_S:g} s; each plus 2 s of slack. Memory: the "
            "peak resident set of the largest process (a command's own processes, or any process of the server while the request ran). "
            "A request the service still works on when its client gives up keeps the service busy: cases after it may wait for it."
        ),
        "",
        "| category | cases | with a violation | " + " | ".join(KINDS) + " | max wall s | max RSS MiB |",
        "|---|---:|---:|" + "---:|" * len(KINDS) + "---:|---:|",
    ]
    for category in [*categories, "all"]:
        chosen = [c for c in cases if category in ("all", c.category)]
        counts = [sum(kind in c.flags for c in chosen) for kind in KINDS]
        bad = sum(bool(c.flags) for c in chosen)
        name = "**all**" if category == "all" else category
        lines.append(
            f"| {name} | {len(chosen):,} | {bad:,} | "
            + " | ".join(f"{n:,}" for n in counts)
            + f" | {max((c.wall_s for c in chosen), default=0):.1f} | {max((c.peak_rss_mib for c in chosen), default=0):.0f} |"
        )
    lines += ["", "Kinds: " + "; ".join(f"*{k}*: {v}" for k, v in KINDS.items()) + ".", ""]
    lines += ["## Cases by target", "", "| category | target | cases | with a violation | kinds seen |", "|---|---|---:|---:|---|"]
    groups: dict[tuple[str, str], list[Case]] = {}
    for case in cases:
        groups.setdefault((case.category, case.target), []).append(case)
    for (category, target), chosen in groups.items():
        seen = sorted({k for c in chosen for k in c.flags})
        lines.append(f"| {category} | `{target}` | {len(chosen)} | {sum(bool(c.flags) for c in chosen)} | {', '.join(seen) or '-'} |")
    violations = [c for c in cases if c.flags]
    lines += ["", f"## Violations ({len(violations):,})", ""]
    for i, case in enumerate(violations[:MAX_LISTED]):
        lines.append(
            f"{i + 1}. {case.category} `{case.target}` {case.kind} ({_size(case.size_bytes)}): {case.outcome}, "
            f"{case.wall_s:.1f} s (limit {case.limit_s:g} s), {case.peak_rss_mib:.0f} MiB, message {_size(case.output_bytes)}: "
            f"**{', '.join(case.flags)}**" + (f". {_md(case.note)}" if case.note else "")
        )
    if len(violations) > MAX_LISTED:
        lines.append(f"\n... and {len(violations) - MAX_LISTED:,} more (the --json record has them all).")
    if not violations:
        lines.append("None.")
    if errors:
        lines += ["", "## Harness errors (categories that did not finish; exit 2)", "", *(f"* {_md(e)}" for e in errors)]
    text = "\n".join(lines).rstrip() + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text


def _load(values: tuple[float, ...]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _md(text: str) -> str:
    """A note safe in a markdown line: no pipes, backticks or angle brackets."""
    return "".join("?" if c in "|`<>*_[]" else c for c in text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS), help=f"Seeds of the generated inputs (default {DEFAULT_SEEDS}).")
    parser.add_argument("--quick", action="store_true", help="A smoke run: a few cases of each category at the smallest sizes.")
    parser.add_argument("--exhaustive", action="store_true", help="Every YAML shape to every surface (about 2.5x the YAML cases).")
    parser.add_argument("--only", default=",".join(CATEGORIES), help=f"Comma-separated categories: {','.join(CATEGORIES)}.")
    parser.add_argument("--out", type=Path, default=None, help="The markdown record (default benchmarks/results/red-team.md).")
    parser.add_argument("--json", type=Path, default=None, help="Also write every case here as JSON.")
    parser.add_argument("--self-check", action="store_true", help="Run the planted bad cases only; exit 0 when each is flagged.")
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])  # children run this tree
    root = Path(tempfile.mkdtemp(prefix="red-team-"))
    try:
        if args.self_check:
            ok, cases = self_check(root)
            for case in cases:
                print(f"{case.kind}: {case.outcome}, {case.wall_s:.1f} s, {case.peak_rss_mib:.0f} MiB, flags {case.flags}", flush=True)
            if args.json:
                args.json.write_text(json.dumps([vars(c) for c in cases], indent=1))
            sys.exit(0 if ok else 1)
        chosen = [c.strip() for c in args.only.split(",") if c.strip()]
        unknown = [c for c in chosen if c not in CATEGORIES]
        if unknown:
            parser.error(f"--only: unknown categories {unknown}; choose from {', '.join(CATEGORIES)}")
        started, load_before = time.perf_counter(), os.getloadavg()
        context = Context(root, args.quick, args.exhaustive)
        cases: list[Case] = []
        errors: list[str] = []
        try:
            for category in CATEGORIES:
                if category in chosen:
                    for seed in args.seeds:
                        print(f"== {category} seed {seed}", flush=True)
                        try:
                            found = run_category(context, category, seed)
                        except Exception as err:  # noqa: BLE001 - the harness broke: said, and the other categories still run
                            errors.append(f"{category} seed {seed}: {type(err).__name__}: {err}"[:500])
                            traceback.print_exc()
                            continue
                        print(f"   {len(found)} cases, {sum(bool(c.flags) for c in found)} with a violation", flush=True)
                        cases += found
                        if args.json:  # kept as it goes: a long run that breaks later keeps what it measured
                            args.json.write_text(json.dumps([vars(c) for c in cases], indent=1))
        finally:
            cases += context.close()
        out = args.out or RESULTS / "red-team.md"
        print(write_results(cases, errors, args, (load_before, os.getloadavg()), time.perf_counter() - started, out))
        if args.json:
            args.json.write_text(json.dumps([vars(c) for c in cases], indent=1))
        sys.exit(2 if errors else 1 if any(c.flags for c in cases) else 0)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
