"""Which heuristic episodes the compiled loop serves, and its arguments for one episode.

The rule, decided once per episode (:func:`compiled_plan`): the compiled loop
(:mod:`palgym.driver.kernel`) runs an episode when all of these hold, else the Python loop
(:func:`palgym.simulate.drive`) does, and :func:`compiled_plan` says why:

- numba is installed and the simulator runs the numba step backend;
- the truth is static (no ``config.dynamics``) and no callback watches the rounds
  (``on_event``: invariant checks, a belief that changes);
- the queue order is exactly one of FIFO, LAS, SRTF, SRSF or Tiresias
  (:mod:`palgym.policies.ordering`), SRTF and SRSF with clairvoyant durations;
- the placement (inside a :class:`~palgym.policies.belief.BeliefPlacement` whose belief does
  not change) is exactly one of Packed, Random, PM-First or PAL with its ascending node order,
  without backfilling; the deterministic ones on the contiguous layout (GPU g on node g // G_n);
- Random draws from a plain ``random.Random`` or a ``numpy.random.Generator`` (through
  :class:`~palgym.policies.base.NumpySampler`), on fewer than 2**31 GPUs.

Both loops give the same episode bit for bit (``tests/test_driver.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from palgym.errors import ConfigError, coerce_enum
from palgym.policies.backfill import BackfillMode
from palgym.policies.base import (
    CheckedPlacement,
    NumpySampler,
    PlacementPolicy,
    QueueOrder,
    Sampler,
)
from palgym.policies.belief import BeliefPlacement
from palgym.policies.compiled_rules import ClassTables, contiguous
from palgym.policies.durations import DurationKnowledge
from palgym.policies.ordering import FIFO, LAS, SRSF, SRTF, Tiresias
from palgym.policies.placement import PAL, Packed, PMFirst
from palgym.policies.random_placement import MAX_COMPILED_GPUS, RandomPlacement
from palgym.sim.backend import Backend
from palgym.sim.config import AttainedService, Choice, PalNodeOrder, RemainingTime
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
    """The key code of ``order``, or why it has none."""
    from palgym.policies import order_kernel as codes

    if type(order) not in (FIFO, LAS, SRTF, SRSF, Tiresias):
        return f"queue order {order.name!r} ({type(order).__name__}) has no compiled twin"
    if isinstance(order, FIFO):
        return codes.FIFO_KEY
    if isinstance(order, LAS | Tiresias) and (
            isinstance(order, LAS) or order.service is AttainedService.WALL_CLOCK):
        wall = order.service is AttainedService.WALL_CLOCK
        return codes.LAS_WALL_KEY if wall else codes.LAS_GPU_KEY
    if isinstance(order, Tiresias):
        return codes.TIRESIAS_2D_KEY
    assert isinstance(order, SRTF)  # SRSF is an SRTF
    if order.durations.knowledge is not DurationKnowledge.CLAIRVOYANT:
        return f"queue order {order.name} with {order.durations.knowledge.value} durations"
    nominal = order.remaining is RemainingTime.NOMINAL
    if isinstance(order, SRSF):
        return codes.SRSF_NOMINAL_KEY if nominal else codes.SRSF_IDEAL_KEY
    return codes.SRTF_NOMINAL_KEY if nominal else codes.SRTF_IDEAL_KEY


def _rule(sim: Simulator, placement: PlacementPolicy
          ) -> tuple[tuple[int, int, int, int], ClassTables | None] | str:
    """The rule code and options of ``placement`` (rule, sticky, strict total, keep victims
    stopped) and its class tables, or why it has none."""
    from palgym.policies import place_kernel as codes

    kind = type(placement)
    if kind not in (PAL, PMFirst, Packed, RandomPlacement):
        shown = placement.inner if isinstance(placement, CheckedPlacement) else placement
        return f"placement {placement.name!r} ({type(shown).__name__}) has no compiled twin"
    if placement.backfill.mode != BackfillMode.NONE:  # type: ignore[attr-defined]
        return f"placement {placement.name!r} backfills"
    if kind is RandomPlacement:
        return (codes.RANDOM_RULE, int(placement.sticky),
                0, int(placement.keep_victims_stopped)), None  # type: ignore[attr-defined]
    if not contiguous(sim.view()):
        return "a GPU layout other than the contiguous one"
    if kind is Packed:
        packed: Packed = placement  # type: ignore[assignment]
        return (codes.PACKED_RULE, int(packed.sticky), int(packed.strict_total),
                int(packed.keep_victims_stopped)), None
    ranked: PAL | PMFirst = placement  # type: ignore[assignment]
    if isinstance(ranked, PAL) and ranked.node_order is not PalNodeOrder.ASCENDING:
        return f"PAL's node order {ranked.node_order.value!r}"
    if not ranked.tables.matches(ranked.factors):
        return "slowdown factors changed since the placement was made"
    return (codes.PAL_RULE if isinstance(ranked, PAL) else codes.PM_FIRST_RULE, 0, 0, 0), \
        ranked.tables


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
    if isinstance(placement, BeliefPlacement):
        if placement.belief.changes:
            return "a belief that changes"
        placement = placement.inner
    order_code = _order_code(order)
    if isinstance(order_code, str):
        return order_code
    rule = _rule(sim, placement)
    if isinstance(rule, str):
        return rule
    (code, sticky, strict, keep), tables = rule
    stream: random.Random | np.random.Generator | None = None
    if type(placement) is RandomPlacement:
        drawn = _stream(sim, sampler)
        if isinstance(drawn, str):
            return drawn
        stream = drawn
    thresholds = np.asarray(getattr(order, "thresholds_gpu_s", ()), dtype=np.float64)
    return CompiledPlan(placement.name, order_code, thresholds, (code, sticky, strict, keep),
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
