"""The engine's hooks of a dynamic truth (:mod:`palgym.sim.dynamics`).

The step backends compute a started job's penalties from ``alloc.perfvar`` and keep them while
its set is kept. With a :class:`~palgym.sim.dynamics.VariabilityProcess` the engine calls
:meth:`DynamicTruth.after_commit` after every commit that changed the allocation and
:meth:`DynamicTruth.after_round` after every advance (progress, completions); both update the
truth in place and recompute the penalties of every job holding GPUs with the backends'
operation order::

    variability_penalty = max truth[class, g] over the job's GPUs
    T_eff = (variability_penalty x locality_penalty) x T_it

so a speed change (a new run, a throttling episode, drift) takes effect from the next round on:
progress in [t, t+R) uses the T_eff set at t. Jobs whose GPUs did not change get the identical
T_eff (the same numbers, the same order).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from palgym.sim.dynamics import VariabilityDynamics, VariabilityProcess
from palgym.sim.state import SimState
from palgym.sim.types import FREE, IntArray


class DynamicTruth:
    """The engine side of a dynamic truth.

    Args:
        options: the dynamics options (``options.active``).
        character: float64 (C, G), the profile given to the simulator.
        node_of_gpu: int64 (G,).
        seed: the process seed (see :class:`~palgym.sim.dynamics.VariabilityProcess`).

    Attributes:
        process: the :class:`~palgym.sim.dynamics.VariabilityProcess`; its ``truth`` array is
            the simulator's ``alloc.perfvar``.
    """

    def __init__(self, options: VariabilityDynamics, character: np.ndarray,
                 node_of_gpu: IntArray, seed: np.random.SeedSequence | int | None) -> None:
        self.process = VariabilityProcess(options, character, node_of_gpu, seed)

    def after_commit(self, state: SimState, before: IntArray) -> None:
        """Start runs on the GPUs of the jobs started by the commit (``before``: int64 (G,),
        ``job_of_gpu`` before it), refresh the truth and the penalties."""
        after = state.alloc.job_of_gpu
        changed = before != after
        started = np.unique(after[changed & (after != FREE)])
        if started.size:
            restarted = np.zeros(state.jobs.status.size + 1, dtype=bool)  # last entry: FREE
            restarted[started] = True
            self.process.start_runs(np.flatnonzero(restarted[after]))
        self.process.refresh(after)
        recompute_penalties(state)

    def after_round(self, state: SimState, before: IntArray) -> None:
        """Advance throttling and drift; refresh the truth and penalties if it moved or GPUs
        were freed (``before``: int64 (G,), ``job_of_gpu`` before the advance)."""
        moved = self.process.next_round()
        job_of_gpu = state.alloc.job_of_gpu
        if moved or not np.array_equal(before, job_of_gpu):
            self.process.refresh(job_of_gpu)
            recompute_penalties(state)


def make_truth(options: VariabilityDynamics | None, character: np.ndarray,
               node_of_gpu: IntArray, seed: np.random.SeedSequence | int | None
               ) -> DynamicTruth | None:
    """The :class:`DynamicTruth` of ``options``, or None if it is None or no part is on."""
    if options is None or not options.active:
        return None
    return DynamicTruth(options, character, node_of_gpu, seed)


class Stepper(Protocol):
    """What :func:`rounds_one_by_one` drives (the simulator)."""

    @property
    def ended(self) -> bool: ...  # noqa: D102

    @property
    def events_since_commit(self) -> bool: ...  # noqa: D102

    def commit(self, target: IntArray | None) -> bool: ...  # noqa: D102

    def advance(self) -> IntArray: ...  # noqa: D102


def rounds_one_by_one(sim: Stepper) -> int:
    """``sim.commit(None); sim.advance()`` until a round has an event or the episode ended
    (at least one round; the caller checks it has not ended): the idle rounds of a simulator
    whose truth changes between rounds. Returns the number of rounds run."""
    rounds = 0
    while not rounds or not (sim.ended or sim.events_since_commit):
        sim.commit(None)
        sim.advance()
        rounds += 1
    return rounds


def recompute_penalties(state: SimState) -> None:
    """Recompute ``variability_penalty`` and ``iteration_time_effective_s`` of every job holding
    GPUs from the truth (``locality_penalty`` is kept: it depends on the set only)."""
    job_of_gpu = state.alloc.job_of_gpu
    gpus = np.flatnonzero(job_of_gpu != FREE)
    if not gpus.size:
        return
    owners = job_of_gpu[gpus]
    order = np.argsort(owners, kind="stable")
    gpus, owners = gpus[order], owners[order]
    first = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
    jobs = owners[first]
    columns = state.jobs
    values = state.alloc.perfvar[columns.perf_class[owners], gpus]
    variability = np.maximum.reduceat(values, first)
    columns.variability_penalty[jobs] = variability
    columns.iteration_time_effective_s[jobs] = (variability * columns.locality_penalty[jobs]) * (
        columns.iteration_time_s[jobs])
