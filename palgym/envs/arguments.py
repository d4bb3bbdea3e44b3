"""Checks and conversions of the env's constructor arguments."""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from palgym.errors import ConfigError
from palgym.policies.belief import BeliefMode, BeliefOptions, belief_options
from palgym.sim.config import SimConfig, preset


def check_choice(name: str, value: object, allowed: Sequence[object]) -> None:
    """Raise ConfigError naming ``name`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {list(allowed)}, got {value!r}")


def check_positive(name: str, value: object) -> None:
    """Raise ConfigError naming ``name`` and ``value`` unless it is a finite number > 0."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value <= 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")


def check_window(window: object) -> int | None:
    """``window`` if it is None (whole traces) or an integer >= 1 (jobs per episode).

    Raises:
        ConfigError: naming ``window``, the valid values and the value.
    """
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 1:
        raise ConfigError(f"window must be None (whole traces) or an integer >= 1 (jobs per "
                          f"episode), got {window!r}")
    return int(window)


def make_config(
    preset_name: str,
    locality_penalty: float | None,
    round_duration_s: float | None,
    max_rounds: int,
) -> SimConfig:
    """The preset with the env's overrides (only those given)."""
    overrides: dict[str, Any] = {"max_rounds": max_rounds}
    if locality_penalty is not None:
        overrides["locality_penalty"] = locality_penalty
    if round_duration_s is not None:
        overrides["round_duration_s"] = round_duration_s
    return preset(preset_name, **overrides)


def copy_rng(rng: Any) -> Any:
    """An independent copy of a ``random.Random`` or numpy Generator (same future draws)."""
    return copy.deepcopy(rng)


BeliefSpec = str | BeliefMode | BeliefOptions | Mapping[str, Any]
"""The env's ``belief``: a mode name, or :class:`~palgym.policies.belief.BeliefOptions` (or
a mapping of its fields, e.g. ``{"mode": "online", "alpha": 0.5}`` from
``--env-kwargs 'belief:{mode: online, alpha: 0.5}'``)."""


def parse_belief(value: BeliefSpec) -> BeliefOptions:
    """``value`` as :class:`~palgym.policies.belief.BeliefOptions`.

    Raises:
        ConfigError: naming an unknown mode, an unknown option or an out-of-range value.
    """
    if not isinstance(value, Mapping):
        return belief_options(value)
    known = tuple(f.name for f in dataclasses.fields(BeliefOptions))
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ConfigError(f"belief option {unknown[0]!r} is not one of {list(known)}")
    return BeliefOptions(**value)


def plain_belief(options: BeliefOptions) -> str | dict[str, Any]:
    """``options`` as its mode name when the other options are the defaults, else a dict of
    plain values (what ``parse_belief`` reads back)."""
    if options == BeliefOptions(options.mode):
        return options.mode.value
    return {**dataclasses.asdict(options), "mode": options.mode.value,
            "solver": options.solver.value}
