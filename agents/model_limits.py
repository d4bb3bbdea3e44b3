"""Ceilings on what a model zip may hold, derived from what a model can be: checked before
anything in the zip is inflated or parsed (:func:`read_bounded_zip`).

A stable-baselines3 zip holds ``data`` (JSON: the spaces, whose bounds are two arrays of the
observation's size, the last observation of each env, schedules and settings), the weights
``policy.pth`` (4 bytes per float32 parameter), ``policy.optimizer.pth`` (Adam: two moments per
parameter, 8 bytes), ``pytorch_variables.pth`` and two short text entries. The ceilings
(:func:`entry_ceiling`):

- ``data``: 4 MiB + 1 KiB per observation element when the env is known (a float32 element
  costs about 5.4 bytes per array in base64 of a pickle: the bounds and up to 150 envs' last
  observations), else 64 MiB;
- ``policy.pth``: 1 MiB + 4 bytes x :data:`MAX_POLICY_PARAMETERS`;
- ``policy.optimizer.pth``: 1 MiB + 8 bytes x :data:`MAX_POLICY_PARAMETERS`;
- ``pytorch_variables.pth``: 1 MiB; ``_stable_baselines3_version``, ``system_info.txt``:
  64 KiB; any other entry: 1 MiB.

Each is checked from the size the zip declares and again while streaming the entry
(:func:`palgym.io.bounded.check_zip_entries`), since a declared size can lie; the file and the
entries in all may not pass the sum of the four largest ceilings + 4 MiB, and a zip has at
most 64 entries. ``PALGYM_ALLOW_LARGE_MODEL=1`` multiplies every ceiling
by :data:`LARGE_FACTOR`, for a model larger than these on purpose.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from palgym.bench.roots import from_environment
from palgym.errors import ConfigError
from palgym.io.bounded import InflateLimitError, check_zip_entries
from palgym.io.strict_json import StrictJsonError, read_bounded

MIB = 1 << 20
MAX_POLICY_PARAMETERS = 4_000_000
"""The most parameters a policy may have (the committed models have about 100,000)."""
LARGE_FACTOR = 64
"""What ``PALGYM_ALLOW_LARGE_MODEL=1`` multiplies the ceilings by."""
ALLOW_LARGE_VARIABLE = "PALGYM_ALLOW_LARGE_MODEL"
"""The environment variable that lifts the ceilings (set to ``1``)."""
LIFT = f"{ALLOW_LARGE_VARIABLE}=1 lifts the ceilings {LARGE_FACTOR}x, for a trusted large model"


def observation_size(env: Any) -> int | None:
    """The number of elements of ``env``'s observation (None without an env or a space)."""
    space = getattr(env, "observation_space", None)
    if space is None:
        return None
    from gymnasium.spaces.utils import flatdim

    try:
        return int(flatdim(space))
    except (NotImplementedError, TypeError, ValueError):
        return None


def entry_ceiling(observation: int | None, scale: int = 1) -> Callable[[str], int]:
    """``ceiling(name)`` in bytes of each entry (module docstring), times ``scale``."""
    fixed = {"policy.pth": MIB + 4 * MAX_POLICY_PARAMETERS,
             "policy.optimizer.pth": MIB + 8 * MAX_POLICY_PARAMETERS,
             "pytorch_variables.pth": MIB, "_stable_baselines3_version": 64 << 10,
             "system_info.txt": 64 << 10}
    data = 64 * MIB if observation is None else 4 * MIB + 1024 * observation

    def ceiling(name: str) -> int:
        return scale * (data if name == "data" else fixed.get(name, MIB))

    return ceiling


def read_bounded_zip(path: str | Path, env: Any = None) -> bytes:
    """The bytes of a model zip whose entries all fit their ceilings (module docstring).

    Raises:
        ConfigError: naming the file, the entry, the ceiling and how to lift it.
        OSError: if the file cannot be read.
    """
    scale = LARGE_FACTOR if from_environment(None, ALLOW_LARGE_VARIABLE) == "1" else 1
    ceiling = entry_ceiling(observation_size(env), scale)
    total = sum(ceiling(name) for name in ("data", "policy.pth", "policy.optimizer.pth",
                                           "pytorch_variables.pth")) + 4 * MIB
    try:
        raw = read_bounded(path, total, "a model zip", LIFT)
        check_zip_entries(raw, ceiling, total)
    except StrictJsonError as exc:
        raise ConfigError(str(exc)) from None
    except InflateLimitError as exc:
        raise ConfigError(f"{path}: not loaded: {exc} (ceilings: agents/model_limits.py; "
                          f"{LIFT})") from None
    except zipfile.BadZipFile as exc:
        raise ConfigError(f"{path} is not a stable-baselines3 model zip: {exc}") from None
    return raw


__all__ = ["ALLOW_LARGE_VARIABLE", "LARGE_FACTOR", "MAX_POLICY_PARAMETERS", "entry_ceiling",
           "observation_size", "read_bounded_zip"]
