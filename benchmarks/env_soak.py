"""Soak check: many uniformly sampled masked actions on both env ids.

Counts invalid actions (should be 0), empty masks (should be 0) and observations outside the
observation space (should be 0), over the bundled traces, and prints the counts. Decisions per
second count the agent's choice, ``step`` and ``reset`` only; the soak's own checks (the mask
and observation-space tests) are timed separately (``check_s``).

    python benchmarks/env_soak.py [--actions 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import palgym  # noqa: F401  (registers the ids)


def soak(env_id: str, actions: int, seed: int) -> dict[str, float]:
    """Counters of one soak run."""
    env = gym.make(env_id, trace="bundled").unwrapped
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    counts = {"invalid": 0, "empty_mask": 0, "outside_space": 0, "episodes": 0}
    clock = time.perf_counter
    checks_s = 0.0
    start = clock()
    for _ in range(actions):
        mask = env.action_masks()
        checked = clock()
        if not mask.any():
            counts["empty_mask"] += 1
            mask = np.ones_like(mask)
        checks_s += clock() - checked
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        checked = clock()
        counts["invalid"] += int(info["invalid_action"])
        counts["outside_space"] += int(not env.observation_space.contains(obs))
        checks_s += clock() - checked
        if terminated or truncated:
            counts["episodes"] += 1
            obs, _ = env.reset()
    total_s = clock() - start
    counts["decisions_per_s"] = actions / (total_s - checks_s)
    counts["check_s"] = checks_s
    counts["total_s"] = total_s
    return counts


def main() -> None:
    """Print the counters of both env ids."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for env_id in ("palgym/PALPlacement-v0", "palgym/PALScheduling-v0"):
        counts = soak(env_id, args.actions, args.seed)
        print(env_id, " ".join(f"{k}={v:.0f}" if k != "check_s" and k != "total_s"
                               else f"{k}={v:.2f}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
