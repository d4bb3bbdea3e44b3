"""The step backends and how a simulator chooses one (once, from a public argument).

A step backend is a module with three functions over :class:`~palgym.sim.state.SimState`
(:class:`StepBackend`): :mod:`palgym.sim.step_numpy`, the reference, and
:mod:`palgym.sim.step_numba`, the same functions compiled. Both leave bit-identical state.
Neither imports the engine; the engine imports them through :func:`step_backend`.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, Protocol

from palgym.errors import ConfigError, coerce_enum
from palgym.sim.state import Committed, KernelParams, SimState
from palgym.sim.types import IntArray


class Backend(str, Enum):
    """Which step backend runs a simulator's commit, advance and idle rounds."""

    NUMBA = "numba"
    """:mod:`palgym.sim.step_numba`, compiled kernels (the default when numba is installed)."""
    NUMPY = "numpy"
    """:mod:`palgym.sim.step_numpy`, the numpy reference."""


BackendName = Backend | Literal["numba", "numpy"]
"""A :class:`Backend` or its value."""


class BoundStep(Protocol):
    """A step backend's functions bound to one state and its parameters (the kernels'
    arguments prepared once; valid while the state's arrays are the same objects)."""

    def commit(self, target: IntArray | None) -> Committed:
        """``commit(state, params, target)`` of the bound state."""

    def advance(self) -> IntArray:
        """``advance(state, params)`` of the bound state."""

    def idle_rounds(self, next_arrival_s: float) -> int:
        """``idle_rounds(state, params, next_arrival_s)`` of the bound state."""

    @property
    def kernel_args(self) -> tuple[object, ...] | None:
        """The bound state as the compiled kernels take it (None on the numpy backend)."""


class StepBackend(Protocol):
    """The functions of a step backend (see :mod:`palgym.sim.step_numpy` for their contracts)."""

    def Bound(self, state: SimState, params: KernelParams) -> BoundStep:  # noqa: N802
        """The three functions bound to ``state`` and ``params`` (the module's class)."""

    def commit(self, state: SimState, params: KernelParams, target: IntArray | None) -> Committed:
        """Apply ``target`` (None: keep the allocation), then account waiting time."""

    def advance(self, state: SimState, params: KernelParams) -> IntArray:
        """Account one round, move the clock, complete finished jobs; returns them."""

    def idle_rounds(self, state: SimState, params: KernelParams, next_arrival_s: float) -> int:
        """Commit-nothing rounds up to the next event; returns how many ran."""


def resolve_backend(backend: BackendName | None) -> Backend:
    """The :class:`Backend` named by ``backend``; None: numba if it is installed, else numpy.

    Raises:
        ConfigError: for an unknown name, or ``"numba"`` where numba is not installed.
    """
    if backend is None:
        from palgym._numba import AVAILABLE  # imports numba (slow): only here

        return Backend.NUMBA if AVAILABLE else Backend.NUMPY
    chosen = coerce_enum(Backend, backend, "backend")
    if chosen is Backend.NUMBA:
        from palgym._numba import AVAILABLE

        if not AVAILABLE:  # pragma: no cover - exercised only where numba is missing
            raise ConfigError("backend 'numba' needs numba installed; use backend='numpy'")
    return chosen


def step_backend(backend: BackendName) -> StepBackend:
    """The module implementing ``backend`` (step_numba is imported on first use).

    Raises:
        ConfigError: for an unknown backend name.
    """
    backend = coerce_enum(Backend, backend, "backend")
    if backend is Backend.NUMPY:
        from palgym.sim import step_numpy

        return step_numpy
    from palgym.sim import step_numba

    return step_numba
