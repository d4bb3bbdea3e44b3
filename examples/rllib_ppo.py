"""Train RLlib PPO with action masking on palgym/PALPlacement-v0 (RLlib's new API stack).

Needs the ``ray`` extra (``pip install -e ".[ray]"``). Tiny settings by default, so a few
iterations take a minute or two on a laptop core::

    python examples/rllib_ppo.py --iterations 3

The env is wrapped by :class:`agents.rllib.env.RLlibActionMaskEnv` (``{"observations",
"action_mask"}``) and the policy is RLlib's own ``ActionMaskingTorchRLModule``, which adds
``log(mask)`` to the logits. Each iteration prints the env steps sampled, the episodes that
finished in it and their mean return (``n/a`` when none finished: a 40-job episode is longer
than one 512-step iteration), the mean reward per sampled step (always defined: the signal to
watch across iterations), the learner's policy loss and action entropy (the entropy falls as
the policy sharpens), and the number of actions outside the mask (from the env's
``info["invalid_action"]``), which must stay 0; the script exits with status 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
from ray.tune.registry import register_env

from agents.rllib.env import make_rllib_env

ENV_NAME = "palgym-masked"
INVALID_KEY = "palgym_invalid_actions"
STEPS_KEY = "palgym_steps_seen"
REWARD_KEY = "palgym_reward_sum"


class CountInvalidActions(RLlibCallback):
    """Sums the env's ``info["invalid_action"]``, the steps seen and their rewards over every
    sampled step."""

    def on_episode_step(self, *, episode: Any, metrics_logger: Any = None,
                        **kwargs: Any) -> None:
        info = episode.get_infos(-1)
        if metrics_logger is not None and "invalid_action" in info:
            metrics_logger.log_value(INVALID_KEY, int(bool(info["invalid_action"])), reduce="sum")
            metrics_logger.log_value(STEPS_KEY, 1, reduce="sum")
            metrics_logger.log_value(REWARD_KEY, float(episode.get_rewards(-1)), reduce="sum")


def build_config(args: argparse.Namespace) -> PPOConfig:
    """PPO with the masking RLModule, one learner in the driver, tiny batches."""
    env_config = {"trace": args.trace, "window": args.window, "cluster": args.cluster}
    return (
        PPOConfig()
        .environment(env=ENV_NAME, env_config=env_config)
        .env_runners(num_env_runners=args.num_env_runners, num_envs_per_env_runner=1,
                     rollout_fragment_length="auto")
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=args.batch_size, minibatch_size=args.minibatch,
                  num_epochs=args.epochs, lr=3e-4)
        .rl_module(rl_module_spec=RLModuleSpec(
            module_class=ActionMaskingTorchRLModule,
            model_config={"fcnet_hiddens": [64, 64], "head_fcnet_hiddens": [64]},
        ))
        .callbacks(CountInvalidActions)
        .debugging(seed=args.seed)
    )


def check_counted(runners: dict[str, Any]) -> None:
    """Fail unless the callback saw every step of the iteration (else the count is unknown)."""
    sampled = int(runners.get("num_env_steps_sampled", -1))
    seen = int(runners.get(STEPS_KEY, -2))
    if INVALID_KEY not in runners or seen != sampled:
        raise RuntimeError(f"the invalid-action counter saw {seen} of {sampled} sampled steps")


def iteration_line(iteration: int, result: dict[str, Any], invalid: int) -> str:
    """One iteration's figures: steps, finished episodes and their mean return (``n/a`` when
    none finished), mean reward per sampled step, the learner's policy loss and entropy (``n/a``
    if RLlib reported none), and the invalid actions so far."""
    runners = result.get("env_runners", {})
    steps = int(runners.get("num_env_steps_sampled", 0))
    episodes = int(runners.get("num_episodes", 0))
    ret = runners.get("episode_return_mean")
    ret_text = f"{ret:.4f}" if episodes and ret is not None else "n/a"
    per_step = float(runners.get(REWARD_KEY, 0.0)) / steps if steps else float("nan")
    learner = result.get("learners", {}).get("default_policy", {})

    def fmt(key: str) -> str:
        value = learner.get(key)
        return "n/a" if value is None else f"{float(value):.4f}"

    return (f"iteration {iteration}: env steps {steps}, episodes finished {episodes}, "
            f"mean return {ret_text}, mean reward per step {per_step:.5f}, "
            f"policy loss {fmt('policy_loss')}, entropy {fmt('entropy')}, "
            f"invalid actions {invalid}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-env-runners", type=int, default=0,
                        help="0: sample in the driver process (default)")
    parser.add_argument("--batch-size", type=int, default=512, help="env steps per iteration")
    parser.add_argument("--minibatch", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--trace", default="bundled:train", help="the env's trace argument")
    parser.add_argument("--window", type=int, default=40, help="jobs per episode")
    parser.add_argument("--cluster", default="16x4")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Train, print one line per iteration, return 1 if any action was outside the mask."""
    args = parse_args(argv)
    if args.iterations < 1:
        raise SystemExit(f"--iterations must be >= 1, got {args.iterations}")
    ray.init(num_cpus=max(1, args.num_env_runners + 1), include_dashboard=False,
             log_to_driver=False)
    register_env(ENV_NAME, make_rllib_env)
    algo = build_config(args).build_algo()
    invalid = 0
    try:
        for iteration in range(1, args.iterations + 1):
            result = algo.train()
            runners = result.get("env_runners", {})
            check_counted(runners)
            invalid += int(runners[INVALID_KEY])
            print(iteration_line(iteration, result, invalid), flush=True)
    finally:
        algo.stop()
        ray.shutdown()
    print(f"invalid actions over {args.iterations} iterations: {invalid}")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
