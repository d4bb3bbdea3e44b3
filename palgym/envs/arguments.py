"""Checks and conversions of the env's constructor arguments."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

from palgym.errors import ConfigError
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
