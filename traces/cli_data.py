"""The ``convert``, ``describe`` and ``split`` sub-commands of ``python -m traces``.

Examples::

    python -m traces convert philly.csv --start 2017-10-01 --end 2017-10-08 --output week.csv
    python -m traces describe philly.csv --cluster-gpus 64
    python -m traces split philly.csv --num-jobs 160 --cluster-gpus 64 --oversize drop \\
        --arrivals poisson --load 0.8 --seed 0 --output-dir windows/
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError
from traces.canonical_io import write_canonical
from traces.describe import describe, format_summary
from traces.formats import TRACE_FORMATS, load_canonical
from traces.schema import CanonicalTrace
from traces.windows import ARRIVALS, OVERSIZE_POLICIES, make_windows

DATA_COMMANDS: tuple[str, ...] = ("convert", "describe", "split")
"""The subcommands :func:`run_data_command` runs."""


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """The input file, its format and every loader option (each used by some formats only)."""
    parser.add_argument("input", help="trace file (any supported format)")
    parser.add_argument("--format", choices=TRACE_FORMATS, default=None,
                        help="default: detected from the suffix / header")
    parser.add_argument("--duration-unit", choices=["iterations", "seconds"], default=None,
                        help="sia: what duration counts (default iterations)")
    parser.add_argument("--start", default=None, help="philly, helios: window start")
    parser.add_argument("--end", default=None, help="philly, helios: window end (exclusive)")
    parser.add_argument("--vc", action="append", default=None,
                        help="philly, helios: keep this virtual cluster (repeatable)")
    parser.add_argument("--state", action="append", default=None,
                        help="helios: keep this job state (repeatable; default all)")
    parser.add_argument("--fractional", choices=["drop", "round_up"], default=None,
                        help="alibaba: fractional-GPU pods (default drop)")
    parser.add_argument("--open-ended", choices=["drop", "truncate"], default=None,
                        help="alibaba: pods never deleted (default drop)")
    parser.add_argument("--duration-seed", type=int, default=None,
                        help="pollux: seed of the duration rule (default 0)")


def loader_options(args: argparse.Namespace, fmt: str) -> dict[str, Any]:
    """The keyword options of the chosen format's loader that were given on the command line."""
    given = {
        "duration_unit": args.duration_unit, "start": args.start, "end": args.end,
        "fractional": args.fractional, "open_ended": args.open_ended, "seed": args.duration_seed,
        "clusters" if fmt == "philly" else "vcs": args.vc, "states": args.state,
    }
    return {key: value for key, value in given.items() if value is not None}


def load_input(args: argparse.Namespace) -> CanonicalTrace:
    """Load the ``input`` argument with its options.

    Raises:
        PalgymError: for a bad file or an option the format does not take.
    """
    from traces.formats import detect_format

    fmt = args.format or detect_format(args.input)
    trace = load_canonical(args.input, fmt, **loader_options(args, fmt))
    return trace


def add_data_commands(commands: Any) -> None:
    """Register ``convert``, ``describe`` and ``split`` on the sub-parser collection."""
    convert = commands.add_parser("convert", help="write a trace in the canonical schema")
    add_input_options(convert)
    convert.add_argument("--output", required=True, help=".csv, or .parquet (needs pyarrow)")
    summary = commands.add_parser("describe", help="print a trace's statistics")
    add_input_options(summary)
    summary.add_argument("--cluster-gpus", type=int, default=None, help="G for the load figure")
    split = commands.add_parser("split", help="cut a trace into window files")
    add_input_options(split)
    size = split.add_mutually_exclusive_group(required=True)
    size.add_argument("--num-jobs", type=int, help="jobs per window")
    size.add_argument("--span-h", type=float, help="hours per window")
    split.add_argument("--keep-partial", action="store_true",
                       help="keep a last window with fewer than --num-jobs jobs")
    split.add_argument("--arrivals", choices=ARRIVALS, default="trace")
    split.add_argument("--load", type=float, default=None, help="poisson: target offered load")
    split.add_argument("--cluster-gpus", type=int, default=None)
    split.add_argument("--oversize", choices=OVERSIZE_POLICIES, default="reject")
    split.add_argument("--seed", type=int, default=0, help="poisson arrival seed")
    split.add_argument("--output-dir", required=True)
    split.add_argument("--suffix", choices=[".csv", ".parquet"], default=".csv")


def run_data_command(args: argparse.Namespace, argv_text: str) -> list[str]:
    """Execute ``convert`` / ``describe`` / ``split``.

    Args:
        args: parsed arguments.
        argv_text: the command line, recorded in the written files' metadata.

    Returns:
        Lines to print (summaries, reports, ``wrote PATH``).

    Raises:
        PalgymError: for bad input or options.
        OSError: if a file cannot be written.
    """
    if args.command not in DATA_COMMANDS:
        raise ConfigError(f"command must be one of {list(DATA_COMMANDS)}, got {args.command!r}")
    trace = load_input(args)
    lines = [] if trace.report is None or not trace.report.entries else [trace.report.summary()]
    if args.command == "describe":
        return [*lines, format_summary(describe(trace, args.cluster_gpus))]
    if args.command == "convert":
        path = write_canonical(trace.with_metadata(converted_by=argv_text), args.output)
        return [*lines, f"wrote {path}"]
    windows = make_windows(
        trace, num_jobs=args.num_jobs,
        span_s=None if args.span_h is None else args.span_h * 3600.0,
        arrivals=args.arrivals, load=args.load, cluster_gpus=args.cluster_gpus,
        oversize=args.oversize, seed=args.seed, keep_partial=args.keep_partial,
    )
    if windows and windows[0].report is not None and windows[0].report is not trace.report:
        lines.append(windows[0].report.summary())
    out = Path(args.output_dir)
    for window in windows:
        path = write_canonical(window.with_metadata(split_by=argv_text),
                               out / f"{window.name}{args.suffix}")
        lines.append(f"wrote {path}")
    return lines


def command_text(argv: list[str]) -> str:
    """``python -m traces ARGS`` as one shell-quoted line."""
    return "python -m traces " + " ".join(shlex.quote(a) for a in argv)
