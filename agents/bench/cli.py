"""``python -m palgym.bench list|prepare|run|show|validate|leaderboard`` (docs/BENCH.md).

Exit codes: 0 on success; ``validate``: 1 when a results file is rejected (each problem named
with file, line, field, expected and found value); 2 for a usage error (bad arguments, an
unknown suite or task, missing or changed data files), printed as ``error: <message>`` with no
traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palgym.bench.roots import CACHE_VARIABLE, data_roots
from palgym.bench.suites import DATA_DIR_VARIABLE, DataRoots, load_suite, suite_names
from palgym.errors import PalgymError
from palgym.io.pipes import run_cli

MAX_WORKERS = 256
"""The most local processes ``run --workers`` starts (more: ``--ray`` on a cluster)."""
MAX_SUBMISSION_BYTES = 1 << 20
"""The largest ``--submission`` file read (a submission object is about 1 kB)."""


def _non_negative(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def _roots(args: argparse.Namespace) -> DataRoots:
    return data_roots(args.data_dir, args.cache)


def build_parser() -> argparse.ArgumentParser:
    """The parser of the four commands (``leaderboard`` when its module is present)."""
    parser = argparse.ArgumentParser(prog="python -m palgym.bench",
                                     description="palgym-bench: frozen benchmark suites")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("list", help="the suites, or one suite's tasks")
    show.add_argument("--suite", default=None)

    def data_args(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--data-dir", default=None,
                         help=f"public data folder (default: ${DATA_DIR_VARIABLE})")
        sub.add_argument("--cache", default=None,
                         help=f"generated files' folder (default: ${CACHE_VARIABLE})")

    prep = commands.add_parser("prepare", help="write a suite's generated files into --cache")
    prep.add_argument("--suite", required=True)
    prep.add_argument("--tasks", nargs="+", default=None)
    data_args(prep)
    run = commands.add_parser("run", help="run one entry on a suite, write its results file")
    run.add_argument("--suite", required=True)
    run.add_argument("--agent", required=True,
                     help="pal, srtf/pal+backfill, MODULE:CLASS, planner:K=4,H=end, a model "
                          "zip, a run folder, pretrained[:NAME], selector:PATH (a rule "
                          "selector), best or field; the room's references best-known"
                          "[:evaluations=N] and lower-bound (docs/HEADROOM.md)")
    run.add_argument("--output", required=True, help="results file (.jsonl)")
    run.add_argument("--tasks", nargs="+", default=None)
    run.add_argument("--entry", default=None, help="entry name (default: from --agent)")
    run.add_argument("--description", default="")
    run.add_argument("--submission", default=None, metavar="FILE",
                     help="JSON file of the entry's submission object (docs/SUBMITTING.md), "
                          "checked and written into the header")
    run.add_argument("--workers", type=int, default=1, help="local processes (default 1)")
    run.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                     help="run the episodes as Ray tasks ('ray' extra): on the cluster at "
                          "ADDRESS (auto, ray://HOST:10001, HOST:6379), or on a local Ray "
                          "started for the run when no address is given")
    run.add_argument("--device", default="cpu")
    run.add_argument("--trust-model", action="store_true",
                     help="load the model zip with SB3's unpickling, and import the modules "
                          "a selector file's rules name (trusted files only)")
    run.add_argument("--num-threads", type=_non_negative, default=1,
                     help="torch threads of a learned agent (default 1; 0: torch's)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    data_args(run)
    shown = commands.add_parser("show", help="results files' per-task tables (leaderboard "
                                "columns)")
    shown.add_argument("results", nargs="+", help="results files (.jsonl) or folders of them")
    shown.add_argument("--csv", default=None, metavar="OUT",
                       help="also write the rows as CSV to OUT ('-': stdout, no table)")
    shown.add_argument("--references", default=None, metavar="DIR",
                       help="folder of <suite>/*.jsonl results ranked with them (default: "
                            "the checkout's benchmarks/leaderboard)")
    check = commands.add_parser("validate", help="replay and check results files")
    check.add_argument("results", nargs="+")
    check.add_argument("--suite", default=None,
                       help="suite file (default: the committed suite each file names)")
    check.add_argument("--allow-large", action="store_true",
                       help="lift the size limits of results files (docs/BENCH.md, 'Limits')")
    check.add_argument("--trust-modules", action="store_true",
                       help="import the modules a header's MODULE:CLASS names (a member's "
                            "own queue order, a selector's rule): runs their code")
    check.add_argument("--quiet", action="store_true", help="no progress")
    data_args(check)
    board = commands.add_parser("leaderboard", help="write the leaderboard page")
    board.add_argument("results", nargs="+", help="results files (.jsonl) or folders of them")
    board.add_argument("--output", required=True, help="the page to write")
    board.add_argument("--plots", default=None,
                       help="folder of the performance-profile SVGs (default: no plots)")
    return parser


def _list(suite: str | None) -> list[str]:
    if suite is None:
        return [f"{name}: {load_suite(name).description}" for name in suite_names()]
    loaded = load_suite(suite)
    lines = [f"{loaded.name} v{loaded.version} ({loaded.path}, sha256 {loaded.sha256})"]
    for task in loaded.tasks:
        sizes = ", ".join(f"{s} {len(v.traces)}" for s, v in task.splits.items())
        sources = sorted({loaded.files[r.file].source for v in task.splits.values()
                          for r in v.traces})
        lines.append(f"  {task.name}: {task.env_id} (layout {task.env_layout}), world "
                     f"{dict(task.world)}, variability {dict(task.variability)}, durations "
                     f"{task.duration_knowledge}, belief {task.belief}, queue order "
                     f"{task.queue_order} ({task.queue_order_regime}), seeds "
                     f"{list(task.seeds)}, traces: {sizes} ({', '.join(sources)})")
        lines.append(f"    field ({len(task.heuristic_field)}): "
                     f"{', '.join(task.heuristic_field)}")
    return lines


def _submission(path: str | None, suite: str) -> dict[str, Any] | None:
    """The ``--submission`` file's object, checked (None without the option), against the
    test traces of ``suite`` too.

    Raises:
        PalgymError: for a file that cannot be read, is not JSON, or fails
            :func:`palgym.bench.submission.check_submission` (naming the file and key).
    """
    if path is None:
        return None
    from palgym.bench.submission import check_submission
    from palgym.bench.suites import suite_test_traces

    tests = suite_test_traces(load_suite(suite))

    from palgym.io.strict_json import read_json

    try:
        value = read_json(path, max_bytes=MAX_SUBMISSION_BYTES, what="a submission file")
    except OSError as exc:
        raise PalgymError(f"--submission {path}: cannot be read ({exc})") from None
    except PalgymError as exc:  # strict JSON: NaN, Infinity, overflow, depth, size
        raise PalgymError(f"--submission {exc}") from None
    check_submission(value, f"--submission {path}", tests)
    return dict(value)


def _run(args: argparse.Namespace) -> list[str]:
    from agents.bench.runner import RunRequest, run_entry
    from palgym.io.atomic import check_destination

    if not 1 <= args.workers <= MAX_WORKERS:
        raise PalgymError(f"--workers must be in [1, {MAX_WORKERS}] (local processes; a "
                          f"cluster: --ray), got {args.workers}")
    if args.workers > 1 and args.ray is not None:
        raise PalgymError("give --workers or --ray, not both")
    output = check_destination(args.output, "--output")
    request = RunRequest(args.suite, args.agent, output, _roots(args), tuple(args.tasks or ()),
                         args.entry, args.description, args.workers, args.device,
                         args.trust_model, not args.quiet, args.num_threads,
                         _submission(args.submission, args.suite), args.ray)
    path, episodes, wall_s = run_entry(request)
    where = f"workers {args.workers}" if args.ray is None else f"ray {args.ray or 'local'}"
    return [f"wrote {path}: {episodes} episodes in {wall_s:.1f} s ({where})", *_table([path])]


def _table(paths: Sequence[str | Path]) -> list[str]:
    """The per-task tables of ``paths`` (:mod:`palgym.bench.show`)."""
    from palgym.bench.show import render_text, show_tasks

    return render_text(show_tasks(paths))


def _show(args: argparse.Namespace) -> list[str]:
    from palgym.bench.show import render_csv, render_text, show_tasks
    from palgym.io.atomic import atomic_write_text, check_destination

    references = None if args.references is None else Path(args.references)
    tasks = show_tasks(args.results, references)
    if args.csv == "-":
        return [render_csv(tasks).rstrip("\n")]
    lines = render_text(tasks)
    if args.csv is not None:
        written = atomic_write_text(check_destination(args.csv, "--csv"), render_csv(tasks))
        lines.append(f"wrote {written}")
    return lines


def _validate(args: argparse.Namespace) -> int:
    from palgym.bench.replay import validate_files
    from palgym.bench.results import ResultsError, read_results
    from palgym.progress import SweepProgress

    total = 0
    for name in args.results:
        try:
            total += len(read_results(name).episodes)
        except (ResultsError, OSError):
            pass  # reported by validate_files
    bar = SweepProgress(total, enabled=not args.quiet, desc="rows replayed")
    rejected = 0
    try:
        for path, problems in validate_files(args.results, _roots(args), args.suite,
                                             args.allow_large, args.trust_modules,
                                             on_row=bar.update):
            if problems:
                rejected += 1
                print(f"REJECTED {path}: {len(problems)} problem(s)")
                for problem in problems:
                    print(f"  {problem}")
            else:
                print(f"valid {path}", flush=True)
    finally:
        bar.close()
    return 1 if rejected else 0


def _leaderboard(args: argparse.Namespace) -> list[str]:
    from palgym.bench.leaderboard import write_leaderboard
    return [f"wrote {path}" for path in write_leaderboard(args.results, args.output, args.plots)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (see the module docstring for the exit codes)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "validate":
            return _validate(args)
        if args.command == "list":
            lines = _list(args.suite)
        elif args.command == "prepare":
            from agents.bench.runner import prepare

            roots = _roots(args)
            if roots.cache_dir is None:
                raise PalgymError(f"prepare needs --cache DIR (or ${CACHE_VARIABLE})")
            lines = prepare(args.suite, roots.cache_dir, tuple(args.tasks or ()))
        elif args.command == "run":
            lines = _run(args)
        elif args.command == "show":
            lines = _show(args)
        else:
            lines = _leaderboard(args)
    except (PalgymError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
