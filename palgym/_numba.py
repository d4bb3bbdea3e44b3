"""numba's ``njit``, or a stand-in that leaves functions as plain Python where numba is missing.

The one place palgym imports numba. A compiled twin (``palgym.sim.step_numba``, the env's
kernels, the reward's sum) imports :func:`njit` and :data:`AVAILABLE` from here; callers choose
the compiled path only when :data:`AVAILABLE` is True. Importing this module imports numba
(slow), so modules imported by ``import palgym`` import it lazily.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

try:  # numba is a dependency; without it the numpy reference paths keep palgym usable
    import numba as _numba
except ImportError:  # pragma: no cover - exercised only where numba is missing
    _numba = None  # type: ignore[assignment]

AVAILABLE: bool = _numba is not None
"""True if numba is installed (then :func:`njit` compiles)."""

if _numba is not None:  # the extension hooks of the Random kernels (palgym.policies.random_*)
    types = _numba.types
    overload = _numba.extending.overload
    next_uint32 = importlib.import_module("numba.np.random.generator_core").next_uint32


def njit(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """``numba.njit(*args, **kwargs)`` as a decorator; without numba, a decorator that returns
    the function unchanged.

    Args:
        *args, **kwargs: numba's options (``cache=True``, ``nogil=True``, ``error_model=...``);
            ignored without numba.

    Returns:
        A decorator.
    """
    if _numba is None:  # pragma: no cover - exercised only where numba is missing
        return lambda function: function
    return _numba.njit(*args, **kwargs)  # type: ignore[no-any-return]


def entry_point(function: Any, args: Sequence[Any]) -> Callable[..., Any]:
    """The compiled entry of the :func:`njit` ``function`` for the types of ``args`` (loaded
    from the cache or compiled if needed, as a call would): calling it skips numba's per-call
    dispatch on the arguments' types, the largest part of a many-argument call's overhead.

    Every later call must pass arguments of exactly these numba types (dtype, dimensions and
    layout of each array, scalar kinds): the entry converts them without checking. Without
    numba, ``function`` itself.

    Args:
        function: a function decorated with :func:`njit`.
        args: arguments of the types the entry will be called with.
    """
    if _numba is None:  # pragma: no cover - exercised only where numba is missing
        return function
    return function.compile(tuple(function.typeof_pyval(a) for a in args))  # type: ignore[no-any-return]
