"""Benchmark: wall time of one whole heuristic episode per placement policy.

Prints, for each trace and policy: the rounds of the episode, split into the rounds the driver
stepped one by one (a placement, a commit and an advance each) and the idle rounds run in one
compiled call (:meth:`palgym.sim.engine.Simulator.idle_rounds`, nothing changes in them), the
median wall time of a full episode (160 jobs on 16 x 4 GPUs by default), episodes per second
and stepped rounds per second. Rounds per second over *all* rounds would count the idle ones,
which cost almost nothing, and would not compare across policies (sticky policies have more of
them). It asserts nothing.

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
from palgym.sim.engine import Simulator
from palgym.simulate import Episode, slowdown_factors


def idle_round_count(episode: Episode, policy: str, queue_order: str, factors: object) -> int:
    """Rounds run inside ``Simulator.idle_rounds`` calls in one (untimed) episode, counted by
    wrapping the method for that episode."""
    original = Simulator.idle_rounds
    counted = [0]

    def counting(sim):  # type: ignore[no-untyped-def]
        rounds = original(sim)
        counted[0] += rounds
        return rounds

    Simulator.idle_rounds = counting  # type: ignore[method-assign]
    try:
        run_episode(episode, policy, queue_order, factors)  # type: ignore[arg-type]
    finally:
        Simulator.idle_rounds = original  # type: ignore[method-assign]
    return counted[0]


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
    print(f"{'trace':<22} {'policy':<18} {'rounds':>7} {'stepped':>8} {'idle':>6} "
          f"{'episode_s':>10} {'episodes/s':>11} {'stepped_rounds/s':>17}")
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
            idle = idle_round_count(episode, policy, args.queue_order, factors)
            stepped = result.num_rounds - idle
            median = statistics.median(times)
            print(f"{path.stem:<22} {policy:<18} {result.num_rounds:>7} {stepped:>8} "
                  f"{idle:>6} {median:>10.3f} {1.0 / median:>11.1f} {stepped / median:>17.0f}")


if __name__ == "__main__":
    main()
