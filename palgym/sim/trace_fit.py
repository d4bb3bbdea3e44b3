"""Whether a trace can run on an episode's cluster and clock: every job fits the cluster, every
time is where the float64 clock resolves a round, and the first job arrives before the round
cap (:func:`check_trace_fits`, called by the engine and by :func:`palgym.simulate.make_episode`).

Every error is a :class:`~palgym.errors.TraceFormatError` naming the trace's source, the job's
file line (when known, else its 0-based row) and the field.
"""

from __future__ import annotations

import numpy as np

from palgym.errors import TraceFormatError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig
from palgym.sim.trace_checks import row_error
from palgym.sim.workload import Trace

CLOCK_RESOLUTION_ROUNDS = 2.0 ** -20
"""The coarsest float64 spacing of the clock allowed at any trace time, as a fraction of a
round: every ``submit_time_s`` and every ideal end (``submit_time_s + total_iterations x
iteration_time_s``) ``t`` must satisfy ``numpy.spacing(t) <= round_duration_s x 2**-20``, so
one round added to the clock there is exact to a millionth of a round. For rounds of 360 s this
allows times below 2**41 s (about 70,000 years); a time like 1e18 s, where adding a round moves
the float64 clock by 384 s instead of 360 s, is refused. Source: IEEE 754 binary64 spacing
(``numpy.spacing``)."""



def check_trace_fits(trace: Trace, cluster: ClusterSpec, config: SimConfig) -> None:
    """Refuse a trace the episode could not simulate.

    Args:
        trace: the measured jobs.
        cluster: the cluster shape.
        config: ``round_duration_s`` and ``max_rounds`` are read.

    Raises:
        TraceFormatError: a job needing more GPUs than the cluster has (``num_gpus``), a time
            the clock cannot resolve (:func:`check_clock_resolution`), or a first arrival after
            the round cap (:func:`check_first_arrival`).
    """
    too_big = np.flatnonzero(trace.num_gpus > cluster.num_gpus)
    if too_big.size:
        job = int(too_big[0])
        raise TraceFormatError(
            f"job {int(trace.job_id[job])} needs {int(trace.num_gpus[job])} GPUs but the "
            f"cluster {cluster} has {cluster.num_gpus}; it could never run",
            path=trace.source or trace.name, line=trace.line_of(job), field="num_gpus",
        )
    check_clock_resolution(trace, config.round_duration_s)
    check_first_arrival(trace, config.round_duration_s, config.max_rounds)


def check_clock_resolution(trace: Trace, round_duration_s: float) -> None:
    """Refuse a trace with times where the float64 clock cannot resolve a round
    (:data:`CLOCK_RESOLUTION_ROUNDS`).

    Args:
        trace: the measured jobs.
        round_duration_s: the round length R (s), > 0.

    Raises:
        TraceFormatError: naming the trace's source, the first such job's line (or position)
            and ``submit_time_s`` (its arrival) or ``total_iterations`` (its ideal end).
    """
    limit = round_duration_s * CLOCK_RESOLUTION_ROUNDS
    ends = trace.submit_time_s + trace.ideal_duration_s
    for field, times, what in (("submit_time_s", trace.submit_time_s, "arrives at"),
                               ("total_iterations", ends, "would end (ideally) at")):
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~(np.spacing(times) <= limit))
        if bad.size:
            row = int(bad[0])
            raise row_error(
                f"{what} {float(times[row]):.6g} s, beyond the clock's resolution: one round "
                f"of {round_duration_s:g} s added there moves the float64 clock by "
                f"{float(times[row] + round_duration_s - times[row]):.6g} s (times must keep "
                f"numpy.spacing(t) <= round_duration_s x 2**-20; for 360 s rounds, t < 2**41 "
                f"s); give times in seconds from the trace's start",
                trace.source or trace.name, field, row, trace.source_line,
                int(trace.job_id[row]))


def check_first_arrival(trace: Trace, round_duration_s: float, max_rounds: int) -> None:
    """Refuse a trace whose first job arrives after the last round an episode can simulate
    (``max_rounds x round_duration_s``): no job of it could ever run.

    Raises:
        TraceFormatError: naming the trace's source, the first job's line (or position) and
            ``submit_time_s``.
    """
    horizon_s = max_rounds * round_duration_s
    first_s = float(trace.submit_time_s[0])
    if first_s >= horizon_s:
        raise row_error(
            f"arrives at {first_s:.6g} s, after the last round an episode can simulate "
            f"(max_rounds {max_rounds} x round_duration_s {round_duration_s:g} = "
            f"{horizon_s:.6g} s): no job of the trace could ever run; give times in seconds "
            f"from the trace's start (or raise max_rounds)",
            trace.source or trace.name, "submit_time_s", 0, trace.source_line,
            int(trace.job_id[0]))
