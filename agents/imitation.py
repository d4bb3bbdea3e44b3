"""Behaviour cloning of a heuristic as the warm start of a MaskablePPO policy.

PAL is a strong policy and the JCT reward is sparse in credit (one decision moves the sum of
completion times by little, late), so PPO from a random policy can settle far below PAL.
``train.py --imitate pal`` first records the heuristic's decisions on the training envs'
episodes (observation, mask, action and discounted return-to-go) and fits the policy to them:
the actor by masked cross-entropy, the critic by mean squared error on the returns. PPO then
starts from (about) the heuristic and improves on it with its own objective. Source: the
behaviour-cloning warm start of Silver et al., "Mastering the game of Go with deep neural
networks and tree search", Nature 2016 (supervised policy, then RL), and of Decima's
imitation pre-training (Mao et al., SIGCOMM 2019).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import palgym  # noqa: F401  (registers the env ids)


@dataclass(frozen=True)
class Demonstrations:
    """A heuristic's decisions on complete episodes.

    Attributes:
        observations: key -> float32 (D, ...) observations.
        actions: int64 (D,) the heuristic's actions.
        masks: bool (D, A) the action masks.
        returns: float32 (D,) discounted return-to-go from each decision.
        num_episodes: complete episodes recorded.
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray
    masks: np.ndarray
    returns: np.ndarray
    num_episodes: int


def collect_demonstrations(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    heuristic: str,
    num_decisions: int,
    gamma: float,
    seed: int,
) -> Demonstrations:
    """Step ``heuristic`` (``env.heuristic_action``) until at least ``num_decisions`` decisions
    and the episode in progress have been recorded.

    Args:
        env_id: a palgym env id. env_kwargs: its kwargs (those of the training envs).
        heuristic: a placement name the env can run (e.g. ``pal``).
        num_decisions: D, at least this many decisions (complete episodes only).
        gamma: discount of the returns (the model's).
        seed: seed of the first reset (the env's RNG draws the following episodes).

    Raises:
        ConfigError: if the env's configuration contradicts the heuristic.
    """
    env = gym.make(env_id, **dict(env_kwargs)).unwrapped
    observations: dict[str, list[np.ndarray]] = {}
    actions: list[int] = []
    masks: list[np.ndarray] = []
    returns: list[float] = []
    episodes = 0
    obs, _ = env.reset(seed=seed)
    rewards: list[float] = []
    while True:
        for key, value in obs.items():
            observations.setdefault(key, []).append(value)
        masks.append(env.action_masks())
        action = env.heuristic_action(heuristic)
        actions.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(float(reward))
        if terminated or truncated:
            returns.extend(discounted_returns(np.asarray(rewards), gamma).tolist())
            rewards, episodes = [], episodes + 1
            if len(actions) >= num_decisions:
                break
            obs, _ = env.reset()
    env.close()
    return Demonstrations(
        {key: np.stack(values) for key, values in observations.items()},
        np.asarray(actions, dtype=np.int64), np.stack(masks),
        np.asarray(returns, dtype=np.float32), episodes,
    )


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """float64 (T,): ``G_t = r_t + gamma G_{t+1}``, ``G_T = 0`` (a complete episode)."""
    out = np.empty(rewards.size, dtype=np.float64)
    running = 0.0
    for t in range(rewards.size - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def pretrain(
    model: Any,
    demos: Demonstrations,
    epochs: int,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Fit ``model.policy`` (a MaskablePPO policy) to ``demos``.

    Loss per minibatch: masked cross-entropy of the demonstrated actions plus
    ``model.vf_coef`` x the squared error of the values against the returns; Adam, gradients
    clipped at ``model.max_grad_norm``, minibatches in a seeded order.

    Returns:
        ``accuracy`` (the greedy masked action equals the demonstrated one, on all of
        ``demos``), ``cross_entropy`` and ``value_mse`` (means over the last epoch).
    """
    import torch as th

    policy = model.policy
    policy.set_training_mode(True)
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = th.Generator().manual_seed(seed)
    obs = {key: th.as_tensor(value) for key, value in demos.observations.items()}
    actions = th.as_tensor(demos.actions)
    masks = th.as_tensor(demos.masks)
    returns = th.as_tensor(demos.returns)
    size = actions.shape[0]
    cross_entropy = value_mse = 0.0
    for _ in range(epochs):
        order = th.randperm(size, generator=generator)
        totals = np.zeros(2)
        for start in range(0, size, batch_size):
            index = order[start : start + batch_size]
            values, log_prob, _ = policy.evaluate_actions(
                {key: value[index] for key, value in obs.items()}, actions[index],
                action_masks=masks[index],
            )
            actor = -log_prob.mean()
            critic = th.nn.functional.mse_loss(values.flatten(), returns[index])
            loss = actor + model.vf_coef * critic
            optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            optimizer.step()
            totals += (actor.item() * index.numel(), critic.item() * index.numel())
        cross_entropy, value_mse = totals / size
    policy.set_training_mode(False)
    return {"accuracy": greedy_accuracy(policy, obs, actions, masks),
            "cross_entropy": float(cross_entropy), "value_mse": float(value_mse)}


def greedy_accuracy(policy: Any, obs: Mapping[str, Any], actions: Any, masks: Any) -> float:
    """Fraction of decisions whose greedy masked action is the demonstrated one."""
    import torch as th

    hits = 0
    with th.no_grad():
        for start in range(0, actions.shape[0], 1024):
            part = slice(start, start + 1024)
            distribution = policy.get_distribution({k: v[part] for k, v in obs.items()},
                                                   action_masks=masks[part])
            greedy = distribution.get_actions(deterministic=True)
            hits += int((greedy == actions[part]).sum())
    return hits / max(1, actions.shape[0])
