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


class JobTable:
    """Per-job arrays, all of shape (capacity,); rows ``0..size-1`` are in use.

    Static columns (from the trace): job_id, submit_time_s, num_gpus, total_iterations,
    iteration_time_s, perf_class. Dynamic columns: status (JobStatus, int8), iterations_done,
    attained_service_s (wall-clock s run), gpu_service_s (GPU-s run), first_start_time_s and
    completion_time_s (NaN until set), num_preemptions, variability_penalty and locality_penalty
    of the current placement, iteration_time_effective_s = (variability x locality penalty) x
    T_it while running (inf otherwise), restart_left_s, waiting_s (consecutive time queued),
    priority (999, or 1 once promoted for starvation).
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

    def __init__(self, trace: Trace) -> None:
        self.num_measured = trace.num_jobs
        self.size = trace.num_jobs
        self._trace = trace
        for name, dtype in _STATIC.items():
            setattr(self, name, np.array(getattr(trace, name), dtype=dtype))
        for name, (dtype, fill) in _DYNAMIC.items():
            setattr(self, name, np.full(self.size, fill, dtype=dtype))

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

    def _grow(self) -> None:
        extra = max(self.capacity, 16)
        for name, dtype in _STATIC.items():
            column = getattr(self, name)
            setattr(self, name, np.concatenate([column, np.zeros(extra, dtype=dtype)]))
        for name, (dtype, fill) in _DYNAMIC.items():
            column = getattr(self, name)
            setattr(self, name, np.concatenate([column, np.full(extra, fill, dtype=dtype)]))
