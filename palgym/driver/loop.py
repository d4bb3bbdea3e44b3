"""The Python side of the compiled loop: one episode's memos, and the calls between kernels.

:func:`drive_compiled` is :func:`palgym.simulate.drive` for an episode that
:func:`palgym.driver.plan.compiled_plan` serves: the kernel
(:func:`palgym.driver.kernel.run_rounds`) runs the rounds; between its calls the engine admits
arrivals (:meth:`palgym.sim.engine.Simulator.compiled_rounds`), the stall detector checks the
boundary it stopped at, and the progress bar is called at the round it asked for, exactly where
the Python loop does these.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np

from palgym.driver.plan import CompiledPlan, spec_of
from palgym.errors import PalgymError
from palgym.sim.admission import Admission
from palgym.sim.engine import Simulator
from palgym.sim.stall import NEVER_ROUND, StallDetector

AHEAD = 512
"""Background arrival times drawn ahead for one kernel call (it returns when they run out)."""


class _Run:
    """The kernel's arguments for one episode: the plan's arrays and the memos kept from one
    call to the next."""

    def __init__(self, sim: Simulator, plan: CompiledPlan) -> None:
        from palgym.driver.waiting import DUE_AFTER, new_lazy_waiting, promotion_rounds
        from palgym.policies.order_kernel import new_order_memo
        from palgym.policies.place_kernel import new_walk_state, rule_tables
        from palgym.policies.random_placement import mt_stream

        cluster = sim.cluster
        self.spec = spec_of(plan, cluster.gpus_per_node)
        self.thresholds = plan.thresholds
        self.tables = tuple(rule_tables(plan.tables, cluster.num_gpus))
        capacity = sim.jobs.capacity
        self.order_memo = new_order_memo(capacity, cluster.num_gpus)
        self.walk = new_walk_state(cluster.num_gpus, cluster.gpus_per_node, capacity)
        self.memo_valid = np.zeros(1, np.int64)
        self.rng = plan.sampler if isinstance(plan.sampler, random.Random) else None
        self.stream: Any = plan.sampler
        if self.rng is not None:
            self.stream = mt_stream(self.rng, cluster.num_gpus)
        elif self.stream is None:  # a deterministic rule draws nothing: any stream type
            self.stream = mt_stream(random.Random(0), 1)
        self.stop_round, self.stop_after_s = NEVER_ROUND, math.inf
        params = sim.params
        due_after = promotion_rounds(params.round_duration_s, params.starvation_threshold_s)
        self.lazy = new_lazy_waiting(capacity, due_after + 1)
        self.lazy.counts[DUE_AFTER] = due_after
        self.marks = np.zeros(capacity, np.bool_)
        self.held = np.empty(cluster.num_gpus, np.int64)
        self.modes = np.zeros(2, np.int64)

    def fit(self, capacity: int) -> None:
        """Grow the memos with the job table (``capacity`` rows)."""
        from palgym.driver.waiting import grown_lazy_waiting
        from palgym.policies.order_kernel import grown_order_memo
        from palgym.policies.place_kernel import grown_walk_state

        self.order_memo = grown_order_memo(self.order_memo, capacity)
        self.walk = grown_walk_state(self.walk, capacity)
        self.lazy = grown_lazy_waiting(self.lazy, capacity)
        if self.marks.size < capacity:
            self.marks = np.zeros(capacity, np.bool_)

    def __call__(self, state: tuple[object, ...], arrivals: Admission
                 ) -> tuple[tuple[int, ...], int]:
        """One kernel call (what :meth:`Simulator.compiled_rounds` runs): its outcome and the
        background copies it admitted."""
        from palgym.driver.kernel import run_rounds

        background = np.array([0, arrivals.background_count, arrivals.first_copy_id,
                               arrivals.trace.num_jobs, arrivals.trace_admitted], np.int64)
        times = arrivals.background_ahead(AHEAD if arrivals.trace_admitted else 1)
        result: tuple[int, ...] = run_rounds(
            state, float(arrivals.next_arrival_s), self.stop_round, float(self.stop_after_s),
            self.spec, self.thresholds, tuple(self.order_memo), self.tables, tuple(self.walk),
            self.stream, self.memo_valid, times, background,
            (tuple(self.lazy), self.marks, self.held, self.modes))
        return result, int(background[0])

    def close(self) -> None:
        """Write the random stream back to the ``random.Random`` it was read from."""
        if self.rng is not None:
            from palgym.policies.random_placement import write_back

            write_back(self.rng, self.stream)


def drive_compiled(sim: Simulator, plan: CompiledPlan, stall: StallDetector | None = None,
                   progress: Callable[[Simulator], int] | None = None) -> str:
    """:func:`palgym.simulate.drive` on the compiled loop (same arguments, same result, the
    same episode bit for bit).

    Returns:
        ``""`` if every measured job completed, else why the episode stopped.

    Raises:
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (the episode could never end).
        InvalidActionError: for a target the engine rejects.
    """
    from palgym.driver.kernel import IDLE_CLUSTER, REJECTED
    from palgym.sim.step_numba import rejected

    run = _Run(sim, plan)
    next_progress = 0
    try:
        while not sim.done and not sim.truncated:
            if progress is not None and sim.round_index >= next_progress:
                next_progress = progress(sim)
            run.stop_round, run.stop_after_s = _quiet_until(stall, sim)
            if progress is not None:
                run.stop_round = min(run.stop_round, next_progress)
            run.fit(sim.jobs.capacity)
            outcome, code, job, value_1, value_2 = sim.compiled_rounds(run)
            if outcome == IDLE_CLUSTER:
                raise PalgymError(
                    f"{plan.name} placed no job on an idle cluster at t={sim.now_s:g} s "
                    "with no arrivals left: the episode could never end")
            if outcome == REJECTED:
                rejection = rejected(code, job, value_1, value_2).rejection
                raise rejection.error() if rejection else PalgymError("rejected target")
            if stall is not None and (reason := stall.check(sim)):
                return reason
    finally:
        run.close()
    return f"max_rounds ({sim.config.max_rounds}) reached" if sim.truncated else ""


def check_not_stuck(sim: Simulator, name: str) -> None:
    """Raise if placement ``name`` left queued jobs on an idle cluster with no arrivals left
    (the Python loop's check; the compiled loop reports it as
    :data:`palgym.driver.kernel.IDLE_CLUSTER`)."""
    if not sim.has_future_arrivals() and not sim.running_jobs().size and sim.active_jobs().size:
        raise PalgymError(
            f"{name} placed no job on an idle cluster at t={sim.now_s:g} s "
            "with no arrivals left: the episode could never end"
        )


def _quiet_until(stall: Any, sim: Simulator) -> tuple[int, float]:
    """Where ``stall`` can next stop the episode: its ``quiet_until(sim)`` if it has one (as
    :class:`palgym.sim.stall.StallDetector` does), else the next boundary, so that a ``stall``
    with only ``check`` is asked at every round as in the Python loop."""
    if stall is None:
        return NEVER_ROUND, math.inf
    quiet = getattr(stall, "quiet_until", None)
    return quiet(sim) if quiet is not None else (sim.round_index + 1, math.inf)
