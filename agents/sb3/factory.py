"""SB3 / sb3-contrib model factory: ``maskable_ppo`` (default), ``ppo`` and ``dqn``.

``maskable_ppo`` is sb3-contrib's MaskablePPO: it reads the env's ``action_masks()`` (also
through ``SubprocVecEnv``) and never takes an invalid action. ``ppo`` and ``dqn`` are
stable-baselines3's; they see no masks, so an invalid action is replaced by the env's fallback
policy and counted (``info["num_invalid_actions"]``).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from agents.sb3.hyperparams import ALGO_NAMES, check_values, model_kwargs
from palgym.errors import ConfigError

DEFAULT_ALGO = "maskable_ppo"
DEFAULT_POLICY = "MultiInputPolicy"
ALGO_CLASSES: dict[str, tuple[str, str]] = {
    "maskable_ppo": ("sb3_contrib", "MaskablePPO"),
    "ppo": ("stable_baselines3", "PPO"),
    "dqn": ("stable_baselines3", "DQN"),
}
MASKED_ALGOS = frozenset({"maskable_ppo"})
POLICY_CLASSES: dict[str, tuple[str, str]] = {
    "CandidateScoringPolicy": ("agents.sb3.policies", "CandidateScoringPolicy"),
}
"""Policy names of this package (beside SB3's own aliases such as ``MultiInputPolicy``)."""


def algo_class(algo: str) -> Any:
    """The model class of ``algo`` (imported on demand).

    Raises:
        ConfigError: for an unknown algorithm, or when its library is not installed.
    """
    if algo not in ALGO_CLASSES:
        raise ConfigError(f"algo must be one of {list(ALGO_NAMES)}, got {algo!r}")
    module_name, class_name = ALGO_CLASSES[algo]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{algo} needs {module_name}: install the training extra (pip install -e '.[train]')"
        ) from exc
    return getattr(module, class_name)


def make_model(
    algo: str,
    env: Any,
    hyperparams: Mapping[str, Any],
    seed: int | None,
    tensorboard_log: str | None = None,
    *,
    device: str = "cpu",
    verbose: int = 0,
) -> Any:
    """Build a fresh model of ``algo`` on ``env``.

    Args:
        algo: ``maskable_ppo``, ``ppo`` or ``dqn``.
        env: a Gymnasium env or SB3 VecEnv.
        hyperparams: merged hyperparameters (:func:`agents.sb3.hyperparams.load_hyperparams`
            plus overrides); ``policy`` defaults to ``MultiInputPolicy``; ``n_timesteps`` and
            ``n_envs`` are ignored here.
        seed: seed of the model's RNGs (torch, numpy, random, action space); None leaves them.
        tensorboard_log: TensorBoard folder, or None for none.
        device: torch device (``--device auto`` is resolved before: :mod:`agents.sb3.device`).
        verbose: SB3 verbosity.

    Returns:
        The model (an instance of :func:`algo_class`).

    Raises:
        ConfigError: for an unknown algorithm or a hyperparameter the class does not accept.
    """
    kwargs = validate_hyperparams(algo, hyperparams)
    policy = resolve_policy(algo, hyperparams.get("policy", DEFAULT_POLICY))
    return algo_class(algo)(policy, env, seed=seed, tensorboard_log=tensorboard_log,
                            device=device, verbose=verbose, **kwargs)


def resolve_policy(algo: str, policy: Any) -> Any:
    """The policy class for a name of :data:`POLICY_CLASSES`, else ``policy`` unchanged.

    Raises:
        ConfigError: if a package policy is asked of an algorithm it does not support.
    """
    if not isinstance(policy, str) or policy not in POLICY_CLASSES:
        return policy
    if algo not in MASKED_ALGOS:
        raise ConfigError(f"{policy} is a MaskablePPO policy: use --algo maskable_ppo")
    module_name, class_name = POLICY_CLASSES[policy]
    return getattr(importlib.import_module(module_name), class_name)


def validate_hyperparams(algo: str, hyperparams: Mapping[str, Any]) -> dict[str, Any]:
    """The model kwargs of ``hyperparams``, checked against the class's signature.

    Args:
        algo: algorithm name.
        hyperparams: merged hyperparameters.

    Returns:
        The kwargs (:func:`agents.sb3.hyperparams.model_kwargs`).

    Raises:
        ConfigError: for an unknown algorithm, a hyperparameter the class does not accept, a
            value out of its range (:func:`agents.sb3.hyperparams.check_values`), or a malformed
            ``policy_kwargs`` / schedule.
    """
    cls = algo_class(algo)
    check_values(algo, hyperparams)
    kwargs = model_kwargs(hyperparams)
    reserved = {"policy", "env", "seed", "tensorboard_log", "device", "verbose"}
    accepted = set(inspect.signature(cls.__init__).parameters) - reserved
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ConfigError(f"{algo} does not accept hyperparameter(s) {unknown}")
    return kwargs
