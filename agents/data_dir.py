"""Paths inside the public data folder, recorded relative to ``PALGYM_DATA_DIR``.

A run's ``config.yml`` (and a committed model's ``.yml`` in ``agents/pretrained/``) records the
env kwargs it was trained with. A path kwarg (:data:`PATH_KWARGS`) inside the folder that
``PALGYM_DATA_DIR`` names is written as ``$PALGYM_DATA_DIR/<path inside it>``
(:func:`portable_config`), so the file means the same on every machine; any other path is
written as it is. The readers resolve both forms (:func:`resolve_config`): an absolute or
relative path stays as it is, ``$PALGYM_DATA_DIR/...`` is joined to the variable's value;
:func:`require_resolved` names a value that is still relative to an unset variable when it is
about to be used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError

DATA_DIR_VARIABLE = "PALGYM_DATA_DIR"
DATA_DIR_PREFIX = "$" + DATA_DIR_VARIABLE
"""How a recorded path starts when it lies in the public data folder."""
PATH_KWARGS: tuple[str, ...] = ("variability_data", "profile")
"""Env kwargs that name a file or folder."""
KWARG_SECTIONS: tuple[str, ...] = ("env_kwargs", "eval_env_kwargs")
"""The sections of a run configuration holding env kwargs."""


def data_dir() -> str | None:
    """The value of ``PALGYM_DATA_DIR`` (None when unset or empty), read as every command line
    reads it (:func:`palgym.bench.roots.from_environment`)."""
    from palgym.bench.roots import from_environment

    return from_environment(None, DATA_DIR_VARIABLE)


def portable_path(value: Any, root: str | None) -> Any:
    """``value`` as recorded: ``$PALGYM_DATA_DIR/<relative>`` if it is a path inside ``root``
    (both resolved), else unchanged (also any non-path value, or with ``root`` None)."""
    if not isinstance(value, (str, Path)) or root is None or str(value).startswith(
            DATA_DIR_PREFIX):
        return value
    try:
        relative = Path(value).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return value
    text = relative.as_posix()
    return DATA_DIR_PREFIX if text == "." else f"{DATA_DIR_PREFIX}/{text}"


def resolve_path(value: Any, root: str | None) -> Any:
    """``value`` with a leading ``$PALGYM_DATA_DIR`` replaced by ``root`` (unchanged when
    ``root`` is None, or for any other value)."""
    if root is None or not isinstance(value, str) or not (
            value == DATA_DIR_PREFIX or value.startswith(DATA_DIR_PREFIX + "/")):
        return value
    rest = value[len(DATA_DIR_PREFIX) + 1:]
    return str(Path(root) / rest) if rest else root


def _map_paths(config: Mapping[str, Any], convert: Any) -> dict[str, Any]:
    mapped = dict(config)
    for section in KWARG_SECTIONS:
        kwargs = mapped.get(section)
        if isinstance(kwargs, Mapping):
            mapped[section] = {key: convert(value) if key in PATH_KWARGS else value
                               for key, value in kwargs.items()}
    return mapped


def portable_config(config: Mapping[str, Any], root: str | None = None) -> dict[str, Any]:
    """``config`` with the :data:`PATH_KWARGS` of its :data:`KWARG_SECTIONS` written relative
    to ``root`` (default: ``PALGYM_DATA_DIR``) where they lie inside it (:func:`portable_path`).
    """
    root = data_dir() if root is None else root
    return _map_paths(config, lambda value: portable_path(value, root))


def resolve_config(config: Mapping[str, Any], root: str | None = None) -> dict[str, Any]:
    """``config`` with every ``$PALGYM_DATA_DIR/...`` path kwarg joined to ``root`` (default:
    ``PALGYM_DATA_DIR``; left as it is while the variable is unset, see
    :func:`require_resolved`)."""
    root = data_dir() if root is None else root
    return _map_paths(config, lambda value: resolve_path(value, root))


def require_resolved(kwargs: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``kwargs`` with its path kwargs resolved (:func:`resolve_path`).

    Raises:
        ConfigError: naming ``where``, the kwarg and its value when it is relative to
            ``PALGYM_DATA_DIR`` and the variable is not set.
    """
    resolved = {key: resolve_path(value, data_dir()) if key in PATH_KWARGS else value
                for key, value in kwargs.items()}
    for key in PATH_KWARGS:
        value = resolved.get(key)
        if isinstance(value, str) and value.startswith(DATA_DIR_PREFIX):
            raise ConfigError(f"{where}: {key} is {value!r}, inside the public data folder, but "
                              f"{DATA_DIR_VARIABLE} is not set: set it to that folder "
                              f"(README.md), or give the path on the command line")
    return resolved
