"""Summary statistics of a trace: job count, span, arrival rate, GPU mix, durations, load."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.errors import PalgymError
from traces.convert import duration_seconds
from traces.schema import CanonicalTrace

PERCENTILES: tuple[float, ...] = (10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 100.0)


@dataclass(frozen=True)
class TraceSummary:
    """What :func:`describe` reports.

    Attributes:
        name: trace id.
        num_jobs: J.
        span_s: last minus first submit time (s).
        jobs_per_hour: ``(J - 1) / span_s x 3600`` (the inverse mean gap); None if span is 0.
        gpu_mix: (num_gpus, jobs) pairs, ascending GPU count.
        duration_unit: the trace's unit(s), e.g. ``"seconds"`` or ``"iterations"``.
        duration_percentiles: (percentile, value in ``duration_unit``), :data:`PERCENTILES`;
            empty if the units are mixed.
        duration_s_percentiles: the same in seconds; empty if not convertible (unknown model).
        gpu_seconds: total ``num_gpus x duration_s``; None if not convertible.
        cluster_gpus: G the load refers to (None: not asked).
        load_frac: offered load ``jobs_per_hour / 3600 x mean(num_gpus x duration_s) / G``;
            None if not computable.
    """

    name: str
    num_jobs: int
    span_s: float
    jobs_per_hour: float | None
    gpu_mix: tuple[tuple[int, int], ...]
    duration_unit: str
    duration_percentiles: tuple[tuple[float, float], ...]
    duration_s_percentiles: tuple[tuple[float, float], ...]
    gpu_seconds: float | None
    cluster_gpus: int | None
    load_frac: float | None


def describe(trace: CanonicalTrace, cluster_gpus: int | None = None) -> TraceSummary:
    """Summarise a trace (no error for unconvertible durations: those figures are None).

    Args:
        trace: the trace.
        cluster_gpus: G for the load figure (None: no load).

    Returns:
        The summary.

    Source: offered load as in :mod:`traces.windows`.
    """
    jobs = trace.jobs
    submit = jobs["submit_time_s"].to_numpy()
    span_s = float(submit[-1] - submit[0])
    rate = (trace.num_jobs - 1) / span_s * 3600.0 if span_s > 0 else None
    gpus = jobs["num_gpus"].to_numpy()
    values, counts = np.unique(gpus, return_counts=True)
    units = sorted(set(jobs["duration_unit"].tolist()))
    duration = jobs["duration"].to_numpy()
    percentiles = _percentiles(duration) if len(units) == 1 else ()
    try:
        seconds: np.ndarray | None = duration_seconds(trace)
    except PalgymError:
        seconds = None
    gpu_seconds = None if seconds is None else float((gpus * seconds).sum())
    load = None
    if gpu_seconds is not None and rate is not None and cluster_gpus:
        load = rate / 3600.0 * gpu_seconds / trace.num_jobs / cluster_gpus
    return TraceSummary(
        trace.name, trace.num_jobs, span_s, rate,
        tuple(zip(values.tolist(), counts.tolist(), strict=True)), "+".join(units),
        percentiles, () if seconds is None else _percentiles(seconds), gpu_seconds,
        cluster_gpus, load,
    )


def _percentiles(values: np.ndarray) -> tuple[tuple[float, float], ...]:
    found = np.percentile(values, PERCENTILES)
    return tuple(zip(PERCENTILES, found.tolist(), strict=True))


def format_summary(summary: TraceSummary) -> str:
    """Human-readable multi-line text of a summary."""
    rate = "-" if summary.jobs_per_hour is None else f"{summary.jobs_per_hour:.2f}"
    mix = ", ".join(f"{g}:{n}" for g, n in summary.gpu_mix)
    lines = [
        f"trace        {summary.name}",
        f"jobs         {summary.num_jobs}",
        f"span         {summary.span_s:.0f} s ({summary.span_s / 3600.0:.2f} h)",
        f"arrival rate {rate} jobs/h",
        f"GPU mix      {mix}",
    ]
    if summary.duration_percentiles:
        unit = summary.duration_unit
        lines.append(f"duration     {_show(summary.duration_percentiles)} ({unit})")
    if summary.duration_s_percentiles and summary.duration_unit != "seconds":
        lines.append(f"duration (s) {_show(summary.duration_s_percentiles)}")
    if summary.gpu_seconds is not None:
        lines.append(f"GPU-hours    {summary.gpu_seconds / 3600.0:.1f}")
    if summary.cluster_gpus is not None:
        load = "-" if summary.load_frac is None else f"{summary.load_frac:.3f}"
        lines.append(f"load         {load} on {summary.cluster_gpus} GPUs")
    return "\n".join(lines)


def _show(pairs: tuple[tuple[float, float], ...]) -> str:
    return " ".join(f"p{p:g}={v:.6g}" for p, v in pairs)
