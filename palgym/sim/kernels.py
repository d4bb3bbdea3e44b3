"""Compiled (numba) kernels of the engine's per-round work: commit a placement, advance a round.

:meth:`~palgym.sim.engine.Simulator.commit` and :meth:`~palgym.sim.engine.Simulator.advance`
each make one call here instead of a dozen small numpy operations. The engine's numpy code stays
the reference (used without numba, or with ``Simulator(..., compiled=False)``);
``tests/test_engine_kernels.py`` checks that both paths leave every job column, the allocation
and the usage counters bit-for-bit identical: every float is computed with the same operations
in the same order (no fast-math, no fused multiply-add; divisions as numpy's, ``error_model=
"numpy"``), and the one float reduction, the effective GPU-rounds of a round, repeats the
pairwise summation of ``np.sum`` (:func:`palgym.sim.summation.pairwise_sum`).

Arrays are the :class:`palgym.sim.jobs.JobTable` columns as they are at call time (background
copies grow them), indexed by job; only rows ``0..admitted-1`` are used. Dtypes: status int8
(:class:`palgym.sim.types.JobStatus`), num_gpus, perf_class, num_preemptions and priority
int64, the rest float64; times in s.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from palgym.errors import InvalidActionError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import LocalityRule, SimConfig
from palgym.sim.jobs import PROMOTED_PRIORITY
from palgym.sim.summation import pairwise_sum
from palgym.sim.types import FREE, NUM_PERF_CLASSES, IntArray, JobStatus

if TYPE_CHECKING:
    from palgym.sim.engine import Simulator

try:  # numba is a dependency; the reference path keeps the engine usable without it
    from numba import njit
except ImportError:  # pragma: no cover - exercised only where numba is missing
    AVAILABLE = False

    def njit(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]  # noqa: D103
        return lambda function: function
else:
    AVAILABLE = True

QUEUED = int(JobStatus.QUEUED)
RUNNING = int(JobStatus.RUNNING)
COMPLETED = int(JobStatus.COMPLETED)

# commit outcomes: allocation unchanged / changed, or target rejected (nothing modified)
UNCHANGED, CHANGED, BAD_INDEX, INACTIVE, BAD_COUNT = 0, 1, -1, -2, -3


def config_args(config: SimConfig, cluster: ClusterSpec) -> tuple[Any, ...]:
    """The last arguments of :func:`commit`, fixed for an episode (built once per simulator);
    those of :func:`advance` are ``[3:5]``."""
    by_class = config.locality_penalty_by_class or [config.locality_penalty] * NUM_PERF_CLASSES
    threshold = config.starvation_threshold_s
    return (
        config.locality_rule is LocalityRule.LARGER_THAN_NODE, cluster.gpus_per_node,
        np.array(by_class, dtype=np.float64), float(config.restart_cost_s),
        float(config.round_duration_s), threshold is not None,
        math.inf if threshold is None else float(threshold), PROMOTED_PRIORITY,
    )


def commit_step(sim: Simulator, target: IntArray | None) -> bool:
    """:meth:`Simulator.commit <palgym.sim.engine.Simulator.commit>` in one :func:`commit` call:
    same results, same exceptions (checked in the same order, same messages)."""
    if target is None and sim.config.starvation_threshold_s is None:
        sim.events_since_commit = False  # nothing else to do
        return False
    if target is not None:
        target = np.asarray(target, dtype=np.int64)
        if target.shape != sim.job_of_gpu.shape:
            raise InvalidActionError(f"target must have shape {sim.job_of_gpu.shape}")
    jobs = sim.jobs
    code, job, value_1, value_2, promoted = commit(
        sim.job_of_gpu if target is None else target, sim.job_of_gpu, target is not None,
        sim._admitted, float(sim.now_s), jobs.status, jobs.num_gpus, jobs.perf_class,
        jobs.iteration_time_s, jobs.variability_penalty, jobs.locality_penalty,
        jobs.iteration_time_effective_s, jobs.restart_left_s, jobs.first_start_time_s,
        jobs.num_preemptions, jobs.waiting_s, jobs.priority, sim.perfvar, sim.node_of_gpu,
        *sim._kernel_args,
    )
    if code == BAD_INDEX:
        raise InvalidActionError(f"target names unknown or unadmitted job index {job}")
    if code == INACTIVE:
        raise InvalidActionError(f"job index {job} is not active (status {value_1})")
    if code == BAD_COUNT:
        raise InvalidActionError(f"job index {job} needs {value_1} GPUs, target gives {value_2}")
    if code == CHANGED:
        sim.job_of_gpu = target.copy()  # type: ignore[union-attr]
    sim.events_since_commit = bool(promoted)
    return bool(code == CHANGED)


def advance_step(sim: Simulator) -> IntArray:
    """:meth:`Simulator.advance <palgym.sim.engine.Simulator.advance>` with progress, usage and
    completions in one :func:`advance` call (arrivals are admitted by the engine)."""
    jobs = sim.jobs
    now_s = sim.now_s + sim.config.round_duration_s
    finished, measured = advance(
        sim._admitted, float(now_s), sim._counting_usage, jobs.num_measured, jobs.status,
        jobs.num_gpus, jobs.total_iterations, jobs.iterations_done, jobs.attained_service_s,
        jobs.gpu_service_s, jobs.variability_penalty, jobs.locality_penalty,
        jobs.iteration_time_effective_s, jobs.restart_left_s, jobs.completion_time_s,
        sim.job_of_gpu, sim._usage, *sim._kernel_args[3:5],
    )
    if sim._counting_usage:
        sim._usage_rounds += 1
    sim.now_s = now_s
    sim.round_index += 1
    if finished.size:
        sim._measured_left -= int(measured)
        sim.events_since_commit = True
    sim._admit()
    return finished  # type: ignore[no-any-return]


@njit(cache=True, nogil=True, error_model="numpy")
def commit(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    target, job_of_gpu, apply, admitted, now_s, status, num_gpus, perf_class, iteration_time_s,
    variability_penalty, locality_penalty, iteration_time_effective_s, restart_left_s,
    first_start_time_s, num_preemptions, waiting_s, priority, perfvar, node_of_gpu,
    larger_rule, gpus_per_node, lf_by_class, restart_cost_s, round_s, starvation, threshold_s,
    promoted_priority,
):
    """Apply ``target`` (if ``apply``), then account waiting time (if ``starvation``).

    Jobs whose GPU set changes are stopped (a preemption if running) and, if they hold GPUs in
    ``target``, started with their penalties recomputed (Source: PAL artifact ``simulator.py``
    progress model, ``T_eff = (variability x locality) x T_it``, variability = max perfvar of
    the job's class over its GPUs, locality = lf of the class if the set spans nodes, or by
    option if the job is larger than a node, else 1.0). Waiting: a job queued now and not
    running before waits one more round (``waiting_s += round_s``), any other job's count is
    reset; a waiting job reaching ``threshold_s`` gets ``promoted_priority`` (artifact
    ``blox_manager.exec_jobs`` starvation rule).

    Args:
        target: int64 (G,) job index per GPU or FREE (-1); ignored unless ``apply``.
        job_of_gpu: int64 (G,) current allocation (not modified; the caller replaces it).
        apply: bool. admitted: jobs ``0..admitted-1`` are admitted. now_s: t (s).
        status .. priority: the job table's columns (see the module docstring).
        perfvar: float64 (C, G) variability values. node_of_gpu: int64 (G,).
        larger_rule: bool, the locality penalty is paid by jobs larger than a node (else by sets
            spanning nodes). gpus_per_node: G_n. lf_by_class: float64 (C,) penalty per class.
        restart_cost_s, round_s, threshold_s: s. starvation: bool, account waiting.
        promoted_priority: int. (The arguments from ``larger_rule`` on: :func:`config_args`.)

    Returns:
        (code, job, value_1, value_2, promoted): code :data:`UNCHANGED`, :data:`CHANGED` or an
        error code; for errors the offending job (the smallest bad index; the first offending
        touched job in ascending index, status checked before count) and its status, or its
        ``num_gpus`` and the GPUs ``target`` gives it. ``promoted``: a job was promoted.
    """
    touched = np.empty(0, np.int64)  # jobs whose GPU set changed, ascending
    before = np.empty(0, np.int8)  # their status before
    code, job, value_1, value_2 = UNCHANGED, -1, 0, 0
    if apply:
        code, job, value_1, value_2, touched, before = _apply(
            target, job_of_gpu, admitted, status, num_gpus, perf_class, iteration_time_s,
            variability_penalty, locality_penalty, iteration_time_effective_s, restart_left_s,
            first_start_time_s, num_preemptions, perfvar, node_of_gpu, larger_rule,
            gpus_per_node, lf_by_class, restart_cost_s, now_s,
        )
        if code < 0:
            return code, job, value_1, value_2, False
    promoted = False
    k = 0
    for j in range(admitted if starvation else 0):
        was_running = status[j] == RUNNING
        if k < touched.size and touched[k] == j:
            was_running = before[k] == RUNNING
            k += 1
        if status[j] == QUEUED and not was_running:
            waiting_s[j] += round_s
            if waiting_s[j] >= threshold_s and priority[j] != promoted_priority:
                priority[j] = promoted_priority
                promoted = True
        else:
            waiting_s[j] = 0.0
    return code, job, value_1, value_2, promoted


@njit(cache=True, nogil=True, error_model="numpy")
def _apply(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    target, job_of_gpu, admitted, status, num_gpus, perf_class, iteration_time_s,
    variability_penalty, locality_penalty, iteration_time_effective_s, restart_left_s,
    first_start_time_s, num_preemptions, perfvar, node_of_gpu, larger_rule, gpus_per_node,
    lf_by_class, restart_cost_s, now_s,
):
    """Stop and start the jobs whose GPU sets change: (code, job, value_1, value_2) as
    :func:`commit`, then the touched jobs (int64, ascending) and their status before (int8).
    All checks come before any write."""
    changed, bad = _scan(target, job_of_gpu, admitted)
    touched = _touched(target, job_of_gpu) if changed and bad == FREE else np.empty(0, np.int64)
    before = np.empty(touched.size, np.int8)
    if not changed:
        return UNCHANGED, -1, 0, 0, touched, before
    if bad != FREE:
        return BAD_INDEX, bad, 0, 0, touched, before
    held, variability, spans = _gather(target, touched, perf_class, perfvar, node_of_gpu)
    code, job, value_1, value_2 = _first_error(touched, held, status, num_gpus)
    if code != CHANGED:
        return code, job, value_1, value_2, touched, before
    for k in range(touched.size):
        j = touched[k]
        before[k] = status[j]
        if status[j] == RUNNING:
            num_preemptions[j] += 1
        if held[k] == 0:
            status[j] = QUEUED
            iteration_time_effective_s[j] = np.inf
            continue
        pays = num_gpus[j] > gpus_per_node if larger_rule else spans[k]
        locality = lf_by_class[perf_class[j]] if pays else 1.0
        variability_penalty[j] = variability[k]
        locality_penalty[j] = locality
        iteration_time_effective_s[j] = (variability[k] * locality) * iteration_time_s[j]
        status[j] = RUNNING
        restart_left_s[j] = restart_cost_s
        if np.isnan(first_start_time_s[j]):
            first_start_time_s[j] = now_s
    return CHANGED, -1, 0, 0, touched, before


@njit(cache=True, nogil=True, error_model="numpy")
def _scan(target, job_of_gpu, admitted):  # type: ignore[no-untyped-def]
    """(any GPU changes owner, smallest new owner that is neither FREE nor admitted, or FREE)."""
    changed = False
    bad = FREE
    for g in range(target.size):
        new = target[g]
        if new != job_of_gpu[g]:
            changed = True
            if new != FREE and (new < 0 or new >= admitted) and (bad == FREE or new < bad):
                bad = new
    return changed, bad


@njit(cache=True, nogil=True, error_model="numpy")
def _touched(target, job_of_gpu):  # type: ignore[no-untyped-def]
    """int64, ascending: the distinct jobs holding a GPU that changes owner, before or after."""
    jobs = np.empty(2 * target.size, np.int64)
    n = 0
    for g in range(target.size):
        if target[g] != job_of_gpu[g]:
            for j in (job_of_gpu[g], target[g]):
                if j != FREE:
                    jobs[n] = j
                    n += 1
    jobs = np.sort(jobs[:n])
    distinct = 0
    for i in range(n):
        if i == 0 or jobs[i] != jobs[i - 1]:
            jobs[distinct] = jobs[i]
            distinct += 1
    return jobs[:distinct]


@njit(cache=True, nogil=True, error_model="numpy")
def _first_error(touched, held, status, num_gpus):  # type: ignore[no-untyped-def]
    """The first touched job (ascending index) that is not active, or else is given a GPU count
    other than 0 and ``num_gpus``: (code, job, value_1, value_2) as :func:`commit`, or
    (:data:`CHANGED`, -1, 0, 0) if there is none."""
    for k in range(touched.size):
        j = touched[k]
        if status[j] != RUNNING and status[j] != QUEUED:
            return INACTIVE, j, np.int64(status[j]), np.int64(0)
        if held[k] != 0 and held[k] != num_gpus[j]:
            return BAD_COUNT, j, num_gpus[j], held[k]
    return CHANGED, np.int64(-1), np.int64(0), np.int64(0)


@njit(cache=True, nogil=True, error_model="numpy")
def _gather(target, touched, perf_class, perfvar, node_of_gpu):  # type: ignore[no-untyped-def]
    """Per touched job (int64 ascending), over its GPUs in ``target``: their count (int64), the
    max perfvar of its class (float64; NaN propagates, as ``np.maximum``), whether they span
    nodes (bool)."""
    held = np.zeros(touched.size, np.int64)
    variability = np.full(touched.size, -np.inf)
    spans = np.zeros(touched.size, np.bool_)
    node = np.zeros(touched.size, np.int64)
    for g in range(target.size):
        j = target[g]
        k = np.searchsorted(touched, j)
        if j == FREE or k == touched.size or touched[k] != j:
            continue
        value = perfvar[perf_class[j], g]
        if value > variability[k] or value != value:
            variability[k] = value
        if held[k] == 0:
            node[k] = node_of_gpu[g]
        elif node_of_gpu[g] != node[k]:
            spans[k] = True
        held[k] += 1
    return held, variability, spans


@njit(cache=True, nogil=True, error_model="numpy")
def advance(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    admitted, new_now_s, count_usage, num_measured, status, num_gpus, total_iterations,
    iterations_done, attained_service_s, gpu_service_s, variability_penalty, locality_penalty,
    iteration_time_effective_s, restart_left_s, completion_time_s, job_of_gpu, usage,
    restart_cost_s, round_s,
):
    """Account the round [t, t + round_s) of the running jobs and complete the finished ones.

    Per running job (Source: PAL artifact ``simulator.py`` progress model, operation order of
    ``grpc_client_rm.get_metrics``): ``lost = min(restart_left_s, round_s)`` and ``useful =
    round_s - lost`` if ``restart_cost_s > 0`` (else ``useful = round_s``), ``iterations_done =
    useful / T_eff + iterations_done``, ``attained_service_s += round_s``, ``gpu_service_s +=
    round_s x num_gpus``. If ``count_usage``: ``usage[0] += sum num_gpus`` (allocated
    GPU-rounds) and ``usage[1] += sum num_gpus / (variability x locality)`` (effective), summed
    as ``np.sum`` does. A running job with ``iterations_done >= total_iterations`` completes at
    ``new_now_s``: status COMPLETED, T_eff inf, its GPUs in ``job_of_gpu`` (int64 (G,),
    modified in place) freed.

    Args:
        admitted: jobs ``0..admitted-1`` are admitted. status .. completion_time_s: job columns.
        usage: float64 (2,), modified in place. count_usage: bool.
        round_s, restart_cost_s, new_now_s: s (new_now_s = t + round_s).
        num_measured: trace jobs (indices below it are measured).

    Returns:
        (finished, measured): int64 (F,) indices of the completed jobs, ascending, and how many
        of them are measured.
    """
    effective = np.empty(admitted)
    finished = np.empty(admitted, np.int64)
    num_running = 0
    num_finished = 0
    allocated = 0
    for j in range(admitted):
        if status[j] != RUNNING:
            continue
        useful = round_s
        if restart_cost_s > 0:
            left = restart_left_s[j]
            lost = round_s if round_s < left else left  # np.minimum, NaN kept
            restart_left_s[j] = left - lost
            useful = round_s - lost
        iterations_done[j] = useful / iteration_time_effective_s[j] + iterations_done[j]
        attained_service_s[j] += round_s
        gpu_service_s[j] += round_s * num_gpus[j]
        allocated += num_gpus[j]
        effective[num_running] = num_gpus[j] / (variability_penalty[j] * locality_penalty[j])
        num_running += 1
        if iterations_done[j] >= total_iterations[j]:
            finished[num_finished] = j
            num_finished += 1
    if count_usage and num_running:
        usage[0] += allocated
        usage[1] += 0.0 + pairwise_sum(effective, num_running)
    finished = finished[:num_finished].copy()
    measured = _complete(finished, status, completion_time_s, iteration_time_effective_s,
                         job_of_gpu, new_now_s, num_measured)
    return finished, measured


@njit(cache=True, nogil=True, error_model="numpy")
def _complete(finished, status, completion_time_s, iteration_time_effective_s, job_of_gpu,  # type: ignore[no-untyped-def]  # noqa: E501
              now_s, num_measured):
    """Complete the jobs ``finished`` (int64 (F,), ascending) at ``now_s`` and free their GPUs;
    returns how many of them are measured."""
    measured = 0
    for j in finished:
        status[j] = COMPLETED
        completion_time_s[j] = now_s
        iteration_time_effective_s[j] = np.inf
        if j < num_measured:
            measured += 1
    if finished.size:
        for g in range(job_of_gpu.size):
            j = job_of_gpu[g]
            if j != FREE and status[j] == COMPLETED:
                k = np.searchsorted(finished, j)
                if k < finished.size and finished[k] == j:
                    job_of_gpu[g] = FREE
    return measured
