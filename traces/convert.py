"""Canonical trace -> palgym :class:`~palgym.sim.workload.Trace`, explicit about duration units.

palgym's Trace holds work as ``total_iterations x iteration_time_s``. The rule is the one
:func:`palgym.io.read_sia_trace` applies (``palgym/io/sia.py``, :class:`~palgym.io.DurationUnit`):

- ``iterations``: ``total_iterations = duration``, ``iteration_time_s = T_it(model)`` from
  :data:`palgym.sim.workload.MODEL_ITERATION_TIME_S` (the model must be known);
- ``seconds``: ``total_iterations = duration``, ``iteration_time_s = 1.0`` (a duration in seconds
  on a median GPU within one node is that many 1-second iterations).

A trace mixing both units is rejected; :func:`to_seconds` turns iteration rows with a known model
into seconds first. The perf class is the ``perf_class`` letter when given, else
:func:`palgym.sim.workload.perf_class_of_model` (unknown models: class A, one warning per
model name per process).
"""

from __future__ import annotations

import numpy as np

from palgym.errors import TraceFormatError
from palgym.io import DurationUnit
from palgym.sim.types import PERF_CLASS_NAMES, FloatArray, IntArray
from palgym.sim.workload import MODEL_ITERATION_TIME_S, Trace, perf_class_of_model
from traces.schema import CanonicalTrace


def to_trace(trace: CanonicalTrace, name: str | None = None) -> Trace:
    """Convert a canonical trace to palgym's Trace (see the module docstring for the rule).

    Args:
        trace: the canonical trace (one duration unit).
        name: Trace id; default ``trace.name``.

    Returns:
        The palgym Trace, same job order (both are stably sorted by submit time).

    Raises:
        TraceFormatError: for mixed duration units, or (iterations) a model without a known
            per-iteration time, naming the source, line and field.
    """
    jobs = trace.jobs
    units = set(jobs["duration_unit"].unique().tolist())
    if len(units) > 1:
        raise TraceFormatError(
            "mixed duration units (seconds and iterations): convert with traces.to_seconds",
            path=trace.source or trace.name, field="duration_unit",
        )
    iteration_time_s = (
        iteration_times(trace) if units == {DurationUnit.ITERATIONS.value}
        else np.ones(trace.num_jobs, dtype=np.float64)
    )
    lines = trace.source_line
    return Trace.from_columns(
        name or trace.name,
        job_id=jobs["job_id"].to_numpy(dtype=np.int64),
        submit_time_s=jobs["submit_time_s"].to_numpy(dtype=np.float64),
        num_gpus=jobs["num_gpus"].to_numpy(dtype=np.int64),
        total_iterations=jobs["duration"].to_numpy(dtype=np.float64),
        iteration_time_s=iteration_time_s,
        model=tuple(jobs["model"].tolist()),
        perf_class=perf_classes(trace),
        source=trace.source,
        source_line=lines,
    )


def iteration_times(trace: CanonicalTrace) -> FloatArray:
    """float64 (J,) ``T_it(model)`` seconds per job.

    Raises:
        TraceFormatError: naming the line and field ``model`` of the first unknown model.
    """
    models = trace.jobs["model"].tolist()
    known = np.array([MODEL_ITERATION_TIME_S.get(m, np.nan) for m in models], dtype=np.float64)
    bad = np.flatnonzero(np.isnan(known))
    if bad.size:
        row = int(bad[0])
        raise TraceFormatError(
            f"unknown model {models[row]!r}: durations are iterations, and the per-iteration "
            f"time is known only for {', '.join(sorted(MODEL_ITERATION_TIME_S))} (load the file "
            "with duration_unit='seconds' to treat durations as seconds)",
            path=trace.source or trace.name, line=trace.line_of(row), field="model",
        )
    return known


def perf_classes(trace: CanonicalTrace) -> IntArray:
    """int64 (J,) perf class per job: the letter if given, else derived from the model."""
    letters = trace.jobs["perf_class"].tolist()
    models = trace.jobs["model"].tolist()
    derived = {m: int(perf_class_of_model(m)) for m in dict.fromkeys(models)}
    return np.array(
        [PERF_CLASS_NAMES.index(c) if c else derived[m] for c, m in zip(letters, models,
                                                                         strict=True)],
        dtype=np.int64,
    )


def duration_seconds(trace: CanonicalTrace) -> FloatArray:
    """float64 (J,) ideal run time in seconds (iterations x ``T_it(model)`` where needed).

    Raises:
        TraceFormatError: for an iteration row whose model has no known per-iteration time.
    """
    jobs = trace.jobs
    seconds: FloatArray = jobs["duration"].to_numpy(dtype=np.float64).copy()
    is_iter = (jobs["duration_unit"] == DurationUnit.ITERATIONS.value).to_numpy()
    if is_iter.any():
        seconds[is_iter] *= iteration_times(trace.select(is_iter))
    return seconds


def to_seconds(trace: CanonicalTrace) -> CanonicalTrace:
    """The same trace with every duration in seconds (``iterations x T_it(model)``).

    Raises:
        TraceFormatError: for an iteration row whose model has no known per-iteration time.
    """
    return trace.with_columns(
        duration=duration_seconds(trace), duration_unit=DurationUnit.SECONDS.value
    ).with_metadata(duration_rule="iterations converted to seconds x T_it(model)")
