"""The simulation state as named bundles of arrays, the form both step backends take.

:class:`~palgym.sim.engine.Simulator` owns one :class:`SimState` and one :class:`KernelParams`
and hands them to a step backend (:mod:`palgym.sim.step_numpy` or :mod:`palgym.sim.step_numba`,
both ``commit(state, params, target)``, ``advance(state, params)`` and ``idle_rounds(state,
params, next_arrival_s)``). Every bundle is a NamedTuple of numpy arrays, which numba takes in
nopython mode; the backends update the arrays in place, so a state stays the same object for an
episode except when the job table grows (background copies, :func:`job_columns` rebuilds the
bundle). Scalars that change (the clock, the counters) are array entries for that reason.

Dimension names: G GPUs, C perf classes, J job-table rows (trace jobs, then background copies;
only rows ``0..admitted-1`` are admitted).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np

from palgym.errors import InvalidActionError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import LocalityRule, SimConfig
from palgym.sim.jobs import PROMOTED_PRIORITY, JobColumns, JobTable
from palgym.sim.types import FREE, FloatArray, IntArray


class JobBlocks(NamedTuple):
    """The :class:`~palgym.sim.jobs.JobTable`'s storage: the same columns as
    :class:`JobColumns`, as three arrays (what a compiled kernel is handed; see
    :func:`columns_of`).

    Attributes:
        float_columns: float64 (13, J), rows in :data:`palgym.sim.jobs.FLOAT_COLUMNS` order.
        int_columns: int64 (5, J), rows in :data:`palgym.sim.jobs.INT_COLUMNS` order.
        status: int8 (J,).
    """

    float_columns: FloatArray
    int_columns: IntArray
    status: np.ndarray


def columns_of(float_columns: FloatArray, int_columns: IntArray, status: np.ndarray) -> JobColumns:
    """The :class:`JobColumns` that are rows of a :class:`JobBlocks` (views, nothing copied).

    Written for numba too (:mod:`palgym.sim.step_numba` compiles it as is); the row numbers
    follow :data:`palgym.sim.jobs.FLOAT_COLUMNS` and :data:`~palgym.sim.jobs.INT_COLUMNS`
    (``tests/test_engine_kernels.py`` checks every column against the table's).
    """
    floats, ints = float_columns, int_columns
    return JobColumns(
        ints[0], floats[0], ints[1], floats[1], floats[2], ints[2], status, floats[3],
        floats[4], floats[5], floats[6], floats[7], ints[3], floats[8], floats[9], floats[10],
        floats[11], floats[12], ints[4],
    )


class Allocation(NamedTuple):
    """The GPUs: who holds each, where it is, how fast it runs each perf class.

    Attributes:
        job_of_gpu: int64 (G,), job index per GPU or FREE (-1); updated in place by commit and
            by completions.
        node_of_gpu: int64 (G,), node index per GPU.
        perfvar: float64 (C, G), variability value (slowdown factor vs the median GPU) of each
            perf class on each GPU.
    """

    job_of_gpu: IntArray
    node_of_gpu: IntArray
    perfvar: FloatArray


NOW_S, ALLOCATED_GPU_ROUNDS, EFFECTIVE_GPU_ROUNDS = 0, 1, 2
"""Positions in :attr:`Counters.floats`: the round boundary t (s); the allocated and the
effective GPU-rounds counted so far."""
ROUND_INDEX, ADMITTED, MEASURED_LEFT, USAGE_ROUNDS, COUNTING_USAGE, EVENTS_SINCE_COMMIT = range(6)
"""Positions in :attr:`Counters.ints`: rounds advanced so far; job-table rows admitted
(``0..admitted-1``); measured (trace) jobs not yet completed; rounds counted in the utilisation;
1 once rounds are counted (from the first admission); 1 if a completion, admission or starvation
promotion happened since the last commit (or the commit promoted a job)."""


class Counters(NamedTuple):
    """The clock and counters, in two arrays that a backend updates in place (two arrays, not
    one per counter: every array passed to a compiled kernel costs time at each call).

    Attributes:
        floats: float64 (3,), at :data:`NOW_S`, :data:`ALLOCATED_GPU_ROUNDS`,
            :data:`EFFECTIVE_GPU_ROUNDS`.
        ints: int64 (6,), at :data:`ROUND_INDEX`, :data:`ADMITTED`, :data:`MEASURED_LEFT`,
            :data:`USAGE_ROUNDS`, :data:`COUNTING_USAGE`, :data:`EVENTS_SINCE_COMMIT`.
    """

    floats: FloatArray
    ints: IntArray


class KernelParams(NamedTuple):
    """What the step backends read of the configuration, fixed for an episode.

    Attributes:
        round_duration_s: round length R (s).
        restart_cost_s: seconds of no progress after every (re)start (s).
        larger_than_node_rule: the locality penalty is paid by jobs needing more GPUs than a
            node has (:attr:`LocalityRule.LARGER_THAN_NODE`), else by sets spanning nodes.
        gpus_per_node: G_n.
        locality_penalty_by_class: float64 (C,), the locality penalty of each perf class
            (:attr:`SimConfig.locality_penalties`).
        starvation: account waiting time and promote starved jobs.
        starvation_threshold_s: waiting time that promotes a job (s; inf without starvation).
        promoted_priority: the priority a starved job gets.
        num_measured: trace jobs (job-table rows below it are measured).
        max_rounds: rounds after which an unfinished episode is truncated.
    """

    round_duration_s: float
    restart_cost_s: float
    larger_than_node_rule: bool
    gpus_per_node: int
    locality_penalty_by_class: FloatArray
    starvation: bool
    starvation_threshold_s: float
    promoted_priority: int
    num_measured: int
    max_rounds: int


class SimState(NamedTuple):
    """The whole mutable state a step backend reads and writes."""

    jobs: JobColumns
    alloc: Allocation
    counters: Counters
    job_blocks: JobBlocks
    """The storage of ``jobs``' arrays (the compiled backend takes these)."""


class CommitOutcome(IntEnum):
    """What a commit did: the allocation kept or changed, or why the target was rejected."""

    UNCHANGED = 0
    CHANGED = 1
    BAD_INDEX = -1
    """The target names a job index that is neither FREE nor admitted."""
    INACTIVE = -2
    """A job whose GPU set changes is neither queued nor running."""
    BAD_COUNT = -3
    """A job is given a GPU count other than 0 and its ``num_gpus``."""


class Rejection(NamedTuple):
    """A rejected target (nothing was modified): the outcome and the offending job.

    Attributes:
        outcome: BAD_INDEX, INACTIVE or BAD_COUNT.
        job: the offending job index (the smallest bad index; else the first offending job
            whose set changes, in ascending index, status checked before count).
        job_status: the job's status (INACTIVE).
        num_gpus: GPUs the job needs (BAD_COUNT).
        gpus_given: GPUs the target gives it (BAD_COUNT).
    """

    outcome: CommitOutcome
    job: int
    job_status: int = 0
    num_gpus: int = 0
    gpus_given: int = 0

    def error(self) -> InvalidActionError:
        """The :class:`~palgym.errors.InvalidActionError` that reports this rejection."""
        if self.outcome is CommitOutcome.BAD_INDEX:
            return InvalidActionError(f"target names unknown or unadmitted job index {self.job}")
        if self.outcome is CommitOutcome.INACTIVE:
            return InvalidActionError(
                f"job index {self.job} is not active (status {self.job_status})"
            )
        return InvalidActionError(
            f"job index {self.job} needs {self.num_gpus} GPUs, target gives {self.gpus_given}"
        )


class Committed(NamedTuple):
    """Result of a backend's ``commit``: ``changed`` (the allocation changed), or the
    ``rejection`` of the target (then nothing was modified)."""

    changed: bool
    rejection: Rejection | None = None


KEPT = Committed(False)
"""The one :class:`Committed` of a commit that kept the allocation (both backends return it,
so a caller may test identity)."""
APPLIED = Committed(True)
"""The one :class:`Committed` of a commit that changed the allocation."""


def job_columns(table: JobTable) -> JobColumns:
    """The bundle of ``table``'s current column arrays (rebuild it after the table grows)."""
    return JobColumns(*(getattr(table, name) for name in JobColumns._fields))


def job_blocks(table: JobTable) -> JobBlocks:
    """The bundle of ``table``'s current storage (rebuild it after the table grows)."""
    return JobBlocks(table.float_columns, table.int_columns, table.status)


def new_state(table: JobTable, cluster: ClusterSpec, perfvar: FloatArray) -> SimState:
    """The state at t = 0: every GPU free, nothing admitted, every measured job left.

    Args:
        table: the job table (its columns are used, not copied).
        cluster: the cluster shape (G GPUs, contiguous node layout).
        perfvar: float64 (C, G) variability values.
    """
    alloc = Allocation(
        np.full(cluster.num_gpus, FREE, dtype=np.int64), cluster.node_of_gpu(), perfvar
    )
    ints = np.zeros(6, np.int64)
    ints[MEASURED_LEFT] = table.num_measured
    ints[EVENTS_SINCE_COMMIT] = 1
    counters = Counters(floats=np.zeros(3), ints=ints)
    return SimState(job_columns(table), alloc, counters, job_blocks(table))


def kernel_params(config: SimConfig, cluster: ClusterSpec, num_measured: int) -> KernelParams:
    """The :class:`KernelParams` of ``config`` on ``cluster`` with ``num_measured`` trace jobs."""
    threshold = config.starvation_threshold_s
    return KernelParams(
        round_duration_s=float(config.round_duration_s),
        restart_cost_s=float(config.restart_cost_s),
        larger_than_node_rule=config.locality_rule is LocalityRule.LARGER_THAN_NODE,
        gpus_per_node=cluster.gpus_per_node,
        locality_penalty_by_class=np.array(config.locality_penalties, dtype=np.float64),
        starvation=threshold is not None,
        starvation_threshold_s=np.inf if threshold is None else float(threshold),
        promoted_priority=PROMOTED_PRIORITY,
        num_measured=num_measured,
        max_rounds=config.max_rounds,
    )
