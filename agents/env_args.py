"""The env's arguments as one typed, frozen config object that the evaluation introspects.

:func:`env_config_class` builds the dataclass ``EnvConfig`` from the signature of
:class:`palgym.envs.cluster_env.ClusterEnv` (one field per keyword, with its annotation and
default; ``SelectorEnvConfig``, of the selector env :class:`palgym.envs.selector.SelectorEnv`,
adds ``rules`` and ``granularity``), so the names below are checked against the env itself
instead of repeated as strings: :func:`env_config` turns a contender's env kwargs into an
``EnvConfig`` and names any unknown one, with where it came from (e.g. a model's
``config.yml``).

Roles of the arguments in a comparison:

- :data:`EPISODE_KWARGS` shape the episodes, so every contender shares them (the first learned
  agent's, then the command line's);
- :data:`EPISODE_SOURCE_KWARGS` are the episode source, which evaluation replaces (the traces
  are the evaluation's);
- :data:`HEURISTIC_KWARGS` are the dynamics a heuristic needs (``sticky``, ``class_reorder``;
  :func:`agents.base.heuristic_env_kwargs`): they do not change the episode.

:func:`changed_kwargs` and :func:`format_kwargs` say what a contender runs with besides its env
id's defaults (:func:`id_defaults`), as ``evaluate.py`` prints it for each learned agent.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Mapping
from typing import Any

from palgym.errors import ConfigError

EPISODE_KWARGS: tuple[str, ...] = (
    "preset", "cluster", "queue_order", "locality_penalty", "round_duration_s", "max_rounds",
    "profile", "variability_data", "window", "belief",
)
"""Env kwargs that shape the episodes (shared by every contender)."""
EPISODE_SOURCE_KWARGS: tuple[str, ...] = ("trace", "window")
"""Env kwargs of a training run that evaluation replaces (the traces are the evaluation's)."""
HEURISTIC_KWARGS: tuple[str, ...] = ("sticky", "class_reorder")
"""Env kwargs a heuristic sets for itself (its dynamics, not the episode)."""


def _parameters(selector: bool) -> list[inspect.Parameter]:
    """The env's keyword arguments: :class:`~palgym.envs.cluster_env.ClusterEnv`'s, then (for
    the selector env) :class:`~palgym.envs.selector.SelectorEnv`'s own (``rules``,
    ``granularity``) without the base arguments it sets itself."""
    from palgym.envs.cluster_env import ClusterEnv

    base = list(inspect.signature(ClusterEnv.__init__).parameters.values())[1:]
    if not selector:
        return base
    from palgym.envs.selector import NOT_SELECTOR_ARGUMENTS, SelectorEnv

    own = [p for p in inspect.signature(SelectorEnv.__init__).parameters.values()
           if p.kind is inspect.Parameter.KEYWORD_ONLY]
    return [p for p in base if p.name not in NOT_SELECTOR_ARGUMENTS] + own


@functools.cache
def env_config_class(selector: bool = False) -> type:
    """The frozen, keyword-only dataclass ``EnvConfig`` (``SelectorEnvConfig`` for the
    selector env): one field per argument of the env's constructor, with its annotation (a
    string) and its default (every argument has one)."""
    fields = []
    for parameter in _parameters(selector):
        default = parameter.default
        spec = (dataclasses.field(default_factory=lambda d=default: type(d)(d))
                if isinstance(default, (list, dict, set)) else dataclasses.field(default=default))
        fields.append((parameter.name, parameter.annotation, spec))
    name = "SelectorEnvConfig" if selector else "EnvConfig"
    return dataclasses.make_dataclass(name, fields, frozen=True, kw_only=True)


def env_argument_names(selector: bool = False) -> tuple[str, ...]:
    """The env's argument names, in signature order (``selector``: the selector env's)."""
    return tuple(f.name for f in dataclasses.fields(env_config_class(selector)))


def env_config(kwargs: Mapping[str, Any], where: str, env_id: str | None = None) -> Any:
    """``kwargs`` as an ``EnvConfig`` (the env's defaults for the rest).

    Args:
        kwargs: env kwargs.
        where: where they come from, for the error (e.g. ``"runs/x/config.yml env_kwargs"``).
        env_id: the env id they are for (the selector env takes its own arguments); None: a
            :class:`~palgym.envs.cluster_env.ClusterEnv` id.

    Returns:
        The config (its values are not validated here: the env checks them).

    Raises:
        ConfigError: naming each kwarg that is not an argument of the env, and the known ones.
    """
    from palgym.envs.layouts import is_selector

    selector = env_id is not None and is_selector(env_id)
    names = env_argument_names(selector)
    unknown = [key for key in kwargs if key not in names]
    if unknown:
        raise ConfigError(f"{where}: {', '.join(map(repr, unknown))}: not an argument of the "
                          f"env, which takes {', '.join(names)}")
    return env_config_class(selector)(**dict(kwargs))


def episode_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`EPISODE_KWARGS` among ``kwargs``, in their order."""
    return {key: value for key, value in kwargs.items() if key in EPISODE_KWARGS}


def id_defaults(env_id: str) -> dict[str, Any]:
    """The kwargs an env made by ``gym.make(env_id)`` gets when none is given: the constructor's
    defaults (:func:`env_config_class`), then those the id registers (``task``; the ``-v1``
    ids' ``max_tiers`` and ``max_gpus_per_node``, ``palgym/__init__.py``).

    Args:
        env_id: a palgym env id, with or without its ``palgym:`` prefix.
    """
    from gymnasium.envs.registration import registry

    from agents.ids import canonical_env_id
    from palgym.envs.layouts import is_selector

    config = env_config_class(is_selector(env_id))()
    defaults = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    spec = registry.get(canonical_env_id(env_id))
    return {**defaults, **(dict(spec.kwargs) if spec is not None else {})}


def changed_kwargs(env_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The items of ``kwargs`` whose value differs from :func:`id_defaults` (or that are not
    an argument of the env), in sorted key order."""
    defaults = id_defaults(env_id)
    return {key: kwargs[key] for key in sorted(kwargs)
            if key not in defaults or kwargs[key] != defaults[key]}


def plain_value(value: Any) -> str:
    """``value`` as ``--env-kwargs KEY:VALUE`` writes it (YAML): ``true`` / ``false``,
    ``null``, mappings and lists in flow style, anything else as ``str``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {plain_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(plain_value(v) for v in value) + "]"
    return str(value)


def format_kwargs(kwargs: Mapping[str, Any]) -> str:
    """``KEY:VALUE`` items (:func:`plain_value`) joined by spaces, or ``none``."""
    return " ".join(f"{key}:{plain_value(value)}" for key, value in kwargs.items()) or "none"
