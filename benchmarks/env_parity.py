"""Check: every heuristic through the env reproduces run_episode, on whole traces.

For each trace, queue order and placement policy, runs the heuristic through the env
(``heuristic_action`` at every step; the placement task, or ``--task scheduling``) and directly
with ``run_episode`` on the identical episode, and prints whether every per-job completion time
is bit-identical, plus the decisions per second of the env run. ``--belief`` gives the env
that belief (what PAL and PM-First see; the direct run takes it from the env's episode), e.g.
``--preset dynamic --belief online --policies pal pm-first``.

    python benchmarks/env_parity.py [--trace PATH ...] [--preset pal-artifact]
        [--variability-data DIR] [--queue-orders fifo srtf] [--task scheduling]
        [--belief oracle|stale|online] [--policies NAME|MODULE:CLASS ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from palgym import PLACEMENT_NAMES, run_episode
from palgym.bundled import bundled_trace_paths
from palgym.envs import ClusterEnv
from palgym.policies import placement_name
from palgym.policies.belief import BELIEF_NAMES
from palgym.policies.registry import placement_entry


def parity(trace: Path, policy: str, order: str, args: argparse.Namespace) -> tuple[bool, float]:
    """(identical completions, env decisions per second) for one run."""
    entry = placement_entry(policy)  # its traits: the env it acts in
    env = ClusterEnv(
        str(trace), preset=args.preset, variability_data=args.variability_data,
        queue_order=order, sticky=entry.sticky,
        class_reorder=entry.class_reorder, max_tiers=6, task=args.task,
        belief=args.belief,
    )
    env.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while True:
        _, _, terminated, truncated, _ = env.step(env.heuristic_action(policy))
        steps += 1
        if terminated or truncated:
            break
    rate = steps / (time.perf_counter() - start)
    direct = run_episode(env.episode, policy, order)  # the identical episode and belief
    same = np.array_equal(direct.records.completion_time_s,
                          env.simulator.records().completion_time_s, equal_nan=True)
    return same, rate


def main() -> None:
    """Print one line per (trace, order, policy) and a final count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", nargs="+", type=Path)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--variability-data", type=Path)
    parser.add_argument("--queue-orders", nargs="+", default=["fifo", "srtf"])
    parser.add_argument("--policies", nargs="+", default=list(PLACEMENT_NAMES),
                        help="registered placements or MODULE:CLASS (default: every "
                             "registered placement)")
    parser.add_argument("--task", choices=["placement", "scheduling"], default="placement",
                        help="the env's task (scheduling: heuristics end the round when their "
                             "head job does not fit)")
    parser.add_argument("--belief", choices=BELIEF_NAMES, default="oracle",
                        help="what PAL and PM-First see of the GPUs (the env's belief)")
    args = parser.parse_args()
    traces = args.trace or list(bundled_trace_paths().values())
    failures = total = 0
    for trace in traces:
        for order in args.queue_orders:
            for policy in map(placement_name, args.policies):
                same, rate = parity(trace, policy, order, args)
                total += 1
                failures += not same
                print(f"{trace.stem:<18} {order:<5} {policy:<18} "
                      f"{'identical' if same else 'DIFFERENT':<10} {rate:8.0f} decisions/s")
    print(f"{total - failures}/{total} runs identical")


if __name__ == "__main__":
    main()
