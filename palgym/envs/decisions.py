"""One round's placement broken into single-job decisions, on the same engine as run_episode.

At a round boundary the env builds a :class:`DecisionRound` from the queue order; the agent then
places one job at a time (``place``) until the round has nothing left to decide or the agent
ends it (scheduling task only); ``target`` is then committed to the engine. The decomposition
mirrors :mod:`palgym.policies.placement` walk for walk, so that a heuristic that always takes
the first job of the window with its own allocation rule reproduces ``run_episode`` exactly:

- non-sticky, placement task: the round places exactly the longest prefix of the order whose
  demand fits the cluster (what every PAL-artifact policy places), optionally class-reordered
  (PM-First / PAL); any of the window's jobs may go next.
- sticky: running jobs keep their GPUs; jobs are decided in queue order (only the first job of
  the window may go next). When it does not fit, running jobs are stopped from the lowest
  priority upward until it does (the env's dynamics, as in Packed-Sticky / Random-Sticky).
- scheduling task: any waiting job that fits may be placed, in any order (backfilling), and the
  agent may end the round at any time, leaving GPUs idle.
"""

from __future__ import annotations

import bisect

import numpy as np

from palgym.errors import ConfigError
from palgym.policies.backfill import Reservation
from palgym.policies.placement import class_reordered, fitting_prefix
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, BoolArray, IntArray

TASKS: tuple[str, ...] = ("placement", "scheduling")
"""The env's tasks (``palgym/PALPlacement-v0``, ``palgym/PALScheduling-v0``)."""


