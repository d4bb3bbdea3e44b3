"""The env's arguments as one typed, frozen config object that the evaluation introspects.

:func:`env_config_class` builds the dataclass ``EnvConfig`` from the signature of
:class:`palgym.envs.cluster_env.ClusterEnv` (one field per keyword, with its annotation and
default), so the names below are checked against the env itself instead of repeated as
strings: :func:`env_config` turns a contender's env kwargs into an ``EnvConfig`` and names
any unknown one, with where it came from (e.g. a model's ``config.yml``).

Roles of the arguments in a comparison:

- :data:`EPISODE_KWARGS` shape the episodes, so every contender shares them (the first learned
  agent's, then the command line's);
- :data:`EPISODE_SOURCE_KWARGS` are the episode source, which evaluation replaces (the traces
  are the evaluation's);
- :data:`HEURISTIC_KWARGS` are the dynamics a heuristic needs (``sticky``, ``class_reorder``;
  :func:`agents.base.heuristic_env_kwargs`): they do not change the episode.
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


@functools.cache
def env_config_class() -> type:
    """The frozen, keyword-only dataclass ``EnvConfig``: one field per argument of the env's
    constructor, with its annotation (a string) and its default (every argument has one)."""
    from palgym.envs.cluster_env import ClusterEnv

    fields = []
    for parameter in list(inspect.signature(ClusterEnv.__init__).parameters.values())[1:]:
        default = parameter.default
        spec = (dataclasses.field(default_factory=lambda d=default: type(d)(d))
                if isinstance(default, (list, dict, set)) else dataclasses.field(default=default))
        fields.append((parameter.name, parameter.annotation, spec))
    return dataclasses.make_dataclass("EnvConfig", fields, frozen=True, kw_only=True)


def env_argument_names() -> tuple[str, ...]:
    """The env's argument names, in signature order."""
    return tuple(f.name for f in dataclasses.fields(env_config_class()))


def env_config(kwargs: Mapping[str, Any], where: str) -> Any:
    """``kwargs`` as an ``EnvConfig`` (the env's defaults for the rest).

    Args:
        kwargs: env kwargs.
        where: where they come from, for the error (e.g. ``"runs/x/config.yml env_kwargs"``).

    Returns:
        The config (its values are not validated here: the env checks them).

    Raises:
        ConfigError: naming each kwarg that is not an argument of the env, and the known ones.
    """
    names = env_argument_names()
    unknown = [key for key in kwargs if key not in names]
    if unknown:
        raise ConfigError(f"{where}: {', '.join(map(repr, unknown))}: not an argument of the "
                          f"env, which takes {', '.join(names)}")
    return env_config_class()(**dict(kwargs))


def episode_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`EPISODE_KWARGS` among ``kwargs``, in their order."""
    return {key: value for key, value in kwargs.items() if key in EPISODE_KWARGS}
