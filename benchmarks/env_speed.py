"""Benchmark: decisions per second of the Gymnasium env (random masked agent and PAL agent).

For each cluster size, a Sia-Philly-like trace is generated with the arrival rate scaled to the
cluster (32 jobs/h per 64 GPUs) and the env is stepped for a fixed number of decisions. Prints
figures only; asserts nothing.

    python benchmarks/env_speed.py [--clusters 16x4 64x4 256x4] [--decisions 3000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from palgym.envs import ClusterEnv
from palgym.sim.cluster import ClusterSpec
from traces.generate import generate_sia_philly_like
from traces.sia_philly_fit import SIA_PHILLY


def measure(env: ClusterEnv, agent: str, decisions: int, seed: int) -> tuple[float, int]:
    """(decisions per second, episodes finished) over ``decisions`` steps."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    episodes = 0
    start = time.perf_counter()
    for _ in range(decisions):
        if agent == "random":
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
        else:
            action = env.heuristic_action("pal")
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            episodes += 1
            env.reset()
    return decisions / (time.perf_counter() - start), episodes


def main() -> None:
    """Print one line per (cluster, agent)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", nargs="+", default=["16x4", "64x4", "256x4"])
    parser.add_argument("--decisions", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{'cluster':<8} {'GPUs':>5} {'agent':<7} {'decisions/s':>12} {'episodes':>9}")
    for text in args.clusters:
        cluster = ClusterSpec.parse(text)
        scale = cluster.num_gpus / 64
        params = type(SIA_PHILLY)(**{**SIA_PHILLY.__dict__,
                                     "jobs_per_hour": SIA_PHILLY.jobs_per_hour * scale})
        trace = generate_sia_philly_like(int(160 * scale), seed=args.seed, params=params)
        env = ClusterEnv(trace.to_trace(f"gen-{text}"), cluster=cluster)
        for agent in ("random", "pal"):
            rate, episodes = measure(env, agent, args.decisions, args.seed)
            print(f"{text:<8} {cluster.num_gpus:>5} {agent:<7} {rate:>12.0f} {episodes:>9}")


if __name__ == "__main__":
    main()
