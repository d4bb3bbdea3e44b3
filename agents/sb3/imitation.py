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

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import palgym  # noqa: F401  (registers the env ids)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Demonstrations:
    """A heuristic's decisions on complete episodes.

    Attributes:
        observations: key -> float32 (D, ...) observations.
        actions: int64 (D,) the heuristic's actions.
        masks: bool (D, A) the action masks.
        equivalent: bool (D, A) the valid actions the policy cannot tell from the demonstrated
            one (same window slot, identical candidate feature row; see
            :func:`equivalent_actions`).
        returns: float32 (D,) discounted return-to-go from each decision.
        num_episodes: complete episodes recorded.
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray
    masks: np.ndarray
    equivalent: np.ndarray
    returns: np.ndarray
    num_episodes: int


def check_imitation(algo: str, env_id: str) -> None:
    """Refuse ``--imitate`` where it cannot run: another algorithm than ``maskable_ppo``, or
    the selector env (its observation has no candidates to clone a placement from).

    Raises:
        ConfigError: naming the reason.
    """
    from agents.ids import gym_id
    from agents.sb3.factory import MASKED_ALGOS
    from palgym.envs.layouts import is_selector
    from palgym.errors import ConfigError

    if algo not in MASKED_ALGOS:
        raise ConfigError("--imitate needs --algo maskable_ppo")
    if is_selector(gym_id(env_id)):
        raise ConfigError(f"--imitate clones a placement heuristic's candidates: not for "
                          f"{env_id} (its actions are the rules themselves)")


def collect_demonstrations(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    heuristic: str,
    num_decisions: int,
    gamma: float,
    seed: int,
    explore: float = 0.0,
) -> Demonstrations:
    """Record ``heuristic``'s action (``env.heuristic_action``) in every visited state until at
    least ``num_decisions`` decisions and the episode in progress have been recorded.

    With ``explore`` > 0 the env is stepped with a uniformly drawn valid action instead of the
    heuristic's with that probability (the label stays the heuristic's): the demonstrations
    then cover the fragmented states a learner reaches after its own mistakes, which the
    heuristic's trajectories never visit (the compounding-error problem of behaviour cloning;
    Source: Ross et al., "A Reduction of Imitation Learning and Structured Prediction to
    No-Regret Online Learning" (DAgger), AISTATS 2011; Laskey et al., "DART: Noise Injection for
    Robust Imitation Learning", CoRL 2017).

    Args:
        env_id: a palgym env id. env_kwargs: its kwargs (those of the training envs).
        heuristic: a placement name the env can run (e.g. ``pal``).
        num_decisions: D, at least this many decisions (complete episodes only).
        gamma: discount of the returns (the model's).
        seed: seed of the first reset (the env's RNG draws the following episodes) and of
            the exploration draws.
        explore: probability of stepping with a random valid action.

    Raises:
        ConfigError: if the env's configuration contradicts the heuristic.
    """
    env = gym.make(env_id, **dict(env_kwargs)).unwrapped
    rng = np.random.default_rng(seed)
    observations: dict[str, list[np.ndarray]] = {}
    actions: list[int] = []
    masks: list[np.ndarray] = []
    equivalent: list[np.ndarray] = []
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
        equivalent.append(equivalent_actions(obs["candidates"], masks[-1], action,
                                             env.observation_shapes["candidates"]))
        if explore > 0 and rng.random() < explore:
            valid = np.flatnonzero(masks[-1])
            action = int(valid[rng.integers(valid.size)])
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
        np.asarray(actions, dtype=np.int64), np.stack(masks), np.stack(equivalent),
        np.asarray(returns, dtype=np.float32), episodes,
    )


def equivalent_actions(
    candidates: np.ndarray, mask: np.ndarray, action: int, shape: tuple[int, ...]
) -> np.ndarray:
    """bool (A,): valid actions of the same window slot whose candidate feature row equals the
    demonstrated action's (e.g. the best-factor set repeated at several tiers, or the same
    within-node choice on two equal nodes): the policy cannot tell them apart, so cloning
    maximises their total probability. "End round" (and RESERVE) is equivalent only to itself.

    Args:
        candidates: float32 (K * M * F_c,) the observation's candidate rows.
        mask: bool (A,) valid actions, A = K * M + 1 (K * M + 2 with RESERVE).
        action: the demonstrated action.
        shape: (K, M, F_c).
    """
    out = np.zeros(mask.size, dtype=bool)
    slots, per_slot, _ = shape
    if action >= slots * per_slot:
        out[action] = True
        return out
    rows = candidates.reshape(shape)
    slot, candidate = divmod(action, per_slot)
    same = (rows[slot] == rows[slot, candidate]).all(axis=1)
    start = slot * per_slot
    out[start : start + per_slot] = same & mask[start : start + per_slot]
    out[action] = True
    return out


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

    Loss per minibatch: the masked cross-entropy of the demonstrated action's equivalence
    class (``-log`` of the total probability of :attr:`Demonstrations.equivalent`) plus
    ``model.vf_coef`` x the squared error of the values against the returns; Adam, gradients
    clipped at ``model.max_grad_norm``, minibatches in a seeded order.

    Returns:
        ``accuracy`` (the greedy masked action is equivalent to the demonstrated one, on all
        of ``demos``), ``cross_entropy`` and ``value_mse`` (means over the last epoch).
    """
    import torch as th

    policy = model.policy
    policy.set_training_mode(True)
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
    generator = th.Generator().manual_seed(seed)
    obs = {key: th.as_tensor(value) for key, value in demos.observations.items()}
    actions = th.as_tensor(demos.actions)
    masks = th.as_tensor(demos.masks)
    equivalent = th.as_tensor(demos.equivalent)
    returns = th.as_tensor(demos.returns)
    size = actions.shape[0]
    cross_entropy = value_mse = 0.0
    for _ in range(epochs):
        order = th.randperm(size, generator=generator)
        totals = np.zeros(2)
        for start in range(0, size, batch_size):
            index = order[start : start + batch_size]
            batch = {key: value[index] for key, value in obs.items()}
            values, _, _ = policy.evaluate_actions(batch, actions[index],
                                                   action_masks=masks[index])
            log_probs = policy.get_distribution(batch, action_masks=masks[index]) \
                .distribution.logits  # masked, normalised log-probabilities
            chosen = log_probs.masked_fill(~equivalent[index], -th.inf)
            actor = -th.logsumexp(chosen, dim=1).mean()
            critic = th.nn.functional.mse_loss(values.flatten(), returns[index])
            loss = actor + model.vf_coef * critic
            optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            optimizer.step()
            totals += (actor.item() * index.numel(), critic.item() * index.numel())
        cross_entropy, value_mse = totals / size
    policy.set_training_mode(False)
    return {"accuracy": greedy_accuracy(policy, obs, equivalent, masks),
            "cross_entropy": float(cross_entropy), "value_mse": float(value_mse)}


def greedy_accuracy(policy: Any, obs: Mapping[str, Any], equivalent: Any, masks: Any) -> float:
    """Fraction of decisions whose greedy masked action is equivalent to the demonstrated one
    (``equivalent``: bool (D, A))."""
    import torch as th

    hits = 0
    with th.no_grad():
        for start in range(0, equivalent.shape[0], 1024):
            part = slice(start, start + 1024)
            distribution = policy.get_distribution({k: v[part] for k, v in obs.items()},
                                                   action_masks=masks[part])
            greedy = distribution.get_actions(deterministic=True)
            hits += int(equivalent[part].gather(1, greedy[:, None]).sum())
    return hits / max(1, equivalent.shape[0])


def clone_heuristic(  # noqa: PLR0913 - the run's imitation settings
    model: Any,
    env_id: str,
    env_kwargs: Mapping[str, Any],
    heuristic: str,
    num_decisions: int,
    epochs: int,
    explore: float,
    seed: int,
) -> dict[str, Any]:
    """Record ``heuristic`` (:func:`collect_demonstrations`) and fit the model to it
    (:func:`pretrain`).

    Returns:
        What ``imitation.yml`` records: the settings, the fit's statistics and the wall time.
    """
    started = time.perf_counter()
    demos = collect_demonstrations(env_id, env_kwargs, heuristic, num_decisions, model.gamma,
                                   seed, explore)
    stats = pretrain(model, demos, epochs, seed=seed)
    logger.info("imitated %s: %d decisions (%d episodes), greedy accuracy %.3f",
                heuristic, demos.actions.size, demos.num_episodes, stats["accuracy"])
    return {"heuristic": heuristic, "explore": explore, "decisions": int(demos.actions.size),
            "episodes": demos.num_episodes, "epochs": epochs, **stats,
            "wall_time_s": round(time.perf_counter() - started, 1)}
