"""Backfilling: what a placement walk does with the jobs behind one that does not fit.

Modes (PAL_MODEL section 4, "Backfilling"):

- ``none`` (the artifact): the walk stops at the first job it cannot place (head-of-line
  blocking).
- ``first-fit``: the walk goes on; every later job that fits the GPUs still free starts.
- ``easy`` (EASY backfilling): the first job that does not fit (the head) gets a reservation:
  the shadow time, the earliest time enough GPUs are free for it if the jobs holding GPUs in
  the round's allocation so far run to the end at their remaining times as the scheduler knows
  them (:func:`palgym.policies.durations.remaining_run_time_s`), and the extra GPUs, those free
  then beyond the head's need. A later job starts only if it fits and does not delay the head: it
  ends by the shadow time, or it uses only extra GPUs (which it then consumes). One
  reservation per round (the head's).

The walk skips at most ``depth`` jobs (those that do not fit or that EASY refuses) and stops at
the next one: a lookahead limit as schedulers have (e.g. Slurm's ``bf_max_job_test``), and the
env's window of K slots, which makes the env agents exact (default :data:`DEFAULT_DEPTH` = the
env's default K).

Names: ``NAME+backfill`` is placement NAME with first-fit backfill, ``NAME+easy`` with EASY
backfill, plain ``NAME`` without (e.g. ``pal+easy``, ``packed-sticky+backfill``).

Source: Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; Mu'alem and Feitelson,
"Utilization, predictability, workloads, and user runtime estimates in scheduling the IBM SP2
with backfilling", IEEE TPDS 12(6), 2001 (EASY: shadow time and extra nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.policies.durations import (
    CLAIRVOYANT,
    EASY_INSTEAD,
    Durations,
    remaining_run_time_one_s,
    remaining_run_time_s,
)
from palgym.sim.config import Choice
from palgym.sim.types import FREE, IntArray
from palgym.sim.views import SimView


class BackfillMode(Choice):
    """What a placement walk does behind a job that does not fit (the module docstring)."""

    NONE = "none"
    FIRST_FIT = "first-fit"
    EASY = "easy"


BACKFILL_MODES: tuple[str, ...] = tuple(mode.value for mode in BackfillMode)
"""Backfill modes, by the names of ``make_placement(..., backfill=)``."""
SUFFIXES: dict[str, str] = {"first-fit": "+backfill", "easy": "+easy"}
"""Name suffix of each backfilling mode in CLIs and tables."""
DEFAULT_DEPTH = 16
"""Jobs a backfilling walk may skip before it stops (the env's default window, K = 16)."""


def check_mode(backfill: str) -> str:
    """``backfill`` if it is a known mode.

    Raises:
        ConfigError: for an unknown mode (listing the known ones).
    """
    if backfill not in BACKFILL_MODES:
        raise ConfigError(f"unknown backfill {backfill!r}; known: {', '.join(BACKFILL_MODES)}")
    return backfill


def split_name(name: str) -> tuple[str, str]:
    """``("pal", "easy")`` for ``"pal+easy"``; ``(name, "none")`` without a suffix."""
    for mode, suffix in SUFFIXES.items():
        if name.endswith(suffix):
            return name[: -len(suffix)], mode
    return name, "none"


def with_backfill(name: str, backfill: str) -> str:
    """The table name of placement ``name`` with ``backfill`` (``"none"``: ``name``).

    Raises:
        ConfigError: for an unknown mode.
    """
    check_mode(backfill)
    return name if backfill == "none" else name + SUFFIXES[backfill]


@dataclass
class Reservation:
    """The head job's EASY reservation, relative to the round's start.

    Attributes:
        head: the job reserved for.
        shadow_s: seconds from now until enough GPUs are free for it (inf: never, by the
            holders alone).
        extra: GPUs free at the shadow time beyond the head's need (decreases as backfilled
            jobs that outlast the shadow time take them).
        durations: what the scheduler knows of job durations (the remaining times it reads).
    """

    head: int
    shadow_s: float
    extra: int
    durations: Durations = CLAIRVOYANT

    def allows(self, sim: SimView, job: int) -> bool:
        """``job`` (if it fits now) does not delay the head: it ends by the shadow time or
        needs at most the extra GPUs."""
        if int(sim.jobs.num_gpus[job]) <= self.extra:
            return True
        return remaining_run_time_one_s(sim, job, self.durations) <= self.shadow_s

    def charge(self, sim: SimView, job: int) -> None:
        """Record that ``job`` starts now: one that outlasts the shadow time takes extra GPUs.

        Raises:
            ValueError: if the reservation does not allow ``job`` (a caller's bug).
        """
        if remaining_run_time_one_s(sim, job, self.durations) <= self.shadow_s:
            return
        need = int(sim.jobs.num_gpus[job])
        if need > self.extra:
            raise ValueError(f"job {job} would delay the reservation of job {self.head}")
        self.extra -= need


def reserve(
    sim: SimView, head: int, target: IntArray, durations: Durations = CLAIRVOYANT
) -> Reservation:
    """The EASY reservation of ``head`` given the round's allocation so far.

    The jobs holding GPUs in ``target`` are taken to end at their remaining times, earliest
    first (ties: lower job index first); the shadow time is when the free GPUs first reach
    the head's need N, and extra = free GPUs then - N.

    Args:
        sim: the simulation's view.
        head: the job that does not fit.
        target: int64 (G,) the round's allocation so far (job index or FREE).
        durations: what the scheduler knows of job durations.

    Returns:
        The reservation (shadow 0 and extra = free - N if N GPUs are already free).
    """
    need = int(sim.jobs.num_gpus[head])
    free = int(np.count_nonzero(target == FREE))
    if free >= need:
        return Reservation(head, 0.0, free - need, durations)
    holders = np.unique(target[target != FREE])
    ends = remaining_run_time_s(sim, holders, durations)
    order = np.argsort(ends, kind="stable")
    freed = free + np.cumsum(sim.jobs.num_gpus[holders][order])
    enough = np.flatnonzero(freed >= need)
    if not enough.size:  # cannot happen for a job that fits the cluster
        return Reservation(head, math.inf, 0, durations)
    first = int(enough[0])
    return Reservation(head, float(ends[order][first]), int(freed[first]) - need, durations)


@dataclass(frozen=True)
class Backfill:
    """A walk's backfilling: ``mode`` (``none`` | ``first-fit`` | ``easy``) and ``depth``, the
    jobs it may skip before it stops (see :mod:`palgym.policies.backfill`)."""

    mode: BackfillMode = BackfillMode.NONE
    depth: int = DEFAULT_DEPTH
    durations: Durations = CLAIRVOYANT
    """What EASY's reservations know of job durations (``unknown`` refuses EASY)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", BackfillMode(check_mode(self.mode)))
        if self.mode is BackfillMode.EASY:
            self.durations.require_known("EASY backfilling", EASY_INSTEAD)
        if self.depth < 1:
            raise ValueError(f"backfill depth must be >= 1, got {self.depth}")


NO_BACKFILL = Backfill()
