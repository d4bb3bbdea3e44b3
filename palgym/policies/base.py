"""Interfaces of queue orders and placement policies, and the random-sampling adapter.

A round's decision is split as in Blox (Agarwal et al., "Blox", EuroSys'24): a queue order ranks
the active jobs, then a placement policy walks that order and returns the round's allocation as a
target ``job_of_gpu`` array (int64 (G,), job index or FREE).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from palgym.sim.engine import Simulator
from palgym.sim.types import IntArray


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

    def order(self, sim: Simulator) -> IntArray:
        """int64 (A,): active job indices, highest priority first (ties: admission order)."""
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

    def place(self, sim: Simulator, order: IntArray, sampler: Sampler) -> IntArray:
        """int64 (G,): the target allocation for the round starting at ``sim.now_s``."""
        ...
