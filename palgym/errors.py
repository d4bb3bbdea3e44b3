"""Exception hierarchy of palgym.

Every error raised on bad user input derives from :class:`PalgymError`, so callers can catch one
type. Errors about files name the file, the (1-based, header = line 1) line and the field.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TypeVar

E = TypeVar("E", bound=Enum)


class PalgymError(Exception):
    """Base class of every error palgym raises on purpose."""


class ConfigError(PalgymError, ValueError):
    """An invalid configuration value (cluster shape, option name, preset, ...)."""


def coerce_enum(enum: type[E], value: object, name: str) -> E:
    """``enum(value)``, or a :class:`ConfigError` naming ``name``, the value and the allowed ones.

    Raises:
        ConfigError: ``"{name} must be one of [...], got {value!r}"``.
    """
    try:
        return enum(value)
    except ValueError:
        allowed = [m.value for m in enum]
        raise ConfigError(f"{name} must be one of {allowed}, got {value!r}") from None


class InvalidActionError(PalgymError, ValueError):
    """An action that is not valid in the current state (raised only in strict mode)."""


class PolicyTypeError(PalgymError, TypeError):
    """A policy object or class lacking a member of its protocol, a member of the wrong type,
    or a ``place()`` returning something other than a target (names the policy and member)."""


class _FileError(PalgymError, ValueError):
    """An error located in a file: ``path``, ``line`` (1-based; None: whole file), ``field``."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class TraceFormatError(_FileError):
    """A malformed or invalid job trace (missing column, bad value, duplicate id, ...)."""


class ProfileError(_FileError):
    """A malformed or invalid variability profile or variability measurement file."""
