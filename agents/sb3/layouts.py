"""The env layout a model was trained on, against the env it is asked to act in.

``train.py`` records the layout hash of the training env (:func:`palgym.envs.layouts.env_layout`
of the env id and its ``env_kwargs``) as ``env_layout`` in the run's ``config.yml``; the
committed models' ``<name>.yml`` carry it too. A model is refused on an env whose layout
differs (:func:`check_layout` when a contender is loaded, :func:`check_env_layout` when a
learned agent is bound to an env), with one line naming both hashes and the command that
retrains it. A configuration without ``env_layout`` (a run older than the record) is not
checked; the env's observation-space check still applies.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.ids import canonical_env_id
from palgym.envs.layouts import env_layout, layout_hash
from palgym.errors import ConfigError

logger = logging.getLogger(__name__)

LAYOUT_KEY = "env_layout"
"""The ``config.yml`` key of the training env's layout hash."""
SOURCE_KWARGS = frozenset({"trace", "window"})
"""Env kwargs that choose the episodes, left out of the retraining command (its traces are the
run's choice)."""


def training_layout(env_id: str, env_kwargs: Mapping[str, Any]) -> str:
    """The layout hash of ``env_id`` (with or without its ``palgym:`` prefix: palgym, which
    registers the ids, is imported here) with ``env_kwargs`` (what ``config.yml`` records)."""
    return env_layout(env_id, env_kwargs)


def recorded_layout(config: Mapping[str, Any]) -> str | None:
    """The ``env_layout`` of a run configuration, or None if it records none.

    Raises:
        ConfigError: the value is not a string.
    """
    value = config.get(LAYOUT_KEY)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{LAYOUT_KEY} must be a layout hash string, got {value!r}")
    return value


def _kwarg(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def retrain_command(env_id: str, config: Mapping[str, Any]) -> str:
    """``python train.py --env ID --algo ALGO --env-kwargs K:V ...`` for a model's config
    (its env kwargs but the episode source; traces and budget as the run chooses)."""
    kwargs = [f"{k}:{_kwarg(v)}" for k, v in dict(config.get("env_kwargs") or {}).items()
              if k not in SOURCE_KWARGS]
    algo = config.get("algo", "maskable_ppo")
    command = f"python train.py --env {canonical_env_id(env_id)} --algo {algo}"
    return command + (" --env-kwargs " + " ".join(kwargs) if kwargs else "")


def layout_error(model: str | Path, recorded: str, actual: str, env_id: str,
                 config: Mapping[str, Any]) -> ConfigError:
    """The one-line refusal of a model trained on layout ``recorded`` for an env of layout
    ``actual``."""
    return ConfigError(
        f"{model} was trained on env layout {recorded}, but {env_id} here has layout {actual} "
        "(docs/ENV.md \"Version history\"): retrain it for this env: "
        f"{retrain_command(env_id, config)} ... (the full commands: "
        "agents/pretrained/README.md)")


def check_layout(model: str | Path, config: Mapping[str, Any], env_id: str,
                 env_kwargs: Mapping[str, Any]) -> None:
    """Refuse ``model`` (its run configuration ``config``) for ``env_id`` built with
    ``env_kwargs`` if the layouts differ; warn if ``config`` records none.

    Raises:
        ConfigError: the layouts differ (naming both hashes and the retraining command).
    """
    recorded = recorded_layout(config)
    if recorded is None:
        if config:
            logger.warning("%s: its run config records no %s (trained before layouts were "
                           "recorded): its env layout is not checked", model, LAYOUT_KEY)
        return
    actual = training_layout(env_id, env_kwargs)
    if actual != recorded:
        raise layout_error(model, recorded, actual, canonical_env_id(env_id), config)


def check_env_layout(model: str | Path, config: Mapping[str, Any] | None, env: Any) -> None:
    """Refuse to act in ``env`` (a palgym env, wrappers allowed) if its layout is not the one
    ``config`` (the model's run configuration) records; nothing when it records none.

    Raises:
        ConfigError: the layouts differ.
    """
    recorded = recorded_layout(config or {})
    if recorded is None:
        return
    actual = layout_hash(env)
    if actual != recorded:
        spec = getattr(env, "spec", None)
        env_id = canonical_env_id(spec.id) if spec is not None else str(
            (config or {}).get("env_id", "the env"))
        raise layout_error(model, recorded, actual, env_id, config or {})
