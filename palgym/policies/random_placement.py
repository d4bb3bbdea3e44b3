"""Random-Sticky / Random-Non-Sticky placement (uniform over the free GPUs).

Without backfilling, the walks run compiled (:mod:`palgym.policies.random_kernel`) when numba
is installed and the sampler is one whose draws the kernels reproduce bit for bit: a plain
``random.Random`` (the artifact's stream; its state is read with ``getstate`` and written back
with ``setstate``, so later Python draws continue the same stream) or a
:class:`~palgym.policies.base.NumpySampler` over a ``numpy.random.Generator`` (drawn from in
place). Any other sampler, or backfilling, takes the Python walks of
:mod:`palgym.policies.walks` with :func:`~palgym.policies.allocation.random_allocation`.

Source: PAL, SC24, Section V-A (baselines); artifact ``placement/random_{sticky,nonsticky}.py``.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from palgym.policies.allocation import random_allocation
from palgym.policies.backfill import NO_BACKFILL, Backfill, with_backfill
from palgym.policies.base import NumpySampler, Sampler
from palgym.policies.walks import place_from_empty, place_sticky
from palgym.sim.types import BoolArray, IntArray
from palgym.sim.views import SimView

_MT_WORDS = 624
_MT_STATE = struct.Struct(f"={_MT_WORDS + 1}I")  # the words and the index, as getstate lists them
_MT_WORDS_ONLY = struct.Struct(f"={_MT_WORDS}I")
MAX_COMPILED_GPUS = 2**31  # the kernels' bounded draws take 32-bit ranges
# Below this many GPUs the Python non-sticky walk on a random.Random is cheaper than the state
# round trip (getstate / setstate, ~0.1 ms a round): few jobs per round, each a short sample.
# Speed only: both paths give the same allocations and leave the same state.
MT_NON_STICKY_MIN_GPUS = 256


def _random(sim: SimView, job: int, free: BoolArray, sampler: Sampler) -> IntArray | None:
    return random_allocation(free, int(sim.jobs.num_gpus[job]), sampler)


@lru_cache(maxsize=8)
def _setsizes(num_gpus: int) -> np.ndarray:
    from palgym.policies.random_streams import cpython_setsizes

    return cpython_setsizes(num_gpus)


def _compiled_walk(sampler: Sampler, num_gpus: int, min_mt_gpus: int, walk: Any, *args: Any
                   ) -> IntArray | None:
    """``walk(*args, stream)`` on the sampler's stream, or None where no exact twin applies
    (numba missing, another sampler type, a cluster beyond 32-bit draws) or, for a
    ``random.Random``, on fewer than ``min_mt_gpus`` GPUs."""
    from palgym._numba import AVAILABLE

    if not AVAILABLE or num_gpus >= MAX_COMPILED_GPUS:
        return None
    if type(sampler) is NumpySampler and type(sampler.generator) is np.random.Generator:
        target: IntArray = walk(*args, sampler.generator)
        return target
    if type(sampler) is not random.Random or num_gpus < min_mt_gpus:
        return None
    stream = mt_stream(sampler, num_gpus)
    target = walk(*args, stream)
    write_back(sampler, stream)
    return target


MtStream = tuple[np.ndarray, IntArray, IntArray]
"""A ``random.Random``'s state as the kernels draw from it: uint32 (624,) MT19937 words,
int64 (1,) the index, and int64 (G + 1,)
:func:`~palgym.policies.random_streams.cpython_setsizes`."""


def mt_stream(rng: random.Random, num_gpus: int) -> MtStream:
    """The state of ``rng`` as the kernels take it (a copy; see :func:`write_back`), for
    samples of at most ``num_gpus``."""
    internal = rng.getstate()[1]
    words = np.frombuffer(_MT_STATE.pack(*internal), dtype=np.uint32)  # through bytes: fast
    return (words[:_MT_WORDS].copy(), np.array([words[_MT_WORDS]], dtype=np.int64),
            _setsizes(num_gpus))


def write_back(rng: random.Random, stream: MtStream) -> None:
    """Set ``rng`` to the state the kernels left in ``stream`` (later Python draws continue
    the same stream)."""
    version, _, gauss_next = rng.getstate()
    mt, index, _ = stream
    rng.setstate((version, (*_MT_WORDS_ONLY.unpack(mt.tobytes()), int(index[0])), gauss_next))


def compiled_random_from_empty(sim: SimView, order: IntArray, sampler: Sampler
                               ) -> IntArray | None:
    """:func:`~palgym.policies.placement.place_from_empty` with the Random rule and no
    backfilling, compiled: int64 (G,) target allocation (None where it does not apply)."""
    from palgym.policies.random_kernel import random_from_empty

    num_gpus = sim.cluster.num_gpus
    return _compiled_walk(sampler, num_gpus, MT_NON_STICKY_MIN_GPUS, random_from_empty,
                          np.ascontiguousarray(order, dtype=np.int64), sim.jobs.num_gpus,
                          num_gpus)


def compiled_sticky_random(sim: SimView, order: IntArray, sampler: Sampler,
                           keep_victims_stopped: bool) -> IntArray | None:
    """:func:`~palgym.policies.placement.place_sticky` with the Random rule and no
    backfilling, compiled: int64 (G,) target allocation (None where it does not apply)."""
    from palgym.policies.random_kernel import sticky_random_walk

    return _compiled_walk(sampler, sim.cluster.num_gpus, 0, sticky_random_walk,
                          np.ascontiguousarray(order, dtype=np.int64), sim.job_of_gpu,
                          sim.jobs.num_gpus, sim.num_jobs, keep_victims_stopped)


@dataclass(frozen=True)
class RandomPlacement:
    """Random-Sticky / Random-Non-Sticky (uniform over free GPUs).

    Attributes:
        sticky: running jobs keep their GPUs.
        backfill: the walk's backfilling.
        deterministic: always False (it draws from the sampler).
        keep_victims_stopped: sticky victims of a failed attempt stay stopped
            (``SimConfig.sticky_keep_victims_stopped``).
    """

    sticky: bool
    backfill: Backfill = NO_BACKFILL
    deterministic: bool = False
    keep_victims_stopped: bool = False

    @property
    def name(self) -> str:
        """Table name (with its backfill suffix)."""
        base = "random-sticky" if self.sticky else "random-non-sticky"
        return with_backfill(base, self.backfill.mode)

    def place(self, sim: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """Target allocation (see :mod:`palgym.policies.placement`)."""
        compiled = self.backfill.mode == "none"
        if self.sticky:
            target = (compiled_sticky_random(sim, order, sampler, self.keep_victims_stopped)
                      if compiled else None)
            if target is not None:
                return target
            return place_sticky(sim, order, _random, sampler, self.backfill,
                                      self.keep_victims_stopped)
        target = compiled_random_from_empty(sim, order, sampler) if compiled else None
        if target is not None:
            return target
        return place_from_empty(sim, order, _random, sampler, self.backfill)
