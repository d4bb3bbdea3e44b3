"""JobTable: per-job state as a growable struct of arrays (index = admission order).

Trace jobs occupy indices 0..J-1 (the measured jobs); background copies, when enabled, are
appended after them in arrival order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from palgym.sim.types import FloatArray, IntArray, JobStatus
from palgym.sim.workload import Trace

NORMAL_PRIORITY: int = 999
"""Queue priority of an unpromoted job (artifact ``job_priority``); promoted jobs get 1."""
PROMOTED_PRIORITY: int = 1

_STATIC: dict[str, Any] = {
    "job_id": np.int64,
    "submit_time_s": np.float64,
    "num_gpus": np.int64,
    "total_iterations": np.float64,
    "iteration_time_s": np.float64,
    "perf_class": np.int64,
}
_DYNAMIC: dict[str, tuple[Any, Any]] = {
    "status": (np.int8, int(JobStatus.PENDING)),
    "iterations_done": (np.float64, 0.0),
    "attained_service_s": (np.float64, 0.0),
    "gpu_service_s": (np.float64, 0.0),
    "first_start_time_s": (np.float64, np.nan),
    "completion_time_s": (np.float64, np.nan),
    "num_preemptions": (np.int64, 0),
    "variability_penalty": (np.float64, 1.0),
    "locality_penalty": (np.float64, 1.0),
    "iteration_time_effective_s": (np.float64, np.inf),
    "restart_left_s": (np.float64, 0.0),
    "waiting_s": (np.float64, 0.0),
    "priority": (np.int64, NORMAL_PRIORITY),
}


FLOAT_COLUMNS: tuple[str, ...] = tuple(
    name for name, dtype in (*_STATIC.items(), *((n, d) for n, (d, _) in _DYNAMIC.items()))
    if dtype is np.float64
)
"""The float64 columns, in their row order in :attr:`JobTable.float_columns`."""
INT_COLUMNS: tuple[str, ...] = tuple(
    name for name, dtype in (*_STATIC.items(), *((n, d) for n, (d, _) in _DYNAMIC.items()))
    if dtype is np.int64
)
"""The int64 columns, in their row order in :attr:`JobTable.int_columns`."""
_FILL: dict[str, Any] = {**{name: 0 for name in _STATIC},
                         **{name: fill for name, (_, fill) in _DYNAMIC.items()}}


class JobTable:
    """Per-job arrays, all of shape (capacity,); rows ``0..size-1`` are in use.

    Static columns (from the trace): job_id, submit_time_s, num_gpus, total_iterations,
    iteration_time_s, perf_class. Dynamic columns: status (JobStatus, int8), iterations_done,
    attained_service_s (wall-clock s run), gpu_service_s (GPU-s run), first_start_time_s and
    completion_time_s (NaN until set), num_preemptions, variability_penalty and locality_penalty
    of the current placement, iteration_time_effective_s = (variability x locality penalty) x
    T_it while running (inf otherwise), restart_left_s, waiting_s (consecutive time queued),
    priority (999, or 1 once promoted for starvation).

    The float64 columns are the rows of one array, :attr:`float_columns` (row order
    :data:`FLOAT_COLUMNS`), the int64 ones the rows of :attr:`int_columns` (:data:`INT_COLUMNS`):
    a compiled kernel then takes three arrays instead of nineteen. Each column attribute is a
    view of its row (contiguous); write into it, never rebind it.
    """

    job_id: IntArray
    submit_time_s: FloatArray
    num_gpus: IntArray
    total_iterations: FloatArray
    iteration_time_s: FloatArray
    perf_class: IntArray
    status: np.ndarray
    iterations_done: FloatArray
    attained_service_s: FloatArray
    gpu_service_s: FloatArray
    first_start_time_s: FloatArray
    completion_time_s: FloatArray
    num_preemptions: IntArray
    variability_penalty: FloatArray
    locality_penalty: FloatArray
    iteration_time_effective_s: FloatArray
    restart_left_s: FloatArray
    waiting_s: FloatArray
    priority: IntArray
    float_columns: FloatArray
    int_columns: IntArray

    def __init__(self, trace: Trace) -> None:
        self.num_measured = trace.num_jobs
        self.size = trace.num_jobs
        self._trace = trace
        self._allocate(self.size)
        for name in _STATIC:
            getattr(self, name)[:] = getattr(trace, name)

    @property
    def capacity(self) -> int:
        """Allocated rows."""
        return int(self.status.shape[0])

    def append_copy(self, row: int, job_id: int, submit_time_s: float) -> int:
        """Append a copy of trace row ``row`` arriving at ``submit_time_s``; returns its index."""
        if self.size == self.capacity:
            self._grow()
        index = self.size
        self.size += 1
        trace = self._trace
        self.job_id[index] = job_id
        self.submit_time_s[index] = submit_time_s
        self.num_gpus[index] = trace.num_gpus[row]
        self.total_iterations[index] = trace.total_iterations[row]
        self.iteration_time_s[index] = trace.iteration_time_s[row]
        self.perf_class[index] = trace.perf_class[row]
        return index

    def _allocate(self, capacity: int) -> None:
        """Fresh blocks of ``capacity`` rows, every column at its initial value."""
        self.float_columns = np.array(
            [np.full(capacity, _FILL[name], np.float64) for name in FLOAT_COLUMNS]
        ).reshape(len(FLOAT_COLUMNS), capacity)
        self.int_columns = np.array(
            [np.full(capacity, _FILL[name], np.int64) for name in INT_COLUMNS]
        ).reshape(len(INT_COLUMNS), capacity)
        self.status = np.full(capacity, _FILL["status"], np.int8)
        self._bind_columns()

    def _bind_columns(self) -> None:
        for row, name in enumerate(FLOAT_COLUMNS):
            setattr(self, name, self.float_columns[row])
        for row, name in enumerate(INT_COLUMNS):
            setattr(self, name, self.int_columns[row])

    def _grow(self) -> None:
        old_floats, old_ints, old_status = self.float_columns, self.int_columns, self.status
        size = old_status.shape[0]
        self._allocate(size + max(size, 16))
        self.float_columns[:, :size] = old_floats
        self.int_columns[:, :size] = old_ints
        self.status[:size] = old_status

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and deepcopy support: the blocks are copied, the column views rebuilt."""
        columns = set(FLOAT_COLUMNS) | set(INT_COLUMNS)
        return {key: value for key, value in self.__dict__.items() if key not in columns}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind_columns()
