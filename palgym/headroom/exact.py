"""Exact optima of small episodes, with OR-Tools CP-SAT (the ``exact`` extra; imported only
when called).

The model (:mod:`palgym.headroom.model`) holds the rules of docs/PAL_MODEL.md sections 1-3
for a static world without restart cost or background jobs, the ``default`` preset's engine:
rounds, gang scheduling, per-GPU slowdowns (a job runs at its slowest GPU's pace), the
locality penalty, free preemption and migration at round boundaries.

**Exactness.** :func:`solve_exact` solves the relaxed model (progress rounded up) and replays
its schedule through the engine; when the replay's average JCT equals the relaxed optimum,
that value is proven optimal and the replayed schedule attains it. Otherwise it solves the
restricted model (progress rounded down) as well and reports the interval.

**Horizon.** With U the sum of completion boundaries of a known schedule (the best of a few
heuristics, or one given) and ``e_k = a_k + k_k`` each job's earliest completion
(:mod:`palgym.headroom.bound`), an optimal schedule completes job j by ``U - sum_{k != j}
e_k``, so ``H_j`` = that value loses no optimum.

Reference for the approach (time-indexed Boolean models of preemptive scheduling solved by
CP-SAT): Google OR-Tools, "Scheduling" guide, and the job-shop benchmarks' practice of
reporting each policy's gap to the CP-SAT optimum."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError, PalgymError
from palgym.headroom.bound import admit_rounds, fastest_iteration_time_s, min_rounds
from palgym.headroom.model import allocations_of, build_model
from palgym.headroom.schedule import record_allocations
from palgym.schedule_record import ScheduleRecord, replay_allocations
from palgym.sim.types import IntArray
from palgym.simulate import Episode, EpisodeResult


@dataclass(frozen=True)
class ExactResult:
    """The outcome of :func:`solve_exact`.

    Attributes:
        status: ``"optimal"`` (proven: the replay attains the relaxed model's optimum),
            or ``"feasible"`` (a schedule and a lower bound that differ: time limit or
            rounding).
        avg_jct_s: the replayed average JCT of the best schedule found (s).
        lower_bound_s: the best proven lower bound of the average JCT (s).
        schedule: the best schedule's record (:mod:`palgym.schedule_record`).
        wall_s: solver seconds.
        horizon_rounds: the largest per-job horizon H_j used.
    """

    status: str
    avg_jct_s: float
    lower_bound_s: float
    schedule: ScheduleRecord
    wall_s: float
    horizon_rounds: int


def check_exact_world(episode: Episode) -> None:
    """Refuse an episode the model does not hold exactly.

    Raises:
        ConfigError: naming the option: a dynamic truth, a restart cost, background jobs.
    """
    config = episode.config
    reasons = [why for why, bad in (
        ("a dynamic truth (config.dynamics)", config.dynamics is not None),
        ("a restart cost (restart_cost_s > 0)", config.restart_cost_s > 0),
        ("background jobs (background_jobs_per_hour > 0)", config.background_jobs_per_hour > 0),
    ) if bad]
    if reasons:
        raise ConfigError("exact model: the world has " + ", ".join(reasons)
                          + "; it models static worlds without them (the default preset)")


def horizons(episode: Episode, upper_sum_rounds: int) -> np.ndarray:
    """int64 (J,): per-job horizons ``H_j`` (module docstring) from ``upper_sum_rounds``, the
    sum of completion boundaries of a known schedule."""
    trace, r = episode.trace, float(episode.config.round_duration_s)
    admit = admit_rounds(trace.submit_time_s, r)
    earliest = admit + min_rounds(trace.total_iterations, fastest_iteration_time_s(episode), r)
    return np.asarray(upper_sum_rounds - (earliest.sum() - earliest), np.int64)


def _completion_sum_rounds(episode: Episode, completion_time_s: np.ndarray) -> int:
    r = float(episode.config.round_duration_s)
    return int(np.sum(np.rint(completion_time_s / r)))


def _objective_s(episode: Episode, completion_rounds_sum: float) -> float:
    trace = episode.trace
    r = float(episode.config.round_duration_s)
    return (completion_rounds_sum * r - float(np.sum(trace.submit_time_s))) / trace.num_jobs


def solve_exact(episode: Episode, *, upper: ScheduleRecord | None = None,
                time_limit_s: float = 60.0, workers: int = 1, seed: int = 0) -> ExactResult:
    """The optimal average JCT of a small episode, with a schedule attaining it.

    Args:
        episode: a static episode (:func:`check_exact_world`), a few GPUs and jobs.
        upper: a known schedule's record (its replay sets the horizon and is the solver's
            hint); None: the best of ``srsf``/``srtf``/``fifo`` x ``pal+backfill``/
            ``pm-first+backfill``/``packed-non-sticky+backfill``.
        time_limit_s: the solver's limit per model (s).
        workers: CP-SAT search workers (``num_workers``; 1 is deterministic).
        seed: CP-SAT ``random_seed``.

    Returns:
        The result (module docstring, "Exactness"); its schedule replays
        (:func:`palgym.schedule_record.replay_schedule`) to ``avg_jct_s``.

    Raises:
        ConfigError: for a world the model does not hold.
        PalgymError: if no heuristic finishes the episode and no ``upper`` is given.
        ImportError: without OR-Tools (``pip install palgym[exact]``).
    """
    from ortools.sat.python import cp_model

    check_exact_world(episode)
    upper_result, best_record, hint = _upper(episode, upper)
    upper_rounds = _completion_sum_rounds(episode, upper_result.records.completion_time_s)
    horizon = horizons(episode, upper_rounds)
    best_value = upper_result.metrics.avg_jct_s
    started = time.perf_counter()
    lower = -math.inf
    for rounding in ("ceil", "floor"):
        model, variables = build_model(episode, horizon, rounding, hint=hint)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = float(time_limit_s)
        solver.parameters.num_workers = int(workers)
        solver.parameters.random_seed = int(seed)
        status = solver.solve(model)
        base = float(np.sum(variables["admit"])) + episode.trace.num_jobs
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            continue
        if rounding == "ceil":
            lower = max(lower, _objective_s(episode, base + solver.best_objective_bound))
        allocations = allocations_of(solver, episode, variables)
        try:  # the relaxed model's schedule may fall short of a job's work in the engine
            played = record_allocations(episode, allocations)
        except PalgymError:
            continue
        if (not played.result.metrics.truncated
                and played.result.metrics.avg_jct_s <= best_value):
            best_record, best_value = played.record, played.result.metrics.avg_jct_s
            hint = allocations
        if best_value <= lower + 1e-9 * abs(lower):
            break
    wall = time.perf_counter() - started
    proven = best_value <= lower + 1e-9 * abs(lower)
    return ExactResult("optimal" if proven else "feasible", best_value, lower, best_record,
                       wall, int(np.max(horizon)))


def _upper(episode: Episode, upper: ScheduleRecord | None
           ) -> tuple[EpisodeResult, ScheduleRecord, IntArray]:
    """A known schedule: its result, its record and its allocations (the best heuristic if
    none given)."""
    from palgym.schedule_record import record_episode

    if upper is None:
        best = None
        for order in ("srsf", "srtf", "fifo"):
            for policy in ("pal+backfill", "pm-first+backfill", "packed-non-sticky+backfill"):
                run = record_episode(episode, policy, order, driver="python")
                if run.result.metrics.truncated:
                    continue
                if best is None or run.result.metrics.avg_jct_s < best.result.metrics.avg_jct_s:
                    best = run
        if best is None:
            raise PalgymError("exact model: no heuristic finished the episode")
        upper = best.record
    result, allocations = replay_allocations(episode, upper)
    if result.metrics.truncated:
        raise PalgymError("exact model: the given schedule leaves jobs unfinished")
    return result, upper, allocations
