"""Interfaces of queue orders and placement policies, and the random-sampling adapter.

A round's decision is split as in Blox (Agarwal et al., "Blox", EuroSys'24): a queue order ranks
the active jobs, then a placement policy walks that order and returns the round's allocation as a
target ``job_of_gpu`` array (int64 (G,), job index or FREE). Both read the simulation through
its read-only :class:`~palgym.sim.views.SimView` and never the engine; their options are their
own fields. The driver applies the target with one call, ``Simulator.commit(target)``.

A custom placement, e.g. "each queued job on the lowest free GPU ids, in order"::

    @dataclass(frozen=True)
    class LowestIds:
        name: str = "lowest-ids"
        sticky: bool = False
        deterministic: bool = True

        def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
            target = np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
            for job in order.tolist():
                free = np.flatnonzero(target == FREE)
                need = int(view.jobs.num_gpus[job])
                if need > free.size:
                    break
                target[free[:need]] = job
            return target

    run_episode(episode, policy=LowestIds())               # palgym.run_episode, or
    drive(sim, FIFO(), LowestIds(), make_sampler(rng))   # palgym.drive on an engine

:func:`check_placement` and :func:`check_queue_order` name the members an object lacks.
docs/CUSTOM_POLICY.md "Writing your own policy" has a complete example.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, cast, runtime_checkable

import numpy as np

from palgym.errors import PolicyTypeError
from palgym.sim.types import IntArray
from palgym.sim.views import SimView


class Sampler(Protocol):
    """What random placement needs: ``sample(population, k)`` without replacement."""

    def sample(self, population: Sequence[int], k: int) -> list[int]: ...


class NumpySampler:
    """:class:`Sampler` over a numpy Generator (palgym's default RNG discipline)."""

    def __init__(self, generator: np.random.Generator) -> None:
        self.generator = generator

    def sample(self, population: Sequence[int], k: int) -> list[int]:
        """k distinct items drawn uniformly from ``population``."""
        picked = self.generator.choice(len(population), size=k, replace=False)
        return [population[i] for i in picked.tolist()]


def make_sampler(rng: np.random.Generator | random.Random) -> Sampler:
    """A sampler for either RNG kind; ``random.Random`` is used as is (artifact replay)."""
    if isinstance(rng, random.Random):
        return rng
    return NumpySampler(rng)


@runtime_checkable
class QueueOrder(Protocol):
    """Ranks active jobs. ``static`` is True when the ranking changes only on arrivals,
    completions and starvation promotions (so a memoised round plan stays valid)."""

    @property
    def name(self) -> str:
        """Name used in tables and CLIs."""
        ...

    @property
    def static(self) -> bool:
        """True if the ranking changes only on events."""
        ...

    def order(self, view: SimView) -> IntArray:
        """int64 (A,): the active job indices (``view.active()``), highest priority first
        (ties: admission order)."""
        ...


@runtime_checkable
class PlacementPolicy(Protocol):
    """Decides the round's allocation from the ordered queue.

    ``sticky``: running jobs keep their GPUs unless preempted; otherwise the whole queue is
    placed from an empty cluster every round. ``deterministic``: the same state and order always
    give the same allocation (no RNG draws).
    """

    @property
    def name(self) -> str:
        """Name used in tables and CLIs."""
        ...

    @property
    def sticky(self) -> bool:
        """True if running jobs keep their GPUs."""
        ...

    @property
    def deterministic(self) -> bool:
        """True if the policy draws no random numbers."""
        ...

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """int64 (G,): the target allocation for the round starting at ``view.now_s``
        (``order``: int64 (A,), the queue order's ranking; ``sampler``: the random stream,
        drawn from only by policies that are not ``deterministic``)."""
        ...


PLACEMENT_MEMBERS: tuple[str, ...] = ("name", "sticky", "deterministic", "place")
"""The members of a :class:`PlacementPolicy` (``place`` a method, the rest attributes)."""
QUEUE_ORDER_MEMBERS: tuple[str, ...] = ("name", "static", "order")
"""The members of a :class:`QueueOrder` (``order`` a method, the rest attributes)."""


def _require(obj: object, kind: str, members: tuple[str, ...]) -> None:
    """Raise :class:`~palgym.errors.PolicyTypeError` (a TypeError) naming the members of
    ``kind`` that ``obj`` lacks (the last one of ``members`` must be callable) or that have the
    wrong type (``name`` a non-empty str, the other attributes bools)."""
    if isinstance(obj, type):
        raise PolicyTypeError(f"a {kind} must be an instance, not the class {obj.__name__}: "
                              f"pass {obj.__name__}(...)")
    *fields, method = members
    missing = [name for name in fields if not hasattr(obj, name)]
    if not callable(getattr(obj, method, None)):
        missing.append(f"{method}() method")
    if missing:
        raise PolicyTypeError(f"{type(obj).__name__} is not a {kind}: it lacks "
                              f"{', '.join(missing)} (a {kind} has {', '.join(members)})")
    for name in fields:
        value = getattr(obj, name)
        wanted = "a non-empty str" if name == "name" else "a bool"
        if not (isinstance(value, str) and value.strip() if name == "name"
                else isinstance(value, bool | np.bool_)):
            raise PolicyTypeError(f"{type(obj).__name__}.{name} must be {wanted}, "
                                  f"got {value!r}")


def check_placement(obj: object) -> PlacementPolicy:
    """``obj`` itself, once it has every member of :class:`PlacementPolicy`.

    Raises:
        TypeError: naming the members ``obj`` lacks or that have the wrong type (or if ``obj``
            is a class).
    """
    _require(obj, "placement policy", PLACEMENT_MEMBERS)
    return cast(PlacementPolicy, obj)


def check_queue_order(obj: object) -> QueueOrder:
    """``obj`` itself, once it has every member of :class:`QueueOrder`; raises as
    :func:`check_placement`."""
    _require(obj, "queue order", QUEUE_ORDER_MEMBERS)
    return cast(QueueOrder, obj)


def is_own_policy(obj: object) -> bool:
    """True for an object of palgym's own policy classes (defined in a ``palgym`` module):
    the episode's stall tests and the compiled loop know their rules, not a user's."""
    return type(obj).__module__.split(".")[0] == "palgym"


class WrappedPlacement:
    """A placement that wraps another (``inner``) and takes its ``name``, ``sticky`` and
    ``deterministic``; :meth:`place` asks ``inner``. Subclasses add what they wrap it for
    (:class:`CheckedPlacement`, :class:`palgym.policies.belief.BeliefPlacement`)."""

    inner: PlacementPolicy

    @property
    def name(self) -> str:
        """The inner placement's name."""
        return self.inner.name

    @property
    def sticky(self) -> bool:
        """As the inner placement."""
        return self.inner.sticky

    @property
    def deterministic(self) -> bool:
        """As the inner placement."""
        return self.inner.deterministic

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """The inner placement's target."""
        return self.inner.place(view, order, sampler)


class CheckedPlacement(WrappedPlacement):
    """A user's placement object whose every target is checked before the engine sees it:
    :meth:`place` must return an integer numpy array of shape (G,) (a job index per GPU or
    ``FREE``), else a TypeError names the policy and what it returned (the engine would read
    ``None`` as "keep the allocation" and truncate floats).
    """

    def __init__(self, inner: PlacementPolicy) -> None:
        self.inner = inner

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """The inner policy's target, checked.

        Raises:
            TypeError: unless it is an integer ndarray of shape (G,).
        """
        target = self.inner.place(view, order, sampler)
        shape = (view.cluster.num_gpus,)
        if (not isinstance(target, np.ndarray) or target.dtype.kind not in "iu"
                or target.shape != shape):
            got = (f"an array of dtype {target.dtype} and shape {target.shape}"
                   if isinstance(target, np.ndarray) else type(target).__name__)
            raise PolicyTypeError(f"placement {self.inner.name!r}: place() must return an "
                                  f"integer numpy array of shape {shape} (a job index per GPU "
                                  f"or FREE), got {got}")
        return target
