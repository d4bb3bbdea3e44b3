"""What the benchmarks on the public data share: their arguments' checks."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError
from palgym.io.atomic import atomic_write_text, check_destination


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse (exit 2, naming the argument) a ``--data-dir`` without the five Sia-Philly
    workloads and a ``--json`` that could not be written, before anything runs."""
    if args.json is not None:
        try:
            check_destination(args.json, "--json")
        except ConfigError as exc:
            parser.error(str(exc))
    if args.data_dir is None:
        return
    folder = args.data_dir / "traces" / "sia_philly_pal"
    missing = [folder / f"workload-{k}.csv" for k in range(1, 6)
               if not (folder / f"workload-{k}.csv").is_file()]
    if missing:
        parser.error(f"--data-dir {args.data_dir}: no file {missing[0]} (the public data "
                     "folder holds traces/sia_philly_pal/workload-1.csv to -5.csv; "
                     "docs/REPRODUCING.md)")


def finish_table(json_path: Path | None, unfinished: int, results: dict[str, Any]) -> None:
    """Print the count of unfinished (truncated) episodes, warn on stderr if any, and write
    ``results`` with that count (key ``unfinished``) to ``json_path`` atomically (sorted keys,
    indent 2) unless it is None."""
    print(f"unfinished (truncated) episodes: {unfinished} (marked *; censored JCTs)")
    if unfinished:
        print("warning: truncated episodes enter the ratios with censored JCTs", file=sys.stderr)
    if json_path is not None:
        atomic_write_text(json_path, json.dumps({**results, "unfinished": unfinished}, indent=2,
                                                sort_keys=True) + "\n")
