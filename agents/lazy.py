"""Names of a package loaded on first use (PEP 562), so that importing a package of
:mod:`agents` loads none of its heavy dependencies (torch, stable-baselines3, Ray)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``names[name]`` (a module path) on
    first use and returns its attribute ``name``.

    Raises (from the returned function):
        AttributeError: for a name not in ``names``, naming the package.
    """

    def __getattr__(name: str) -> Any:  # noqa: N807 (the PEP 562 hook it becomes)
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def lazy_exports(package: str, modules: Mapping[str, tuple[str, ...]]
                 ) -> tuple[Callable[[str], Any], list[str]]:
    """A package's PEP 562 ``__getattr__`` and its ``__all__`` (sorted) from the names each of
    its modules exports: ``modules`` maps a module path (absolute, or relative to ``package``
    with a leading dot, e.g. ``".search"``) to the names it provides.

    Raises:
        ValueError: a name listed under two modules (naming both).
        AttributeError: (from the returned function) for a name not listed, naming the package.
    """
    names: dict[str, str] = {}
    for module, exported in modules.items():
        path = package + module if module.startswith(".") else module
        for name in exported:
            if name in names:
                raise ValueError(f"{package}: {name!r} listed under {names[name]!r} and "
                                 f"{path!r}")
            names[name] = path
    return lazy_getattr(package, names), sorted(names)
