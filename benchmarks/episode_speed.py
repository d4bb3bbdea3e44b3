"""Benchmark: wall time of one whole heuristic episode per placement policy.

Prints, for each trace and policy, the rounds simulated and the median wall time of a full
episode (160 jobs on 16 x 4 GPUs by default). It asserts nothing.

    python benchmarks/episode_speed.py [--trace PATH ...] [--preset pal-artifact]
        [--variability-data DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from importlib import resources
from pathlib import Path

from palgym import PLACEMENT_NAMES, make_episode, preset, read_sia_trace, run_episode
from palgym.simulate import slowdown_factors


def main() -> None:
    """Run the benchmark and print one line per (trace, policy)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="+", type=Path)
    parser.add_argument("--preset", default="pal-artifact")
    parser.add_argument("--variability-data", type=Path)
    parser.add_argument("--queue-order", default="fifo")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    traces = args.trace or sorted(
        Path(str(p)) for p in resources.files("palgym").joinpath("data", "traces").iterdir()
        if str(p).endswith(".csv")
    )
    print(f"{'trace':<22} {'policy':<18} {'rounds':>7} {'episode_s':>10} {'rounds_per_s':>13}")
    for path in traces:
        episode = make_episode(
            read_sia_trace(path), config=preset(args.preset),
            variability_data=args.variability_data,
        )
        factors = slowdown_factors(episode)
        for policy in PLACEMENT_NAMES:
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                result = run_episode(episode, policy, args.queue_order, factors)
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            print(f"{path.stem:<22} {policy:<18} {result.num_rounds:>7} {median:>10.3f} "
                  f"{result.num_rounds / median:>13.0f}")


if __name__ == "__main__":
    main()
