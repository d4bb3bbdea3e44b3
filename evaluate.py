"""Evaluate heuristic schedulers (queue order x placement) on job traces.

Runs every placement (default: all six) under every queue order (default: FIFO) on one episode
per trace (default: the traces bundled in ``palgym/data/traces``), prints a table of JCT,
makespan, utilization and the improvement over a baseline (default: Packed-Sticky), the geomean
improvement across traces (PAL, SC24, Figure 10 style) and each trace's episode hash.

Examples::

    python evaluate.py
    python evaluate.py --trace workload-1.csv --preset pal-artifact \\
        --variability-data /path/to/variability/longhorn_pal --output results.csv --plot figures

Exit codes: 0 on success, 2 on bad arguments or bad input files (``error: <message>``).
The logic lives in :mod:`palgym.report`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError, PalgymError
from palgym.io import read_profile
from palgym.plots import require_matplotlib, write_plots
from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES
from palgym.report import (
    DEFAULT_BASELINE,
    Evaluation,
    EvaluationSetup,
    evaluate,
    find_trace_files,
    format_report,
    load_traces,
    policies_to_run,
    write_results_csv,
)
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import PRESETS, preset
from palgym.simulate import EpisodeResult

EXIT_USAGE = 2


def _cluster(text: str) -> ClusterSpec:
    try:
        return ClusterSpec.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _at_least_one(text: str) -> float:
    value = float(text)
    if not value >= 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(
        description="Evaluate queue order x placement heuristics on job traces (palgym).",
    )
    add = parser.add_argument
    add("--trace", nargs="+", action="extend", metavar="PATH",
        help="Sia/PAL trace CSV file(s) (default: every bundled trace)")
    add("--policy", nargs="+", action="extend", choices=PLACEMENT_NAMES, metavar="NAME",
        help=f"placement(s) to run (default: all): {', '.join(PLACEMENT_NAMES)}")
    add("--queue-order", nargs="+", action="extend", choices=QUEUE_ORDER_NAMES, metavar="NAME",
        help=f"queue order(s) (default: fifo): {', '.join(QUEUE_ORDER_NAMES)}")
    add("--preset", choices=sorted(PRESETS), default="default",
        help="simulator preset (default: %(default)s)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--variability-data", type=Path, metavar="DIR",
                        help="Longhorn-style measurement folder to build the profile from")
    source.add_argument("--profile", type=Path, metavar="FILE",
                        help="per-GPU variability profile CSV (default: the bundled profile)")
    add("--cluster", type=_cluster, default=ClusterSpec(), metavar="NxG",
        help="nodes x GPUs per node (default: 16x4)")
    add("--locality-penalty", type=_at_least_one, metavar="LF",
        help="override the preset's locality penalty (>= 1; both presets use 1.7)")
    add("--round-duration", type=_positive, metavar="SECONDS",
        help="override the preset's round length (> 0; both presets use 360)")
    add("--duration-unit", choices=("iterations", "seconds"), default="iterations",
        help="what the traces' duration column counts (default: %(default)s, PAL's reading)")
    add("--seed", type=int, default=0, help="episode seed (default: %(default)s)")
    add("--baseline", choices=PLACEMENT_NAMES, default=DEFAULT_BASELINE, metavar="NAME",
        help="placement the improvements are relative to (default: %(default)s)")
    add("--output", type=Path, metavar="CSV", help="write the results CSV here (atomically)")
    add("--plot", type=Path, metavar="DIR", help="write JCT CDF and normalised-JCT PNGs here")
    add("--quiet", action="store_true", help="no progress bar and no 'wrote' lines")
    return parser


def _setup(args: argparse.Namespace) -> EvaluationSetup:
    overrides: dict[str, Any] = {}
    if args.locality_penalty is not None:
        overrides["locality_penalty"] = args.locality_penalty
    if args.round_duration is not None:
        overrides["round_duration_s"] = args.round_duration
    return EvaluationSetup(
        cluster=args.cluster,
        config=preset(args.preset, **overrides),
        profile=read_profile(args.profile) if args.profile is not None else None,
        variability_data=args.variability_data,
        seed=args.seed,
    )


class _NoBar:
    """Stand-in for a disabled progress bar."""

    def update(self, count: int = 1) -> None:
        """Ignore progress."""

    def close(self) -> None:
        """Nothing to close."""


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a dependency; degrade to no bar if it is missing anyway
        return _NoBar()
    return tqdm(total=total, file=sys.stderr, unit="run", desc="evaluate", leave=False)


def _run_all(args: argparse.Namespace, setup: EvaluationSetup) -> Evaluation:
    traces = load_traces(args.trace or find_trace_files(), args.duration_unit)
    policies = policies_to_run(args.policy or PLACEMENT_NAMES, args.baseline)
    orders = list(dict.fromkeys(args.queue_order or ["fifo"]))
    bar = _progress_bar(len(traces) * len(orders) * len(policies),
                        enabled=not args.quiet and sys.stderr.isatty())

    def step(_result: EpisodeResult) -> None:
        bar.update(1)

    try:
        return evaluate(traces, policies, orders, setup, args.baseline, on_result=step)
    finally:
        bar.close()


def run(args: argparse.Namespace) -> int:
    """Run the evaluation described by parsed arguments, print it and write the outputs.

    Raises:
        PalgymError: for bad input files, options or a missing plotting dependency.
        OSError: if an output cannot be written.
    """
    if args.plot is not None:
        require_matplotlib()  # fail before hours of simulation, not after
    setup = _setup(args)
    evaluation = _run_all(args, setup)
    print(format_report(evaluation))
    written: list[Path] = []
    if args.output is not None:
        written.append(write_results_csv(evaluation, args.output))
    if args.plot is not None:
        written.extend(write_plots(evaluation, args.plot))
    if not args.quiet:
        for path in written:
            print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv``, run, and turn palgym errors into ``error: ...`` (exit 2)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    try:
        return run(args)
    except PalgymError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
