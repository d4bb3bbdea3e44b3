"""Episodes from long traces: oversized-job policy, windows, rebasing and arrival resampling.

Steps of :func:`make_windows`, in this order:

1. **Oversized jobs** (``num_gpus`` > the cluster's G GPUs), ``oversize=``:
   ``"reject"`` raises an error naming the first such job's line; ``"drop"`` removes them and
   reports it; ``"clip"`` gives them G GPUs (same duration) and reports it. No job that can never
   be placed is left for the simulator to wait on.
2. **Windows**: consecutive, non-overlapping slices in submit order, either ``num_jobs`` jobs each
   (a shorter last window is dropped unless ``keep_partial``) or ``span_s`` seconds each
   (``[t0 + k span, t0 + (k + 1) span)`` from the first submit t0; empty windows are skipped).
3. **Rebasing**: every window's first arrival is moved to time 0 (gaps kept exactly).
4. **Arrivals**: ``"trace"`` keeps the rebased gaps; ``"poisson"`` replaces them, keeping the
   job order, with exponential gaps at rate ``lambda = load x G / mean(num_gpus x duration_s)``
   (jobs / s), the first job at 0, drawn from ``numpy.random.default_rng(SeedSequence(seed,
   spawn_key=(k,)))`` for window k, so each window's draw is independent of how many there are.

Source: offered load rho = lambda E[num_gpus x duration] / G is the standard utilisation of an
M/G/c-style cluster (e.g. Gavel, OSDI'20 Section 7, "input job rate"; Sia, SOSP'23 Section 5).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from palgym.errors import ConfigError, TraceFormatError
from traces.convert import duration_seconds
from traces.load_report import LoadReport
from traces.schema import CanonicalTrace

OVERSIZE_POLICIES: tuple[str, ...] = ("reject", "drop", "clip")
ARRIVALS: tuple[str, ...] = ("trace", "poisson")


def _check_oversize(oversize: str) -> None:
    if oversize not in OVERSIZE_POLICIES:
        raise ConfigError(f"oversize must be one of {', '.join(OVERSIZE_POLICIES)}, "
                          f"got {oversize!r}")


def fit_to_cluster(trace: CanonicalTrace, cluster_gpus: int, oversize: str) -> CanonicalTrace:
    """Apply the oversized-job policy for a cluster of ``cluster_gpus`` GPUs.

    Args:
        trace: the trace.
        cluster_gpus: G >= 1.
        oversize: one of :data:`OVERSIZE_POLICIES`.

    Returns:
        The trace with no job above G GPUs (unchanged if there were none).

    Raises:
        ConfigError: for an unknown policy or G < 1.
        TraceFormatError: with ``"reject"``, naming the source, line and ``num_gpus`` of the
            first oversized job; with ``"drop"``, if every job is oversized.
    """
    _check_oversize(oversize)
    if cluster_gpus < 1:
        raise ConfigError(f"cluster_gpus must be >= 1, got {cluster_gpus}")
    gpus = trace.jobs["num_gpus"].to_numpy()
    big = gpus > cluster_gpus
    if not big.any():
        return trace
    row = int(np.flatnonzero(big)[0])
    if oversize == "reject":
        raise TraceFormatError(
            f"job {int(trace.jobs['job_id'].iloc[row])} needs {int(gpus[row])} GPUs, the "
            f"cluster has {cluster_gpus} ({int(big.sum())} such jobs; use oversize='drop' or "
            "'clip')", path=trace.source or trace.name, line=trace.line_of(row), field="num_gpus",
        )
    report = _extended_report(trace)
    lines = (np.zeros(trace.num_jobs, dtype=np.int64) if trace.source_line is None
             else trace.source_line)
    reason = f"needs more than the cluster's {cluster_gpus} GPUs"
    if oversize == "drop":
        report.record("dropped", big, lines, reason, "num_gpus")
        if big.all():
            raise TraceFormatError(f"every job {reason}", path=trace.source or trace.name,
                                   field="num_gpus")
        return replace(trace.select(~big), report=report)
    report.record("changed", big, lines, f"{reason}: clipped to {cluster_gpus}", "num_gpus")
    return replace(trace.with_columns(num_gpus=np.minimum(gpus, cluster_gpus)), report=report)


def _extended_report(trace: CanonicalTrace) -> LoadReport:
    base = trace.report
    if base is None:
        return LoadReport(trace.source or trace.name, rows_read=trace.num_jobs)
    return LoadReport(base.source, base.rows_read, list(base.entries))


def rebase(trace: CanonicalTrace) -> CanonicalTrace:
    """The trace with its first arrival at time 0 (gaps unchanged)."""
    submit = trace.jobs["submit_time_s"].to_numpy()
    return trace.with_columns(submit_time_s=submit - submit[0])


def cut(trace: CanonicalTrace, *, num_jobs: int | None = None, span_s: float | None = None,
        keep_partial: bool = False) -> list[CanonicalTrace]:
    """Consecutive windows of ``num_jobs`` jobs or ``span_s`` seconds (exactly one of them).

    Returns:
        The windows, each rebased to 0 and named ``{name}-w{k:03d}``.

    Raises:
        ConfigError: unless exactly one of ``num_jobs`` (>= 1) / ``span_s`` (> 0) is given.
    """
    if (num_jobs is None) == (span_s is None):
        raise ConfigError("give exactly one of num_jobs and span_s")
    submit = trace.jobs["submit_time_s"].to_numpy()
    if num_jobs is not None:
        if num_jobs < 1:
            raise ConfigError(f"num_jobs must be >= 1, got {num_jobs}")
        index = np.arange(trace.num_jobs) // num_jobs
        if not keep_partial and trace.num_jobs % num_jobs:
            index[index == index[-1]] = -1
    else:
        if not (span_s is not None and np.isfinite(span_s) and span_s > 0):
            raise ConfigError(f"span_s must be > 0, got {span_s}")
        index = np.floor((submit - submit[0]) / span_s).astype(np.int64)
    windows = []
    for number, k in enumerate(int(k) for k in np.unique(index) if k >= 0):
        window = rebase(trace.select(index == k, name=f"{trace.name}-w{number:03d}"))
        windows.append(window.with_metadata(
            window_index=str(number), window_rule=f"num_jobs={num_jobs}" if num_jobs is not None
            else f"span_s={span_s!r}", window_start_s=repr(float(submit[index == k][0])),
        ))
    return windows


def poisson_arrivals(trace: CanonicalTrace, load: float, cluster_gpus: int,
                     rng: np.random.Generator) -> CanonicalTrace:
    """Replace the arrival times by a Poisson process at offered load ``load`` on G GPUs.

    Args:
        trace: the trace (durations in seconds, or iterations of known models).
        load: target offered load rho > 0 (1.0 = the cluster's GPU-seconds exactly demanded).
        cluster_gpus: G >= 1.
        rng: the arrival stream.

    Returns:
        The trace with ``submit_time_s = [0, cumsum(gaps[1:])]``, gaps ~ Exp(1 / lambda).

    Raises:
        ConfigError: for load <= 0 or G < 1.
        TraceFormatError: if a duration cannot be turned into seconds.
    """
    if not (np.isfinite(load) and load > 0):
        raise ConfigError(f"load must be > 0, got {load!r}")
    if cluster_gpus < 1:
        raise ConfigError(f"cluster_gpus must be >= 1, got {cluster_gpus}")
    work = trace.jobs["num_gpus"].to_numpy() * duration_seconds(trace)
    rate_per_s = load * cluster_gpus / float(work.mean())
    gaps = rng.exponential(1.0 / rate_per_s, size=trace.num_jobs)
    gaps[0] = 0.0
    return trace.with_columns(submit_time_s=np.cumsum(gaps)).with_metadata(
        arrivals=f"poisson at load {load!r} on {cluster_gpus} GPUs "
                 f"({rate_per_s * 3600.0!r} jobs/h)",
    )


def make_windows(
    trace: CanonicalTrace, *, num_jobs: int | None = None, span_s: float | None = None,
    arrivals: str = "trace", load: float | None = None, cluster_gpus: int | None = None,
    oversize: str = "reject", seed: int = 0, keep_partial: bool = False,
) -> list[CanonicalTrace]:
    """Cut a trace into episodes (see the module docstring for the steps and their order).

    Args:
        trace: the long trace.
        num_jobs: jobs per window (or give ``span_s``).
        span_s: seconds per window.
        arrivals: ``"trace"`` or ``"poisson"``.
        load: target offered load (``"poisson"`` only; required then).
        cluster_gpus: G; needed for ``"poisson"`` and for the oversize policy (None: no check).
        oversize: one of :data:`OVERSIZE_POLICIES`.
        seed: arrival seed (>= 0).
        keep_partial: keep a last window with fewer than ``num_jobs`` jobs.

    Returns:
        The windows in time order.

    Raises:
        ConfigError: for inconsistent options.
        TraceFormatError: see :func:`fit_to_cluster` and :func:`poisson_arrivals`.
    """
    if arrivals not in ARRIVALS:
        raise ConfigError(f"arrivals must be one of {', '.join(ARRIVALS)}, got {arrivals!r}")
    _check_oversize(oversize)  # also without cluster_gpus: an unknown rule is never ignored
    if arrivals == "poisson" and (load is None or cluster_gpus is None):
        raise ConfigError("arrivals='poisson' needs load and cluster_gpus")
    if arrivals == "trace" and load is not None:
        raise ConfigError("load is only used with arrivals='poisson'")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    fitted = trace if cluster_gpus is None else fit_to_cluster(trace, cluster_gpus, oversize)
    windows = cut(fitted, num_jobs=num_jobs, span_s=span_s, keep_partial=keep_partial)
    if arrivals == "trace":
        return [w.with_metadata(arrivals="trace gaps kept") for w in windows]
    assert load is not None and cluster_gpus is not None
    return [
        poisson_arrivals(
            w, load, cluster_gpus,
            np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(k,))),
        ).with_metadata(seed=str(seed))
        for k, w in enumerate(windows)
    ]
