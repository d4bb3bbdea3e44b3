"""Which heuristic episodes the compiled loop serves, and its arguments for one episode.

The rule, decided once per episode (:func:`compiled_plan`): the compiled loop
(:mod:`palgym.driver.kernel`) runs an episode when all of these hold, else the Python loop
(:func:`palgym.simulate.drive`) does, and :func:`compiled_plan` says why:

- numba is installed and the simulator runs the numba step backend;
- the truth is static (no ``config.dynamics``) and no callback watches the rounds
  (``on_event``: invariant checks, a belief that changes);
- the queue order and the placement (inside a :class:`~palgym.policies.belief.BeliefPlacement`
  whose belief does not change) are objects of classes registered with a compiled form
  (:mod:`palgym.policies.registry`; a policy without one, e.g. a user's Python-only class,
  runs on the Python loop), and the form serves the episode
  (:mod:`palgym.policies.compiled_forms`: FIFO, LAS, SRTF, SRSF or Tiresias, SRTF and SRSF
  with clairvoyant durations; Packed, Random, PM-First or PAL with its ascending node order,
  without backfilling, the deterministic ones on the contiguous layout, GPU g on node
  g // G_n);
- a placement that draws (Random) draws from a plain ``random.Random`` or a
  ``numpy.random.Generator`` (through :class:`~palgym.policies.base.NumpySampler`), on fewer
  than 2**31 GPUs.

Both loops give the same episode bit for bit (``tests/test_driver.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from palgym.errors import ConfigError, coerce_enum
from palgym.policies.base import (
    CheckedPlacement,
    NumpySampler,
    PlacementPolicy,
    QueueOrder,
    Sampler,
)
from palgym.policies.belief import BeliefPlacement
from palgym.policies.compiled_rules import ClassTables
from palgym.policies.random_placement import MAX_COMPILED_GPUS
from palgym.policies.registry import CompiledRule, PlacementEntry, QueueOrderEntry, entry_of
from palgym.sim.backend import Backend
from palgym.sim.config import Choice
from palgym.sim.engine import Simulator
from palgym.sim.types import FloatArray, IntArray


class Driver(Choice):
    """Which loop runs a heuristic episode (:func:`palgym.simulate.drive`)."""

    AUTO = "auto"
    """The compiled loop where :func:`compiled_plan` serves the episode, else the Python one."""
    PYTHON = "python"
    """The Python loop (the reference)."""
    COMPILED = "compiled"
    """The compiled loop; an episode it does not serve is an error."""


@dataclass
class CompiledPlan:
    """What the compiled loop needs of one episode's heuristic (:func:`compiled_plan`).

    Attributes:
        name: the placement's name (error messages).
        order_code: the queue order's key code (:mod:`palgym.policies.order_kernel`).
        thresholds: float64 (T,), Tiresias' 2D-LAS thresholds (GPU-s).
        rule: the placement's rule code and options (:func:`palgym.policies.place_kernel.place`).
        memo_rounds: the loop's memo applies (deterministic placement, static order).
        tables: PM-First's or PAL's class tables (None for Packed and Random).
        sampler: the random stream Random draws from (None for the deterministic rules).
    """

    name: str
    order_code: int
    thresholds: FloatArray
    rule: tuple[int, int, int, int]
    memo_rounds: bool
    tables: ClassTables | None
    sampler: random.Random | np.random.Generator | None


def _order_code(order: QueueOrder) -> int | str:
    """The key code of ``order`` (its registered compiled form), or why it has none."""
    entry = entry_of(order)
    if not isinstance(entry, QueueOrderEntry) or entry.compiled is None:
        return f"queue order {order.name!r} ({type(order).__name__}) has no compiled twin"
    return entry.compiled(order)


def _rule(sim: Simulator, placement: PlacementPolicy
          ) -> tuple[CompiledRule, PlacementEntry] | str:
    """The compiled form of ``placement`` for this episode (its rule code and options, its
    class tables) and its entry, or why it has none."""
    entry = entry_of(placement)
    if not isinstance(entry, PlacementEntry) or entry.compiled is None:
        return f"placement {placement.name!r} ({type(placement).__name__}) has no compiled twin"
    form = entry.compiled(sim.view(), placement)
    return form if isinstance(form, str) else (form, entry)


def _stream(sim: Simulator, sampler: Sampler
            ) -> random.Random | np.random.Generator | str:
    """The random stream Random draws from, or why the kernels cannot draw from it."""
    if sim.cluster.num_gpus >= MAX_COMPILED_GPUS:
        return f"Random placement on {sim.cluster.num_gpus} GPUs (32-bit draws)"
    if type(sampler) is random.Random:
        return sampler
    if type(sampler) is NumpySampler and type(sampler.generator) is np.random.Generator:
        return sampler.generator
    return f"a sampler of type {type(sampler).__name__}"


def _unwrapped(placement: PlacementPolicy) -> PlacementPolicy | str:
    """The placement whose compiled form serves the episode: inside a user's target check
    and a belief that does not change; or why there is none."""
    if isinstance(placement, CheckedPlacement):  # a user's class: its own compiled form, if any
        placement = placement.inner
    if isinstance(placement, BeliefPlacement):
        if placement.belief.changes:
            return "a belief that changes"
        placement = placement.inner
    return placement


def compiled_plan(sim: Simulator, order: QueueOrder, placement: PlacementPolicy,
                  sampler: Sampler, on_event: Any = None) -> CompiledPlan | str:
    """The compiled loop's plan for this episode, or why the Python loop runs it (the rule
    of the module docstring).

    Args:
        sim: the engine, fresh or mid-episode.
        order, placement, sampler: the heuristic and its random stream.
        on_event: the driver's per-round callback (any: the Python loop).

    Returns:
        The plan, or the reason (a phrase) the compiled loop does not serve the episode.
    """
    from palgym._numba import AVAILABLE

    if not AVAILABLE or sim.backend is not Backend.NUMBA:
        return "numba is not installed" if not AVAILABLE else "the numpy step backend"
    if sim.truth is not None:
        return "a dynamic truth"
    if on_event is not None:
        return "a per-round callback"
    unwrapped = _unwrapped(placement)
    if isinstance(unwrapped, str):
        return unwrapped
    placement = unwrapped
    order_code = _order_code(order)
    if isinstance(order_code, str):
        return order_code
    rule = _rule(sim, placement)
    if isinstance(rule, str):
        return rule
    (codes, tables), entry = rule
    stream: random.Random | np.random.Generator | None = None
    if entry.streams:
        drawn = _stream(sim, sampler)
        if isinstance(drawn, str):
            return drawn
        stream = drawn
    thresholds = np.asarray(getattr(order, "thresholds_gpu_s", ()), dtype=np.float64)
    return CompiledPlan(placement.name, order_code, thresholds, codes,
                        placement.deterministic and order.static, tables, stream)


def spec_of(plan: CompiledPlan, gpus_per_node: int) -> IntArray:
    """The kernel's int64 spec of ``plan`` (:func:`palgym.driver.kernel.run_rounds`)."""
    return np.array([plan.order_code, int(plan.memo_rounds), *plan.rule, gpus_per_node],
                    dtype=np.int64)


def chosen_plan(driver: str | Driver, sim: Simulator, order: QueueOrder,
                placement: PlacementPolicy, sampler: Sampler, on_event: Any = None
                ) -> CompiledPlan | None:
    """The compiled loop's plan if ``driver`` and the episode choose it, else None (the Python
    loop: ``driver="python"``, or ``"auto"`` for an episode :func:`compiled_plan` does not
    serve, e.g. a custom policy).

    Raises:
        ConfigError: for an unknown ``driver``, or ``"compiled"`` for an episode the compiled
            loop does not serve (naming why).
    """
    choice = coerce_enum(Driver, driver, "driver")
    if choice is Driver.PYTHON:
        return None
    plan = compiled_plan(sim, order, placement, sampler, on_event)
    if isinstance(plan, CompiledPlan):
        return plan
    if choice is Driver.COMPILED:
        raise ConfigError(f"the compiled driver does not serve this episode: {plan}")
    return None
