"""Benchmark: wall time to load and describe a trace file (e.g. the 82,247-job Philly extract).

Prints, per step, the median wall time over ``--repeats`` runs: ``load_canonical`` (parse,
validate, sort), ``describe``, load + describe together, and ``load_trace`` (load + conversion to
palgym's Trace). It asserts nothing.

    python benchmarks/traces_load.py [PATH] [--format NAME] [--cluster-gpus 64] [--repeats 5]

PATH defaults to ``$PALGYM_DATA_DIR/traces/philly_sia_artifact/philly.csv``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

from traces.describe import describe
from traces.formats import load_canonical, load_trace


def _median_s(step, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    """Run the benchmark and print one line per step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--format", default=None)
    parser.add_argument("--cluster-gpus", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    path = args.path
    if path is None:
        root = os.environ.get("PALGYM_DATA_DIR")
        if not root:
            print("give a PATH or set PALGYM_DATA_DIR", file=sys.stderr)
            return 2
        path = Path(root) / "traces" / "philly_sia_artifact" / "philly.csv"
    logging.disable(logging.WARNING)  # "unknown model" notes are not what is measured
    trace = load_canonical(path, args.format)
    steps = {
        "load_canonical": lambda: load_canonical(path, args.format),
        "describe": lambda: describe(trace, args.cluster_gpus),
        "load + describe": lambda: describe(load_canonical(path, args.format), args.cluster_gpus),
        "load_trace": lambda: load_trace(path, args.format),
    }
    print(f"{path} ({trace.num_jobs} jobs), median of {args.repeats} runs")
    for label, step in steps.items():
        print(f"{label:<16} {_median_s(step, args.repeats):8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
