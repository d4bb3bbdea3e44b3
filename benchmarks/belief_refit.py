"""Benchmark: the belief's slowdown-factor refits, scikit-learn's k-means vs the exact 1-D DP.

Two figures, printed (nothing is asserted):

1. Refits per second of :meth:`palgym.policies.slowdown.SlowdownFactors.fit` (4 classes, the
   silhouette rule) on dynamic-world-like beliefs of G = 64, 256, 1024 GPUs (lognormal speeds
   with 2% 2.5x outliers, rounded to 4 decimals so some values repeat), with
   ``solver="sklearn"`` (the old path: k-means++ with one start per candidate K, then
   ``n_init=10``) and ``solver="exact"`` (:mod:`palgym.policies.kmeans1d`), each timed for
   about ``--seconds`` (at least one fit).
2. Env steps per second of the ``dynamic-online`` env (``dynamic`` preset, online belief,
   observed rates, reward relative to PAL online; job windows of ``--window`` jobs of the
   bundled traces) under a uniformly random masked agent, for each solver, over ``--episodes``
   episodes of seeds 0, 1, ... (resets included: the reference run of the relative reward is
   part of a reset). Then the reset time of an episode seen before (the reference cache,
   :mod:`palgym.envs.references`) against a first reset.

    python benchmarks/belief_refit.py [--gpus 64 256 1024] [--episodes 2] [--window 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from palgym.bundled import bundled_trace_paths  # noqa: E402
from palgym.envs import ClusterEnv  # noqa: E402
from palgym.envs.references import REFERENCES  # noqa: E402
from palgym.policies.slowdown import ClusterCountRule, KMeansSolver, SlowdownFactors  # noqa: E402

SOLVERS = (KMeansSolver.SKLEARN, KMeansSolver.EXACT)


def belief_values(num_gpus: int, seed: int) -> np.ndarray:
    """float64 (4, G): a dynamic-world-like belief (see the module docstring)."""
    rng = np.random.default_rng(seed)
    values = rng.lognormal(0.0, 0.15, (4, num_gpus))
    values[rng.random((4, num_gpus)) < 0.02] *= 2.5
    return np.round(values, 4)


def refits_per_second(num_gpus: int, solver: KMeansSolver, seconds: float) -> float:
    """Fits per second of fresh beliefs of ``num_gpus`` GPUs (one warm-up fit first)."""
    SlowdownFactors.fit(belief_values(num_gpus, 0), ClusterCountRule.SILHOUETTE, solver=solver)
    fits, start = 0, time.perf_counter()
    while fits == 0 or time.perf_counter() - start < seconds:
        SlowdownFactors.fit(belief_values(num_gpus, fits + 1), ClusterCountRule.SILHOUETTE,
                            solver=solver)
        fits += 1
    return fits / (time.perf_counter() - start)


def dynamic_online_env(solver: KMeansSolver, window: int) -> ClusterEnv:
    """The ``dynamic-online`` training env (agents/pretrained/README.md) with ``solver``."""
    return ClusterEnv(
        sorted(bundled_trace_paths().values()), window=window, preset="dynamic",
        belief={"mode": "online", "solver": solver.value}, max_tiers=6, observed_rates=True,
        max_rounds=1_000_000, reward="relative", baseline_policy="pal")


def random_episodes(env: ClusterEnv, episodes: int) -> tuple[int, float, int]:
    """(env steps, seconds inside reset and step, refits of the agent's belief) of
    ``episodes`` episodes of a random masked agent (seed e for episode e)."""
    rng = np.random.default_rng(0)
    steps, inside, refits = 0, 0.0, 0
    clock = time.perf_counter
    for seed in range(episodes):
        start = clock()
        env.reset(seed=seed)
        inside += clock() - start
        done = False
        while not done:
            valid = env.action_masks().nonzero()[0]
            action = int(valid[rng.integers(valid.size)])
            start = clock()
            _, _, terminated, truncated, _ = env.step(action)
            inside += clock() - start
            steps += 1
            done = terminated or truncated
        refits += env.episode_context.fit.refits
    return steps, inside, refits


def reset_seconds(env: ClusterEnv, seed: int) -> float:
    start = time.perf_counter()
    env.reset(seed=seed)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="time per refit measurement (default 2 s)")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--window", type=int, default=60)
    args = parser.parse_args()
    print("refits/s (SlowdownFactors.fit, 4 classes, silhouette rule K in 2..6)")
    print(f"{'G':>6} {'sklearn':>10} {'exact':>10} {'speed-up':>9}")
    for num_gpus in args.gpus:
        old, new = (refits_per_second(num_gpus, s, args.seconds) for s in SOLVERS)
        print(f"{num_gpus:>6} {old:>10.2f} {new:>10.1f} {new / old:>8.0f}x")
    print(f"\ndynamic-online env, random masked agent, {args.episodes} episodes of "
          f"{args.window}-job windows (resets included)")
    print(f"{'solver':>8} {'steps':>6} {'seconds':>8} {'steps/s':>8} {'refits':>7}")
    for solver in SOLVERS:
        REFERENCES.clear()
        steps, seconds, refits = random_episodes(dynamic_online_env(solver, args.window),
                                                 args.episodes)
        print(f"{solver.value:>8} {steps:>6} {seconds:>8.2f} {steps / seconds:>8.1f} "
              f"{refits:>7}")
    env = dynamic_online_env(KMeansSolver.EXACT, args.window)
    REFERENCES.clear()
    first = reset_seconds(env, 1000)
    again = min(reset_seconds(env, 1000) for _ in range(3))
    print(f"\nreset (exact): first on an episode {first * 1e3:.1f} ms (runs the reference), "
          f"again {again * 1e3:.1f} ms (cached: {REFERENCES.hits} hits, "
          f"{REFERENCES.misses} miss)")


if __name__ == "__main__":
    main()
