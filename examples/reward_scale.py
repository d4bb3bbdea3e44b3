"""How far episode returns spread across job windows, per reward, for PAL and a random agent.

For each reward (``jct`` at the default ``reward_scale``, ``relative`` to Packed-Sticky,
``slowdown``) it steps the same episodes (``reset(seed=s)`` for s in --seeds) with PAL's
action and with a uniformly random valid action, and prints the smallest and largest return
and, per episode, how much better PAL's return is than the random agent's (the part of the
return a policy can change). Run from the repository root::

    python examples/reward_scale.py                         # 40-job windows, seeds 0-7
    python examples/reward_scale.py --window 160 --seeds 0 1 2 3
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import palgym  # noqa: F401  (registers the ids)

REWARDS = (("jct", {}), ("relative", {"baseline_policy": "packed-sticky"}), ("slowdown", {}))


def episode_return(env: gym.Env, seed: int, policy: str, rng: np.random.Generator) -> float:
    """Return of one episode of ``policy`` (``pal`` or ``random``) from ``reset(seed)``."""
    env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        if policy == "random":
            action = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        else:
            action = env.unwrapped.heuristic_action(policy)
        _, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="bundled:train")
    parser.add_argument("--window", type=int, default=40)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    args = parser.parse_args()
    print(f"{args.trace}, {args.window}-job windows, seeds {args.seeds}")
    print(f"{'reward':<10} {'PAL return':>20} {'random return':>20} {'PAL - random':>20}")
    for reward, kwargs in REWARDS:
        env = gym.make("palgym/PALPlacement-v0", trace=args.trace, window=args.window,
                       reward=reward, **kwargs)
        rng = np.random.default_rng(0)
        pal = np.array([episode_return(env, s, "pal", rng) for s in args.seeds])
        rand = np.array([episode_return(env, s, "random", rng) for s in args.seeds])
        env.close()
        cells = [f"{x.min():9.3f} .. {x.max():7.3f}" for x in (pal, rand, pal - rand)]
        print(f"{reward:<10} " + " ".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
