"""Show a trace set's splits, or write a manifest for a folder of traces.

Examples::

    python -m palgym.tracesets show bundled
    python -m palgym.tracesets show /data/traces/sia_philly_pal          # the folder rule
    python -m palgym.tracesets write /data/traces/sia_philly_pal -o sia-w123.json \\
        --train workload-1 workload-2 workload-3 --test workload-4 workload-5
    python -m palgym.tracesets write trace.csv-folder -o m.json --train 'gen-0[0:100]' \\
        --validation 'gen-0[100:160]'

``write`` without ``--train/--validation/--test`` records the folder rule's splits; an entry is
a trace id (the file stem) or ``id[start:stop]`` (jobs in arrival order). Exit code 2 on bad
input (``error: <message>``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from palgym.bundled import natural_key
from palgym.errors import PalgymError
from palgym.io.atomic import check_destination
from palgym.io.pipes import run_cli
from palgym.tracesets.manifest import load_trace_set, write_manifest
from palgym.tracesets.sets import SPLITS, SplitSpec, TraceSet, TraceSetError, make_trace_set

_ENTRY = re.compile(r"^(?P<trace>[^\[\]]+)(\[(?P<start>\d+):(?P<stop>\d+)\])?$")


def parse_entry(text: str) -> SplitSpec:
    """``"id"`` -> ``"id"``; ``"id[a:b]"`` -> ``("id", a, b)``.

    Raises:
        TraceSetError: for any other text.
    """
    match = _ENTRY.match(text)
    if match is None:
        raise TraceSetError(f"split entry {text!r}: expected TRACE or TRACE[start:stop]")
    if match["start"] is None:
        return match["trace"]
    return match["trace"], int(match["start"]), int(match["stop"])


def describe(trace_set: TraceSet) -> str:
    """A text summary: name, rule, members with hashes, and each split's traces."""
    lines = [f"trace set {trace_set.name!r} ({trace_set.source or 'in memory'})",
             f"rule: {trace_set.rule}", "members:"]
    lines += [f"  {m.trace}: {m.num_jobs} jobs, sha256 {m.sha256}  {m.path}"
              for m in trace_set.members]
    for split in SPLITS:
        labels = (trace_set.labels(split) if trace_set.splits.get(split) else [])
        lines.append(f"{split}: {', '.join(labels) or '(empty)'}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(prog="python -m palgym.tracesets",
                                     description="Trace sets with disjoint splits.")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print a set's members and splits")
    show.add_argument("set", help="'bundled', a manifest file or a folder of traces")
    write = commands.add_parser("write", help="write a manifest for a folder of traces")
    write.add_argument("folder", type=Path)
    write.add_argument("-o", "--output", type=Path, required=True, help="manifest (JSON) path")
    write.add_argument("--name", help="set name (default: the folder name)")
    write.add_argument("--duration-unit", choices=("iterations", "seconds"),
                       default="iterations")
    for split in SPLITS:
        write.add_argument(f"--{split}", nargs="+", default=None, metavar="TRACE[a:b]")
    return parser


def _write(args: argparse.Namespace) -> TraceSet:
    if not args.folder.is_dir():
        raise TraceSetError(f"folder {args.folder}: "
                            + ("not a folder" if args.folder.exists() else "not found"))
    check_destination(args.output, "--output")
    explicit = {s: getattr(args, s) for s in SPLITS if getattr(args, s) is not None}
    if not explicit:
        trace_set = load_trace_set(args.folder, args.duration_unit)
    else:
        files = sorted(args.folder.glob("*.csv"), key=natural_key)
        splits = {s: [parse_entry(e) for e in entries] for s, entries in explicit.items()}
        named = {e if isinstance(e, str) else e[0] for es in splits.values() for e in es}
        trace_set = make_trace_set(
            args.name or args.folder.resolve().name, [f for f in files if f.stem in named],
            splits, "explicit: " + "; ".join(f"{s} = {' '.join(e)}" for s, e in explicit.items()),
            args.duration_unit)
    if args.name:
        trace_set = TraceSet(args.name, trace_set.members, trace_set.splits, trace_set.rule,
                             trace_set.duration_unit, trace_set.source)
    write_manifest(trace_set, args.output)
    return load_trace_set(args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        trace_set = load_trace_set(args.set) if args.command == "show" else _write(args)
    except (PalgymError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(describe(trace_set))
    if args.command == "write":
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
