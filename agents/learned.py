"""Learned agents: a saved SB3 / sb3-contrib model behind the agent protocol.

:func:`load_agent` takes a ``model.zip`` (or a run folder holding one) and finds its algorithm
from the ``config.yml`` that ``train.py`` writes next to it or, failing that, from the zip
itself (the module of the saved policy class, then PPO's own attributes).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from agents.base import State
from agents.factory import MASKED_ALGOS, algo_class
from agents.hyperparams import ALGO_NAMES
from palgym.errors import ConfigError

MODEL_FILE = "model.zip"
CONFIG_FILE = "config.yml"


class LearnedAgent:
    """A trained model as an agent (see :class:`agents.base.Agent`).

    Args:
        model: an SB3 / sb3-contrib model (``predict`` with SB3's signature).
        algo: its algorithm name; ``maskable_ppo`` models receive the action masks, ``ppo`` and
            ``dqn`` ignore them (the env's fallback replaces their invalid actions).
        name: label for result tables (default: the algorithm).
    """

    def __init__(self, model: Any, algo: str, name: str | None = None) -> None:
        self.model = model
        self.algo = algo
        self.name = name or algo
        self.uses_masks = algo in MASKED_ALGOS

    def __repr__(self) -> str:
        return f"LearnedAgent({self.name!r}, algo={self.algo!r})"

    def bind(self, env: gym.Env[Any, Any]) -> LearnedAgent:
        """Nothing to attach (the model acts from observations); returns self."""
        return self

    def predict(
        self,
        observation: Any,
        state: State = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, State]:
        """The model's action (SB3 semantics); masks are passed to masked models only.

        Args:
            observation: one observation (or a batch, as SB3 accepts).
            state: recurrent state (None for these feed-forward policies).
            episode_start: SB3's episode-start flags.
            deterministic: greedy action if True.
            action_masks: bool (K*M+1,) or (n_envs, K*M+1); used by ``maskable_ppo`` only.

        Returns:
            ``(action, state)`` as the model returns them.
        """
        if self.uses_masks:
            return self.model.predict(  # type: ignore[no-any-return]
                observation, state, episode_start, deterministic, action_masks=action_masks
            )
        return self.model.predict(  # type: ignore[no-any-return]
            observation, state, episode_start, deterministic
        )


def model_path(path: str | Path) -> Path:
    """``path`` itself, or ``path/model.zip`` for a run folder.

    Raises:
        ConfigError: if no model file exists there.
    """
    candidate = Path(path)
    if candidate.is_dir():
        candidate = candidate / MODEL_FILE
    if not candidate.is_file():
        raise ConfigError(f"no saved model at {str(path)!r} (expected a .zip or a run folder)")
    return candidate


def detect_algo(path: str | Path) -> str:
    """The algorithm of a saved model: from ``config.yml`` beside it, else from the zip.

    Raises:
        ConfigError: if neither tells (not an SB3 zip, or an unsupported algorithm).
    """
    zip_path = model_path(path)
    config = zip_path.parent / CONFIG_FILE
    if config.is_file():
        algo = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("algo")
        if algo in ALGO_NAMES:
            return str(algo)
    try:
        with zipfile.ZipFile(zip_path) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{zip_path} is not a stable-baselines3 model zip: {exc}") from None
    module = str(data.get("policy_class", {}).get("__module__", ""))
    if module.startswith("sb3_contrib.common.maskable"):
        return "maskable_ppo"
    if module.startswith("stable_baselines3.dqn"):
        return "dqn"
    if module.startswith("stable_baselines3.common.policies") and "clip_range" in data:
        return "ppo"
    raise ConfigError(f"{zip_path}: unsupported model (policy module {module!r})")


def load_agent(
    path: str | Path, algo: str | None = None, *, device: str = "cpu", name: str | None = None
) -> LearnedAgent:
    """Load a saved model as a :class:`LearnedAgent`.

    Args:
        path: ``model.zip`` (or any SB3 zip) or a run folder holding ``model.zip``.
        algo: its algorithm; detected with :func:`detect_algo` when None.
        device: torch device to load onto.
        name: label for result tables (default: the zip's path).

    Returns:
        The agent.

    Raises:
        ConfigError: for a missing or unrecognised model file.
    """
    zip_path = model_path(path)
    algo = algo or detect_algo(zip_path)
    model = algo_class(algo).load(zip_path, device=device)
    return LearnedAgent(model, algo, name=name or str(zip_path))
