"""Jobs and traces: an arrival-sorted, validated struct of arrays.

A :class:`Trace` holds J gang-scheduled jobs. Every job needs exactly ``num_gpus`` GPUs for its
whole run and performs ``total_iterations`` iterations of ``iteration_time_s`` seconds each on a
median GPU inside one node (PAL, SC24, Section IV; artifact ``workload/workload.py``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from palgym.errors import TraceFormatError
from palgym.sim.trace_checks import integer_column, row_error
from palgym.sim.types import BoolArray, FloatArray, IntArray, PerfClass

logger = logging.getLogger(__name__)

MODEL_PERF_CLASS: dict[str, PerfClass] = {
    "resnet50": PerfClass.A,
    "DCGAN": PerfClass.B,
    "BERT": PerfClass.B,
    "GPT2": PerfClass.B,
    "Bert-Large": PerfClass.B,
    "GPT2-Medium": PerfClass.B,
    "vgg19": PerfClass.C,
    "PointNet": PerfClass.D,
}
"""Model name -> perf class. Source: PAL artifact ``workload/workload.py::get_perfclass``.
Any other model is class A ("assume the worst"), with one warning per model name."""

MODEL_ITERATION_TIME_S: dict[str, float] = {
    "BERT": 0.179,
    "DCGAN": 0.0469266931,
    "GPT2": 3.5714,
    "PointNet": 0.28125,
    "resnet50": 0.17540429367763434,
    "vgg19": 0.300610341,
}
"""Per-iteration time on a median GPU (s). Source: PAL artifact ``workload/workload.py``."""


_WARNED_UNKNOWN_MODELS: set[str] = set()
"""Unknown model names already warned about in this process."""


def perf_class_of_model(model: str) -> PerfClass:
    """Perf class of a model name; unknown models map to class A, with one warning per model
    name per process (a trace with many rows of that model, or loaded many times, warns once).

    Source: PAL artifact ``workload/workload.py::get_perfclass``.
    """
    found = MODEL_PERF_CLASS.get(model)
    if found is not None:
        return found
    lowered = {name.lower(): cls for name, cls in MODEL_PERF_CLASS.items()}
    found = lowered.get(model.lower())
    if found is not None:
        return found
    if model not in _WARNED_UNKNOWN_MODELS:
        _WARNED_UNKNOWN_MODELS.add(model)
        logger.warning("unknown model %r: perf class A assumed", model)
    return PerfClass.A


@dataclass(frozen=True, eq=False)
class Trace:
    """A validated job trace, sorted by submit time (ties keep their input order).

    Attributes:
        name: Trace id used in tables (e.g. the file stem).
        job_id: int64 (J,), unique ids as given by the source.
        submit_time_s: float64 (J,), arrival time in seconds from trace start, >= 0, sorted.
        num_gpus: int64 (J,), GPUs the job needs (gang), >= 1.
        total_iterations: float64 (J,), work in iterations, > 0.
        iteration_time_s: float64 (J,), seconds per iteration on a median GPU in one node, > 0.
        perf_class: int64 (J,), values of :class:`PerfClass`.
        model: J model names.
        source: where the trace came from (file path), for error messages.
        source_line: int64 (J,), the file line of every job (0 when not from a file).

    Raises:
        TraceFormatError: on inconsistent shapes, non-finite, negative or zero values, or
            duplicate job ids (checked in :meth:`from_columns`).
    """

    name: str
    job_id: IntArray
    submit_time_s: FloatArray
    num_gpus: IntArray
    total_iterations: FloatArray
    iteration_time_s: FloatArray
    perf_class: IntArray
    model: tuple[str, ...]
    source: str = ""
    source_line: IntArray | None = None

    @classmethod
    def from_columns(
        cls,
        name: str,
        *,
        job_id: Sequence[int] | IntArray,
        submit_time_s: Sequence[float] | FloatArray,
        num_gpus: Sequence[int] | IntArray,
        total_iterations: Sequence[float] | FloatArray,
        iteration_time_s: Sequence[float] | FloatArray,
        model: Sequence[str],
        perf_class: Sequence[int] | IntArray | None = None,
        source: str = "",
        source_line: Sequence[int] | IntArray | None = None,
    ) -> Trace:
        """Build a trace from columns, validate it and sort it stably by submit time.

        Args:
            name: Trace id.
            job_id, submit_time_s, num_gpus, total_iterations, iteration_time_s, model: columns of
                equal length J (see the class attributes for dtypes and units).
            perf_class: optional explicit classes; by default derived from ``model`` with
                :func:`perf_class_of_model`.

        Returns:
            The trace, sorted by ``submit_time_s`` (stable).

        Raises:
            TraceFormatError: naming the field and the offending job (0-based position, and
                its file line when ``source_line`` is given), e.g. a fractional ``num_gpus``
                (integer columns: ``job_id``, ``num_gpus``, ``perf_class``, ``source_line``
                must hold whole numbers; they are never truncated).
        """
        where = source or name
        lines = None if source_line is None else integer_column(source_line, "source_line", where)
        ids = integer_column(job_id, "job_id", where, lines)
        columns: dict[str, Any] = {
            "submit_time_s": np.asarray(submit_time_s, dtype=np.float64),
            "num_gpus": integer_column(num_gpus, "num_gpus", where, lines),
            "total_iterations": np.asarray(total_iterations, dtype=np.float64),
            "iteration_time_s": np.asarray(iteration_time_s, dtype=np.float64),
        }
        models = tuple(str(m) for m in model)
        classes = (
            np.array([int(perf_class_of_model(m)) for m in models], dtype=np.int64)
            if perf_class is None
            else integer_column(perf_class, "perf_class", where, lines)
        )
        _validate(where, ids, columns, classes, models, lines)
        order = np.argsort(columns["submit_time_s"], kind="stable")
        return cls(
            name=name,
            job_id=ids[order],
            submit_time_s=columns["submit_time_s"][order],
            num_gpus=columns["num_gpus"][order],
            total_iterations=columns["total_iterations"][order],
            iteration_time_s=columns["iteration_time_s"][order],
            perf_class=classes[order],
            model=tuple(models[i] for i in order),
            source=source,
            source_line=None if lines is None else lines[order],
        )

    @property
    def num_jobs(self) -> int:
        """J, the number of jobs."""
        return int(self.job_id.shape[0])

    @property
    def ideal_duration_s(self) -> FloatArray:
        """float64 (J,): run time on median GPUs within one node, ``total_iterations x T_it``."""
        return self.total_iterations * self.iteration_time_s

    def line_of(self, position: int) -> int | None:
        """File line of the job at ``position`` (None when unknown)."""
        return None if self.source_line is None else int(self.source_line[position])

    def content_hash(self) -> str:
        """SHA-256 (hex, first 16 chars) of every column: equal traces give equal hashes."""
        digest = hashlib.sha256()
        for array in (
            self.job_id,
            self.submit_time_s,
            self.num_gpus,
            self.total_iterations,
            self.iteration_time_s,
            self.perf_class,
        ):
            digest.update(np.ascontiguousarray(array).tobytes())
        digest.update("\x00".join(self.model).encode())
        return digest.hexdigest()[:16]

    def select(self, keep: BoolArray, name: str | None = None) -> Trace:
        """A sub-trace of the jobs where ``keep`` (bool (J,)) is True, order preserved."""
        return Trace(
            name=self.name if name is None else name,
            job_id=self.job_id[keep],
            submit_time_s=self.submit_time_s[keep],
            num_gpus=self.num_gpus[keep],
            total_iterations=self.total_iterations[keep],
            iteration_time_s=self.iteration_time_s[keep],
            perf_class=self.perf_class[keep],
            model=tuple(m for m, k in zip(self.model, keep, strict=True) if k),
            source=self.source,
            source_line=None if self.source_line is None else self.source_line[keep],
        )


def _validate(
    name: str,
    ids: IntArray,
    columns: dict[str, np.ndarray],
    classes: IntArray,
    models: tuple[str, ...],
    lines: IntArray | None = None,
) -> None:
    num_jobs = ids.shape[0]
    if num_jobs == 0:
        raise TraceFormatError("the trace has no jobs", path=name)
    shaped = {**columns, "perf_class": classes}
    if lines is not None:
        shaped["source_line"] = lines
    for field, values in shaped.items():
        if values.shape != (num_jobs,):
            raise TraceFormatError(
                f"expected {num_jobs} values, got shape {values.shape}", path=name, field=field
            )
    if len(models) != num_jobs:
        raise TraceFormatError(f"expected {num_jobs} models", path=name, field="model")
    checks: tuple[tuple[str, Callable[[np.ndarray], np.ndarray], str], ...] = (
        ("submit_time_s", lambda v: np.isfinite(v) & (v >= 0), "a finite number >= 0"),
        ("num_gpus", lambda v: v >= 1, "an integer >= 1"),
        ("total_iterations", lambda v: np.isfinite(v) & (v > 0), "a finite number > 0"),
        ("iteration_time_s", lambda v: np.isfinite(v) & (v > 0), "a finite number > 0"),
    )
    for field, ok, expected in checks:
        bad = np.flatnonzero(~ok(columns[field]))
        if bad.size:
            job = int(bad[0])
            value = columns[field][job].item()
            raise row_error(f"value {value!r}, expected {expected}", name, field, job, lines,
                            int(ids[job]))
    bad_class = np.flatnonzero((classes < 0) | (classes > int(PerfClass.D)))
    if bad_class.size:
        raise row_error("perf class must be 0..3", name, "perf_class", int(bad_class[0]), lines)
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise TraceFormatError(
            f"duplicate job id {int(unique[counts > 1][0])}", path=name, field="job_id"
        )