class DecisionRound:
    """The open decisions of the round starting at ``sim.now_s``.

    Args:
        sim: the engine, at a round boundary (after ``advance``).
        order: int64 (A,) active job indices in queue order.
        task: ``"placement"`` or ``"scheduling"``.
        sticky: keep running jobs on their GPUs (else start from an empty cluster).
        class_reorder: stably sort the fitting prefix by perf class (PM-First / PAL order).
        start: non-sticky rounds: the jobs to decide, when already known (a non-sticky round's
            are a function of the order and the job table alone, so an unchanged state repeats
            the previous round's ``start``).

    Attributes:
        target: int64 (G,) tentative allocation for the round.
        free: bool (G,) GPUs free in ``target``.
        num_free: the number of free GPUs.
        num_active: the number of active (queued or running) jobs at the round's start.
        pending: jobs still to decide, in window order.
        start: ``pending`` at the start of a non-sticky round (tuple; empty when sticky).
        placed: jobs placed so far this round, in decision order.
        deferred: the agent ended the round (:meth:`end`).
        reservation: the EASY reservation a work-conserving agent made this round (RESERVE,
            :mod:`palgym.envs.conserving`; None: none made); every later placement is charged
            to it.

    Raises:
        ConfigError: ``task`` is not one of :data:`TASKS`.
    """

    def __init__(  # noqa: PLR0913
        self,
        sim: Simulator,
        order: IntArray,
        task: str,
        sticky: bool,
        class_reorder: bool,
        start: tuple[int, ...] | None = None,
    ) -> None:
        if task not in TASKS:
            raise ConfigError(f"task must be one of {list(TASKS)}, got {task!r}")
        self.sim = sim
        self.task = task
        self.sticky = sticky
        self.placed: list[int] = []
        self.ended = False
        self.deferred = False
        self.reservation: Reservation | None = None
        if sticky:
            self.target = sim.job_of_gpu.copy()
            running = np.zeros(sim.jobs.size, dtype=bool)
            running[self.target[self.target != FREE]] = True
            self._running = running
            self.free: BoolArray = self.target == FREE
            self.num_free = int(np.count_nonzero(self.free))
            self.pending: list[int] = order[~running[order]].tolist()
            self.start: tuple[int, ...] = ()
        else:
            num_gpus = sim.cluster.num_gpus
            self.target = np.empty(num_gpus, np.int64)
            self.target.fill(FREE)  # (np.full's Python wrapper costs more than the fill)
            self.free = np.ones(num_gpus, np.bool_)  # the round starts empty
            self.num_free = num_gpus
            self._running = np.zeros(sim.jobs.size, dtype=bool)
            # the placement task's round is the longest prefix of the order that fits, which
            # class_reordered keeps in front (reordered within itself)
            if start is None:
                cut = fitting_prefix(sim.view(), order)
                ordered = class_reordered(sim.view(), order, cut) if class_reorder else order
                start = tuple(ordered[: cut if task == "placement" else ordered.size].tolist())
            self.pending = list(start)
            self.start = start
        self._order = order
        self.num_active = int(order.size)
        self._rank: IntArray | None = None
        self._prepare_head()

    # ------------------------------------------------------------------ queries
    @property
    def order(self) -> IntArray:
        """int64 (A,): the queue order the round was built from (read only)."""
        return self._order

    @property
    def done(self) -> bool:
        """True when nothing is left to decide this round."""
        return self.ended or not self.pending

    @property
    def acted(self) -> bool:
        """The agent placed a job or deferred this round (it was offered a decision)."""
        return self.deferred or bool(self.placed)

    def window(self, size: int) -> list[int]:
        """The first ``size`` pending jobs (window order)."""
        return self.pending[:size]

    def selectable(self, slot: int) -> bool:
        """Whether the job in window slot ``slot`` may be decided now (sticky: only slot 0)."""
        return slot < len(self.pending) and (slot == 0 or not self.sticky)

    def fits(self, job: int) -> bool:
        """Whether ``job`` fits the currently free GPUs (by count)."""
        return self.sim.jobs.num_gpus.item(job) <= self.num_free

    @property
    def can_end(self) -> bool:
        """The agent may end the round: always in the scheduling task; in the placement task
        only when no pending job fits (never, by construction, while jobs are pending)."""
        if self.task == "scheduling":
            return True
        return not any(self.fits(j) for j in self.pending)

    # ------------------------------------------------------------------ actions
    def place(self, job: int, gpus: IntArray) -> None:
        """Give ``gpus`` (int64 (N,), free) to pending ``job``."""
        self.target[gpus] = job
        self.free[gpus] = False
        self.num_free -= gpus.size
        self._running[job] = True
        self.pending.remove(job)
        self.placed.append(job)
        if self.reservation is not None:
            self.reservation.charge(self.sim.view(), job)
        if self.sticky or self.task == "scheduling":  # else nothing to prepare
            self._prepare_head()

    def end(self) -> None:
        """End the round (remaining jobs wait): the agent's deferral, so the next round offers
        its decisions again even if nothing changed."""
        self.ended = True
        self.deferred = True

    # ------------------------------------------------------------------ dynamics
    def _prepare_head(self) -> None:
        """Sticky: make room for the head job by stopping lower-priority running jobs, or end
        the round (head-of-line blocking). Scheduling: end when no pending job fits."""
        if self.sticky:
            self._sticky_head()
        elif self.task == "scheduling" and not any(self.fits(j) for j in self.pending):
            self.ended = True

    def _sticky_head(self) -> None:
        while self.pending and self._running[self.pending[0]]:
            self.pending.pop(0)  # a restored victim is running again
        if not self.pending or self.fits(self.pending[0]):
            return
        head = self.pending[0]
        stopped = self._stop_victims(head)
        if not self.fits(head):
            if not self.sim.config.sticky_keep_victims_stopped:
                for victim, held in stopped:
                    self.target[held] = victim
                    self.free[held] = False
                    self.num_free -= int(held.size)
                    self._running[victim] = True
            self.ended = True

    def _stop_victims(self, head: int) -> list[tuple[int, IntArray]]:
        """Stop running jobs after ``head`` in the order, lowest priority first, until it fits.

        Only the running jobs are visited (at most G), not the whole order; ``pending`` stays
        sorted by rank, so membership and insertion are binary searches.
        """
        stopped: list[tuple[int, IntArray]] = []
        if self._rank is None:  # position of every active job in the order (once a round)
            self._rank = np.zeros(self.sim.jobs.size, np.int64)
            self._rank[self._order] = np.arange(self._order.size)
        rank = self._rank.item
        running = np.unique(self.target[self.target != FREE])
        victims = running[self._rank[running] > rank(head)]
        victims = victims[np.argsort(self._rank[victims])].tolist()
        for victim in reversed(victims):
            if self.fits(head):
                break
            held = np.flatnonzero(self.target == victim)
            self.target[held] = FREE
            self.free[held] = True
            self.num_free += int(held.size)
            self._running[victim] = False
            stopped.append((victim, held))
            at = bisect.bisect_left(self.pending, rank(victim), key=rank)
            if at == len(self.pending) or self.pending[at] != victim:
                self.pending.insert(at, victim)
        return stopped
