"""The job schema (:class:`JobColumns`) and JobTable, per-job state as a growable struct of
arrays (index = admission order).

Trace jobs occupy indices 0..J-1 (the measured jobs); background copies, when enabled, are
appended after them in arrival order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, get_args, get_type_hints

import numpy as np

from palgym.sim.types import FloatArray, IntArray, JobStatus, StatusArray
from palgym.sim.workload import Trace

NORMAL_PRIORITY: int = 999
"""Queue priority of an unpromoted job (artifact ``job_priority``); promoted jobs get 1."""
PROMOTED_PRIORITY: int = 1


class JobColumns(NamedTuple):
    """The :class:`JobTable` columns (the same arrays), all of shape (J,),
    indexed by job index (the indices a queue order ranks and ``job_of_gpu`` holds); what a
    policy reads as ``view.jobs`` (:class:`~palgym.sim.views.SimView`, non-writeable there).

    From the trace: ``job_id`` int64 (the trace's id); ``submit_time_s``; ``num_gpus`` int64
    (GPUs the job needs, all or none); ``total_iterations``; ``iteration_time_s`` (T_it on an
    ideal GPU, s); ``perf_class`` int64 (0..3 = classes A..D, the row of ``view.perfvar``).
    Dynamic: ``status`` int8 (:class:`~palgym.sim.types.JobStatus`); ``iterations_done``;
    ``attained_service_s`` (wall-clock s run); ``gpu_service_s`` (GPU-s run);
    ``first_start_time_s``, ``completion_time_s`` (NaN until set); ``num_preemptions`` int64;
    ``variability_penalty``, ``locality_penalty`` (of the current placement);
    ``iteration_time_effective_s`` (variability x locality penalty x T_it while running, inf
    otherwise); ``restart_left_s``; ``waiting_s`` (consecutive time queued); ``priority`` int64
    (999, or 1 once promoted for starvation). Float columns are float64, times in s.
    This is the one declaration of the job schema: :class:`JobTable` allocates these columns
    (their dtypes read from the annotations here, their initial values from
    :data:`INITIAL_VALUES`), and the trace's columns are those without an initial value.
    """

    job_id: IntArray
    submit_time_s: FloatArray
    num_gpus: IntArray
    total_iterations: FloatArray
    iteration_time_s: FloatArray
    perf_class: IntArray
    status: StatusArray
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


INITIAL_VALUES: dict[str, float] = {
    "status": int(JobStatus.PENDING), "iterations_done": 0.0, "attained_service_s": 0.0,
    "gpu_service_s": 0.0, "first_start_time_s": np.nan, "completion_time_s": np.nan,
    "num_preemptions": 0, "variability_penalty": 1.0, "locality_penalty": 1.0,
    "iteration_time_effective_s": np.inf, "restart_left_s": 0.0, "waiting_s": 0.0,
    "priority": NORMAL_PRIORITY,
}
"""The value of each dynamic column in a fresh row (the other columns come from the trace)."""

DTYPES: dict[str, type[np.generic]] = {
    name: get_args(get_args(hint)[1])[0]  # NDArray[T] is ndarray[shape, dtype[T]]
    for name, hint in get_type_hints(JobColumns).items()
}
"""The dtype of every column, from its :class:`JobColumns` annotation."""
TRACE_COLUMNS: tuple[str, ...] = tuple(n for n in JobColumns._fields if n not in INITIAL_VALUES)
"""The columns copied from the trace (in :class:`~palgym.sim.workload.Trace` too)."""
FLOAT_COLUMNS: tuple[str, ...] = tuple(n for n, d in DTYPES.items() if d is np.float64)
"""The float64 columns, in their row order in :attr:`JobTable.float_columns`."""
INT_COLUMNS: tuple[str, ...] = tuple(n for n, d in DTYPES.items() if d is np.int64)
"""The int64 columns, in their row order in :attr:`JobTable.int_columns`."""
if set(FLOAT_COLUMNS) | set(INT_COLUMNS) | {"status"} != set(JobColumns._fields):
    raise TypeError(f"palgym.sim.jobs: a column of unexpected dtype in {DTYPES}")

if TYPE_CHECKING:
    _Columns = JobColumns  # the type checker reads the column attributes from the schema
else:
    _Columns = object


class JobTable(_Columns):
    """Per-job arrays, all of shape (capacity,); rows ``0..size-1`` are in use.

    Its columns are the attributes :class:`JobColumns` declares (names, dtypes, units there);
    a fresh row holds :data:`INITIAL_VALUES`, or the trace's values for :data:`TRACE_COLUMNS`.

    The float64 columns are the rows of one array, :attr:`float_columns` (row order
    :data:`FLOAT_COLUMNS`), the int64 ones the rows of :attr:`int_columns` (:data:`INT_COLUMNS`):
    a compiled kernel then takes three arrays instead of nineteen. Each column attribute is a
    view of its row (contiguous); write into it, never rebind it.
    """

    float_columns: FloatArray
    int_columns: IntArray

    def __init__(self, trace: Trace) -> None:
        self.num_measured = trace.num_jobs
        self.size = trace.num_jobs
        self._trace = trace
        self._allocate(self.size)
        for name in TRACE_COLUMNS:
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
        """Fresh blocks of ``capacity`` rows, every column at its initial value (0 for the
        trace's columns)."""
        self.float_columns = np.array(
            [np.full(capacity, INITIAL_VALUES.get(name, 0), np.float64) for name in FLOAT_COLUMNS]
        ).reshape(len(FLOAT_COLUMNS), capacity)
        self.int_columns = np.array(
            [np.full(capacity, INITIAL_VALUES.get(name, 0), np.int64) for name in INT_COLUMNS]
        ).reshape(len(INT_COLUMNS), capacity)
        status = np.full(capacity, INITIAL_VALUES["status"], DTYPES["status"])
        setattr(self, "status", status)  # noqa: B010 - a read-only field to the type checker
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
        views = set(FLOAT_COLUMNS) | set(INT_COLUMNS)
        return {key: value for key, value in self.__dict__.items() if key not in views}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind_columns()
