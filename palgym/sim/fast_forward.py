"""Idle rounds in one call: ``commit(None)`` + ``advance()`` repeated until something happens.

When a round keeps the allocation and nothing happens in it (no completion, arrival or
starvation promotion), a driver with a static queue order faces the identical decision at the
next boundary, e.g. a sticky queue whose head job does not fit. :func:`idle_rounds` runs such
rounds up to the next event in one compiled loop of the engine's own kernels
(:func:`palgym.sim.kernels.commit` and :func:`palgym.sim.kernels.advance`), so the job columns,
clock and usage counters are bit-for-bit those of the repeated calls
(``tests/test_engine_kernels.py`` compares both). Arrivals are admitted by the engine after the
loop: the loop stops at the first boundary at or after the next arrival, so no earlier boundary
would have admitted anything.
"""

from __future__ import annotations

import math

from palgym.sim.engine import Simulator
from palgym.sim.kernels import advance, commit, njit


def idle_rounds(sim: Simulator) -> int:
    """Repeat ``sim.commit(None); sim.advance()`` until a round has an event
    (``sim.events_since_commit``: a completion, an admission or a promotion), every measured job
    has completed, or ``sim.truncated``.

    Args:
        sim: an engine at a round boundary; compiled engines run the rounds in one call, the
            numpy reference (``compiled=False``) makes the calls themselves.

    Returns:
        The number of rounds run (0 if the episode had already ended).
    """
    rounds = 0
    if not sim._compiled:
        while not (sim.done or sim.truncated):
            sim.commit(None)
            sim.advance()
            rounds += 1
            if sim.events_since_commit:
                break
        return rounds
    if sim.done or sim.truncated:
        return 0
    jobs = sim.jobs
    trace = sim.trace
    next_trace = (float(trace.submit_time_s[sim._next_arrival])
                  if sim._next_arrival < trace.num_jobs else math.inf)
    args = sim._kernel_args
    rounds, now_s, measured_left, event = _idle_loop(
        sim.config.max_rounds - sim.round_index, float(sim.now_s),
        min(next_trace, sim._next_background_s), sim._measured_left, sim._counting_usage,
        jobs.num_measured, sim._admitted, jobs.status, jobs.num_gpus, jobs.perf_class,
        jobs.iteration_time_s, jobs.variability_penalty, jobs.locality_penalty,
        jobs.iteration_time_effective_s, jobs.restart_left_s, jobs.first_start_time_s,
        jobs.num_preemptions, jobs.waiting_s, jobs.priority, jobs.total_iterations,
        jobs.iterations_done, jobs.attained_service_s, jobs.gpu_service_s,
        jobs.completion_time_s, sim.perfvar, sim.node_of_gpu, sim.job_of_gpu, sim._usage, *args,
    )
    sim.now_s = now_s
    sim.round_index += rounds
    if sim._counting_usage:
        sim._usage_rounds += rounds
    sim._measured_left = measured_left
    sim.events_since_commit = bool(event)
    sim._admit()
    return int(rounds)


@njit(cache=True, nogil=True, error_model="numpy")
def _idle_loop(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    max_rounds, now_s, next_arrival_s, measured_left, count_usage, num_measured, admitted,
    status, num_gpus, perf_class, iteration_time_s, variability_penalty, locality_penalty,
    iteration_time_effective_s, restart_left_s, first_start_time_s, num_preemptions,
    waiting_s, priority, total_iterations, iterations_done, attained_service_s, gpu_service_s,
    completion_time_s, perfvar, node_of_gpu, job_of_gpu, usage,
    larger_rule, gpus_per_node, lf_by_class, restart_cost_s, round_s, starvation, threshold_s,
    promoted_priority,
):
    """The rounds of :func:`idle_rounds`: per round the waiting accounting of
    ``commit(None)`` (if ``starvation``), then ``advance``'s progress, usage and completions at
    ``now_s + round_s``. Stops after a round with a promotion or completion, at the first
    boundary >= ``next_arrival_s``, when no measured job is left, or after ``max_rounds``.

    Returns:
        (rounds, now_s, measured_left, event): the rounds run, the new boundary (s), the
        measured jobs left and whether the last round had a promotion or completion.
    """
    rounds = 0
    event = False
    while rounds < max_rounds:
        promoted = False
        if starvation:
            promoted = commit(
                job_of_gpu, job_of_gpu, False, admitted, now_s, status, num_gpus, perf_class,
                iteration_time_s, variability_penalty, locality_penalty,
                iteration_time_effective_s, restart_left_s, first_start_time_s,
                num_preemptions, waiting_s, priority, perfvar, node_of_gpu, larger_rule,
                gpus_per_node, lf_by_class, restart_cost_s, round_s, starvation, threshold_s,
                promoted_priority,
            )[4]
        now_s = now_s + round_s
        finished, measured = advance(
            admitted, now_s, count_usage, num_measured, status, num_gpus, total_iterations,
            iterations_done, attained_service_s, gpu_service_s, variability_penalty,
            locality_penalty, iteration_time_effective_s, restart_left_s, completion_time_s,
            job_of_gpu, usage, restart_cost_s, round_s,
        )
        rounds += 1
        measured_left -= measured
        event = promoted or finished.size > 0
        if event or now_s >= next_arrival_s or measured_left == 0:
            break
    return rounds, now_s, measured_left, event
