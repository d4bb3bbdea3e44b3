"""Input-driven baselines for MaskablePPO: K rollouts of the same input per update.

In a scheduling env the return of an action depends as much on the jobs that arrive later
(the *input*) as on the action. Mao et al. ("Variance Reduction for Reinforcement Learning in
Input-Driven Environments", ICLR 2019; also Decima, SIGCOMM 2019) take the baseline of a step
from several rollouts on the *same* input sequence: the advantage of a step is its return minus
the mean, over the K rollouts, of the return from the same point of the input.

:class:`InputDrivenMaskablePPO` collects each update's rollout as K complete episodes, all
reset with one seed (same trace window, same episode seed, so the same arrivals, profile and
durations), and replaces GAE by :func:`input_driven_advantages`:

- ``G[i]``: the discounted return-to-go of step i in its own episode (``gamma`` per step);
- ``b[i]``: the mean over the K episodes j of ``G_j`` at the first step of j whose simulated
  time is >= the time of step i (0 when episode j ended before that time: nothing is left);
- advantage ``A[i] = G[i] - b[i]``; PPO's value target is ``G[i]`` (the value net is trained
  but not used by the advantage).

"The same point" is the same *simulated time*, not the same step index: the input is a
function of time (a job arrives at its submit time whatever the agent did), while the number
of decisions per round and the number of rounds differ between the K episodes as soon as their
actions differ, so step i of two episodes sits at different points of the input. In the
placement task the decisions of one round share its time and only the round's last decision
advances the clock, so with ``gamma = 1`` the return is constant within a round and the
alignment is exact; ``gamma < 1`` adds a per-decision discount inside a round.

Each rollout's input seed is drawn from ``(model seed, timesteps so far)`` (no hidden state:
a resume continues deterministically). Episodes ended by truncation (``max_rounds``) are
counted in ``rollout/truncated_episodes`` and logged; their return is not bootstrapped.
Needs one in-process env (``n_envs 1``; the env is stepped directly, so no automatic reset
builds an unused episode).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from agents.sb3.factory import resolve_policy, validate_hyperparams
from agents.sb3.model_zip import load_model
from palgym.errors import ConfigError

logger = logging.getLogger(__name__)


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted return from each step to the end of the episode.

    Args:
        rewards: float (T,), one episode's rewards in step order.
        gamma: discount per step, in [0, 1].

    Returns:
        float64 (T,): ``G[t] = r[t] + gamma * G[t + 1]``, ``G[T - 1] = r[T - 1]``.
    """
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def input_driven_advantages(rewards: np.ndarray, episodes: np.ndarray, times_s: np.ndarray,
                            gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns, time-aligned K-mean baselines and advantages of K episodes on one input.

    Args:
        rewards: float (N,), the steps of all K episodes, each episode's steps contiguous and
            in order.
        episodes: int (N,), the episode (0..K-1) of each step.
        times_s: float (N,), simulated time of each decision (s), non-decreasing within an
            episode.
        gamma: discount per step.

    Returns:
        ``(returns, baselines, advantages)``, float64 (N,) each (see the module docstring).

    Raises:
        ValueError: for arrays of different lengths, or decreasing times within an episode.
    """
    rewards, times_s = np.asarray(rewards, np.float64), np.asarray(times_s, np.float64)
    episodes = np.asarray(episodes)
    if not len(rewards) == len(episodes) == len(times_s):
        raise ValueError(f"rewards, episodes and times_s differ in length: {len(rewards)}, "
                         f"{len(episodes)}, {len(times_s)}")
    ids = list(dict.fromkeys(episodes.tolist()))
    returns = np.zeros(len(rewards))
    per_episode = []
    for k in ids:
        rows = np.flatnonzero(episodes == k)
        if np.any(np.diff(times_s[rows]) < 0):
            raise ValueError(f"times_s decrease within episode {k}")
        returns[rows] = returns_to_go(rewards[rows], gamma)
        per_episode.append((times_s[rows], np.append(returns[rows], 0.0)))
    baselines = np.zeros(len(rewards))
    for times_k, returns_k in per_episode:
        baselines += returns_k[np.searchsorted(times_k, times_s, side="left")]
    baselines /= max(len(ids), 1)
    return returns, baselines, returns - baselines


def input_seed(seed: int | None, timesteps: int) -> int:
    """The input seed of the rollout starting after ``timesteps`` steps (reproducible)."""
    state = np.random.SeedSequence([int(seed or 0), int(timesteps)]).generate_state(1)
    return int(state[0] % (2**31 - 1))


class InputDrivenMaskablePPO(MaskablePPO):
    """MaskablePPO whose rollouts are K episodes of one input, with the K-mean baseline.

    Args:
        input_driven_k: K, episodes per rollout (>= 2).
        *args, **kwargs: MaskablePPO's (``n_steps`` only sizes the unused initial buffer).
    """

    def __init__(self, *args: Any, input_driven_k: int = 4, **kwargs: Any) -> None:
        if input_driven_k < 2:
            raise ConfigError(f"input-driven baselines need K >= 2 episodes, got "
                              f"{input_driven_k}")
        self.input_driven_k = int(input_driven_k)
        super().__init__(*args, **kwargs)

    def collect_rollouts(self, env: VecEnv, callback: BaseCallback, rollout_buffer: Any,
                         n_rollout_steps: int, use_masking: bool = True) -> bool:
        """Collect K episodes on one input into a fresh buffer (``n_rollout_steps`` unused).

        Raises:
            ConfigError: for a vector env other than one in-process env.
        """
        if not isinstance(env, DummyVecEnv) or env.num_envs != 1:
            raise ConfigError("input-driven baselines need one in-process env (--n-envs 1)")
        self.policy.set_training_mode(False)
        callback.on_rollout_start()
        steps = self._episodes_on_one_input(env, callback)
        if steps is None:
            return False
        self.rollout_buffer = self._fill_buffer(steps)
        callback.on_rollout_end()
        return True

    def _episodes_on_one_input(self, env: DummyVecEnv, callback: BaseCallback
                               ) -> list[dict[str, Any]] | None:
        """Step the env through K episodes reset with one seed; None if a callback stopped."""
        raw = env.envs[0]
        seed = input_seed(self.seed, self.num_timesteps)
        steps: list[dict[str, Any]] = []
        truncated = 0
        for episode in range(self.input_driven_k):
            obs, _ = raw.reset(seed=seed)
            start, done = True, False
            while not done:
                batched = {key: np.array(value)[None] for key, value in obs.items()}
                masks = np.asarray(raw.get_wrapper_attr("action_masks")())[None]
                time_s = float(raw.get_wrapper_attr("simulator").now_s)
                with th.no_grad():
                    actions, values, log_probs = self.policy(
                        obs_as_tensor(batched, self.device), action_masks=masks)
                action = int(actions.cpu().numpy()[0])
                obs, reward, terminated, cut, info = raw.step(action)
                done = bool(terminated or cut)
                truncated += int(cut and not terminated)
                self.num_timesteps += 1
                infos, dones = [info], np.array([done])
                callback.update_locals(locals())
                if not callback.on_step():
                    return None
                self._update_info_buffer(infos, dones)
                steps.append({"obs": batched, "action": np.array([[action]]),
                              "reward": np.array([reward], np.float32), "start": start,
                              "value": values, "log_prob": log_probs, "mask": masks,
                              "time_s": time_s, "episode": episode})
                start = False
        self._log_rollout(seed, truncated)
        return steps

    def _log_rollout(self, seed: int, truncated: int) -> None:
        self.logger.record("rollout/input_seed", seed)
        self.logger.record("rollout/truncated_episodes", truncated)
        if truncated:
            logger.warning("%d of %d episodes on input seed %d were truncated (max_rounds); "
                           "their returns are not bootstrapped", truncated,
                           self.input_driven_k, seed)
        # the next learn() step continues from a fresh episode, not the last one's end
        self._last_episode_starts = np.ones((1,), dtype=bool)

    def _fill_buffer(self, steps: list[dict[str, Any]]) -> Any:
        """A rollout buffer of exactly the collected steps, with input-driven advantages."""
        assert self.rollout_buffer_class is not None
        buffer = self.rollout_buffer_class(
            len(steps), self.observation_space, self.action_space, self.device,
            gamma=self.gamma, gae_lambda=self.gae_lambda, n_envs=1,
            **(self.rollout_buffer_kwargs or {}))
        for step in steps:
            buffer.add(step["obs"], step["action"], step["reward"], np.array([step["start"]]),
                       step["value"], step["log_prob"], action_masks=step["mask"])
        returns, baselines, advantages = input_driven_advantages(
            np.array([s["reward"][0] for s in steps]), np.array([s["episode"] for s in steps]),
            np.array([s["time_s"] for s in steps]), self.gamma)
        buffer.returns[:, 0] = returns
        buffer.advantages[:, 0] = advantages
        self.logger.record("rollout/input_baseline_mean", float(np.mean(baselines)))
        return buffer


def make_input_driven_model(env: Any, hyperparams: Mapping[str, Any], seed: int | None, k: int,
                            *, device: str = "cpu", verbose: int = 0) -> InputDrivenMaskablePPO:
    """A fresh :class:`InputDrivenMaskablePPO` (hyperparameters as
    :func:`agents.sb3.factory.make_model` takes them).

    Raises:
        ConfigError: for K < 2 or a hyperparameter MaskablePPO does not accept.
    """
    kwargs = validate_hyperparams("maskable_ppo", hyperparams)
    policy = resolve_policy("maskable_ppo", hyperparams.get("policy", "MultiInputPolicy"))
    return InputDrivenMaskablePPO(policy, env, input_driven_k=k, seed=seed, device=device,
                                  verbose=verbose, **kwargs)


def check_input_driven(k: int, algo: str, n_envs: int, vec_env: str = "auto") -> None:
    """Refuse settings input-driven training cannot run.

    Raises:
        ConfigError: for K == 1 or K < 0, an algorithm other than ``maskable_ppo``,
            ``n_envs != 1`` or a vector env other than an in-process ``DummyVecEnv`` (``auto``
            or ``dummy``: the K episodes step its one env directly).
    """
    if k == 0:
        return
    if k < 2:
        raise ConfigError(f"--input-driven K needs K >= 2 episodes per rollout, got {k}")
    if algo != "maskable_ppo":
        raise ConfigError(f"--input-driven needs --algo maskable_ppo, got {algo!r}")
    if n_envs != 1:
        raise ConfigError(f"--input-driven runs its K episodes on one env: use --n-envs 1, "
                          f"got {n_envs}")
    if vec_env not in ("auto", "dummy"):
        raise ConfigError("--input-driven steps one in-process env directly: use --vec-env "
                          f"dummy (or auto), not {vec_env}")


def load_or_make_input_driven(settings: Any, config: Mapping[str, Any], venv: VecEnv,
                              run_dir: Path) -> tuple[InputDrivenMaskablePPO, int, int]:
    """:func:`agents.sb3.training.load_or_make_model` for ``settings.input_driven`` > 0: the
    model, its timesteps so far and the seed it uses now (a resume trains on with the given K)."""
    if not settings.resume:
        model = make_input_driven_model(venv, config["hyperparams"], settings.seed,
                                        settings.input_driven, device=settings.device,
                                        verbose=settings.verbose)
        return model, 0, settings.seed
    model = load_model(run_dir / "model.zip", "maskable_ppo", model_class=InputDrivenMaskablePPO,
                       env=venv, device=settings.device, trust_model=settings.trust_model,
                       hyperparams=config["hyperparams"], for_training=True)
    model.input_driven_k = int(settings.input_driven)
    start = int(model.num_timesteps)
    model.set_random_seed(settings.seed + start)
    return model, start, settings.seed + start
