"""A complete minimal MaskablePPO training script on palgym (no train.py machinery).

``--n-envs`` episodes of ``palgym/PALPlacement-v0`` are stepped by palgym's batched env
(``--vec-env native``, :class:`agents.sb3.native_vec_env.NativeVecEnv`: one call steps them all in
this process) or by SB3's ``SubprocVecEnv`` workers (``--vec-env subproc``); MaskablePPO reads
the masks through the vector env. The policy is the candidate scorer
(:class:`agents.sb3.policies.CandidateScoringPolicy`) scoring only the feasible candidates. At the
end the greedy policy and the PAL heuristic are evaluated on the same seeded episodes (the
same ``episode_hash``).

Run from the repository root (needs the ``train`` extra)::

    python examples/train_maskable_ppo.py                      # 4096 steps
    python examples/train_maskable_ppo.py --timesteps 512 --eval-episodes 1 --window 12

``torch.set_num_threads(1)`` matters: the policy is a small MLP, and torch's default (one
thread per core) makes every forward and backward pass contend with the env for the cores;
``--num-threads 0`` keeps torch's default, to compare.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import SubprocVecEnv, VecEnv

from agents.sb3.native_vec_env import NativeVecEnv
from agents.sb3.policies import CandidateScoringPolicy

ENV_ID = "palgym:palgym/PALPlacement-v0"  # "palgym:" makes each worker import palgym


def make_env(window: int) -> gym.Env:
    """One training env: 'window' consecutive jobs of a bundled training trace per episode."""
    return gym.make(ENV_ID, trace="bundled:train", window=window)


def evaluate(model: MaskablePPO | None, window: int, episodes: int, seed: int
             ) -> tuple[list[float], list[str]]:
    """Returns and episode hashes of ``episodes`` episodes (reset(seed) once, then the env's
    RNG continues); ``model=None`` steps the PAL heuristic instead."""
    env = gym.make(ENV_ID, trace="bundled:validation", window=window)
    returns, hashes = [], []
    obs, info = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        hashes.append(info["episode_hash"])
        while not done:
            if model is None:
                action = env.unwrapped.heuristic_action("pal")
            else:
                action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks(),
                                          deterministic=True)
            obs, reward, terminated, truncated, info = env.step(int(action))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        obs, info = env.reset()
    env.close()
    return returns, hashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=4096)
    parser.add_argument("--window", type=int, default=40, help="jobs per episode")
    parser.add_argument("--n-steps", type=int, default=128, help="rollout steps per env")
    parser.add_argument("--n-envs", type=int, default=16, help="training envs")
    parser.add_argument("--vec-env", choices=["native", "subproc"], default="native")
    parser.add_argument("--eval-episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-threads", type=int, default=1,
                        help="torch threads (0: torch's default, to compare)")
    args = parser.parse_args()
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)

    venv: VecEnv
    if args.vec_env == "native":
        venv = NativeVecEnv(ENV_ID, args.n_envs, {"trace": "bundled:train", "window": args.window})
    else:
        venv = SubprocVecEnv([lambda: make_env(args.window)] * args.n_envs, start_method="spawn")
    venv.seed(args.seed)
    model = MaskablePPO(CandidateScoringPolicy, venv, n_steps=args.n_steps,
                        batch_size=min(512, args.n_steps * args.n_envs), n_epochs=4,
                        learning_rate=3e-4, gamma=0.999, seed=args.seed, verbose=0,
                        policy_kwargs={"skip_infeasible": True})
    started = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    elapsed = time.perf_counter() - started
    venv.close()
    print(f"trained {model.num_timesteps} steps in {elapsed:.1f} s "
          f"({model.num_timesteps / elapsed:.0f} steps/s, torch threads "
          f"{torch.get_num_threads()})")

    learned, hashes = evaluate(model, args.window, args.eval_episodes, seed=args.seed + 10_000)
    pal, pal_hashes = evaluate(None, args.window, args.eval_episodes, seed=args.seed + 10_000)
    assert hashes == pal_hashes, "the two evaluations saw different episodes"
    print(f"validation return over {args.eval_episodes} episodes: "
          f"MaskablePPO {np.mean(learned):.4f}, PAL {np.mean(pal):.4f}")


if __name__ == "__main__":  # needed: SubprocVecEnv workers import this file
    main()
