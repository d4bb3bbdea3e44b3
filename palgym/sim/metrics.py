"""Episode metrics: pure functions of per-job records and per-round usage.

Definitions follow PAL_MODEL section 6 (PAL, SC24, Section V-A): JCT = completion - submit time
(simulated seconds); makespan = last measured completion - first measured submission;
allocated utilization = mean over rounds of allocated GPUs / G; effective utilization weights
every allocated GPU by 1 / (variability penalty x locality penalty) of its job.

Truncated episodes (PAL_MODEL section 6, "Unfinished episodes"): an episode that stops before
every measured job has completed is ``truncated``; ``num_completed`` of ``num_jobs`` finished.
Its plain statistics (``avg_jct_s``, ...) cover the completed jobs only; the **censored**
statistics count every measured job, an unfinished one with JCT = ``end_time_s`` - submit
(0 for a job not yet submitted), so they are lower bounds of the true values. For a finished
episode the censored statistics equal the plain ones bit for bit.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from palgym.sim.types import NUM_PERF_CLASSES, FloatArray, IntArray

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class JobRecords:
    """Per-job outcome of an episode, struct of arrays over the M measured jobs (trace order).

    Attributes:
        job_id: int64 (M,).
        submit_time_s: float64 (M,).
        first_start_time_s: float64 (M,), NaN if the job never ran.
        completion_time_s: float64 (M,), NaN if the job did not complete (truncated episode).
        num_gpus: int64 (M,).
        perf_class: int64 (M,).
        num_preemptions: int64 (M,), times the job lost its GPUs before completing.
    """

    job_id: IntArray
    submit_time_s: FloatArray
    first_start_time_s: FloatArray
    completion_time_s: FloatArray
    num_gpus: IntArray
    perf_class: IntArray
    num_preemptions: IntArray

    @property
    def jct_s(self) -> FloatArray:
        """float64 (M,): job completion time, completion - submit (s); NaN if not completed."""
        return self.completion_time_s - self.submit_time_s

    @property
    def queueing_delay_s(self) -> FloatArray:
        """float64 (M,): first start - submit (s); NaN if never started."""
        return self.first_start_time_s - self.submit_time_s


@dataclass(frozen=True)
class EpisodeMetrics:
    """Summary of one episode. Times in simulated seconds, utilizations in [0, 1].

    ``avg_jct_s``, ``p50_jct_s``, ``p99_jct_s``, ``makespan_s`` and ``per_class_avg_jct_s``
    cover the completed jobs (NaN for none). The last fields describe an unfinished episode
    (see the module docstring): ``truncated`` is ``num_completed < num_jobs``;
    ``truncation_reason`` says why it stopped (empty when finished); ``end_time_s`` is the
    round boundary it stopped at (NaN if unknown); ``censored_avg_jct_s`` and
    ``censored_p99_jct_s`` count unfinished jobs up to ``end_time_s`` (NaN if that is unknown
    and a job is unfinished).
    """

    num_jobs: int
    num_completed: int
    avg_jct_s: float
    p50_jct_s: float
    p99_jct_s: float
    makespan_s: float
    utilization_allocated: float
    utilization_effective: float
    num_preemptions: int
    avg_queueing_delay_s: float
    per_class_avg_jct_s: tuple[float, float, float, float]
    truncated: bool = False
    truncation_reason: str = ""
    end_time_s: float = math.nan
    censored_avg_jct_s: float = math.nan
    censored_p99_jct_s: float = math.nan

    @property
    def completed_text(self) -> str:
        """``completed/total`` measured jobs, e.g. ``157/160``."""
        return f"{self.num_completed}/{self.num_jobs}"

    def as_dict(self) -> dict[str, object]:
        """The metrics as a plain dict (for CSV / JSON rows and ``info``)."""
        return asdict(self)


def compute_metrics(
    records: JobRecords,
    allocated_gpu_rounds: float,
    effective_gpu_rounds: float,
    num_rounds: int,
    num_gpus: int,
    end_time_s: float | None = None,
    truncation_reason: str = "",
) -> EpisodeMetrics:
    """Summarise an episode.

    Args:
        records: measured jobs' records.
        allocated_gpu_rounds: sum over the counted rounds of allocated GPUs.
        effective_gpu_rounds: the same, each GPU weighted by 1 / (variability x locality
            penalty) of its job.
        num_rounds: number of counted rounds (those from the first measured submission's round
            to the last measured completion).
        num_gpus: G.
        end_time_s: the round boundary the episode ended at (s); None if unknown (then the
            censored statistics of an unfinished episode are NaN).
        truncation_reason: why an unfinished episode stopped (``"unfinished"`` if empty).

    Returns:
        The metrics; plain JCT statistics cover completed jobs only, the censored ones every
        job (percentiles: numpy linear interpolation).
    """
    jct = records.jct_s
    done = np.isfinite(jct)
    completed = jct[done]
    per_class = tuple(
        _mean(completed[records.perf_class[done] == c]) for c in range(NUM_PERF_CLASSES)
    )
    if completed.size:
        makespan = float(
            np.max(records.completion_time_s[done]) - np.min(records.submit_time_s)
        )
    else:
        makespan = math.nan
    denominator = num_rounds * num_gpus
    delays = records.queueing_delay_s
    metrics = EpisodeMetrics(
        num_jobs=int(records.job_id.shape[0]),
        num_completed=int(completed.size),
        avg_jct_s=_mean(completed),
        p50_jct_s=float(np.percentile(completed, 50)) if completed.size else math.nan,
        p99_jct_s=float(np.percentile(completed, 99)) if completed.size else math.nan,
        makespan_s=makespan,
        utilization_allocated=allocated_gpu_rounds / denominator if denominator else 0.0,
        utilization_effective=effective_gpu_rounds / denominator if denominator else 0.0,
        num_preemptions=int(records.num_preemptions.sum()),
        avg_queueing_delay_s=_mean(delays[np.isfinite(delays)]),
        per_class_avg_jct_s=(per_class[0], per_class[1], per_class[2], per_class[3]),
    )
    return with_end(metrics, records, end_time_s, truncation_reason)


def with_end(metrics: EpisodeMetrics, records: JobRecords, end_time_s: float | None,
             truncation_reason: str = "") -> EpisodeMetrics:
    """``metrics`` with the truncation fields filled in from ``records`` and the end time.

    Args:
        metrics: plain metrics of ``records``.
        records: the measured jobs' records.
        end_time_s: the round boundary the episode ended at (s), or None if unknown.
        truncation_reason: why an unfinished episode stopped (``"unfinished"`` if empty).
    """
    censored = censored_jct_s(records, end_time_s)
    unfinished = metrics.num_completed < metrics.num_jobs
    return replace(
        metrics, truncated=unfinished,
        truncation_reason=(truncation_reason or "unfinished") if unfinished else "",
        end_time_s=math.nan if end_time_s is None else float(end_time_s),
        censored_avg_jct_s=_mean(censored) if censored is not None else math.nan,
        censored_p99_jct_s=(float(np.percentile(censored, 99))
                            if censored is not None and censored.size else math.nan),
    )


def censored_jct_s(records: JobRecords, end_time_s: float | None) -> FloatArray | None:
    """float64 (M,): each job's JCT, an unfinished one's counted up to ``end_time_s``
    (``max(end_time_s - submit, 0)``); the JCTs themselves when every job completed; None if
    a job is unfinished and ``end_time_s`` is None.
    """
    jct = records.jct_s
    done = np.isfinite(jct)
    if done.all():
        return jct
    if end_time_s is None:
        return None
    return np.where(done, jct, np.maximum(end_time_s - records.submit_time_s, 0.0))


def censored_mean_at(submit_time_s: FloatArray, completion_time_s: FloatArray,
                     time_s: float) -> float:
    """Mean JCT with every job censored at ``time_s``: ``min(completion, time_s) - submit``
    (0 for a job submitted later; NaN completion = not completed). Two episodes truncated at
    different times are compared with both censored at the earlier end (PAL_MODEL section 6).

    Args:
        submit_time_s: float64 (M,), submit times (s).
        completion_time_s: float64 (M,), completion times (s), NaN if not completed.
        time_s: the censoring time (s).
    """
    done = np.isfinite(completion_time_s) & (completion_time_s <= time_s)
    end = np.where(done, completion_time_s, time_s)
    return _mean(np.maximum(end - submit_time_s, 0.0))


def _mean(values: FloatArray) -> float:
    return float(np.mean(values)) if values.size else math.nan


def jct_ratio(avg_jct_policy_s: float, avg_jct_baseline_s: float) -> float:
    """avgJCT(policy) / avgJCT(baseline) (PAL, SC24, Figure 10).

    Returns:
        The ratio; NaN, with a logged warning naming both values, when it is undefined: the
        baseline's average JCT is not a finite number > 0 (e.g. 0 s: no measured job had
        arrived by its end) or the policy's is not a finite number >= 0. Never a division by
        zero.
    """
    if not (math.isfinite(avg_jct_baseline_s) and avg_jct_baseline_s > 0
            and math.isfinite(avg_jct_policy_s) and avg_jct_policy_s >= 0):
        logger.warning("JCT ratio undefined (NaN): policy avg JCT %r s, baseline avg JCT %r s "
                       "(a ratio needs a finite baseline > 0 s)", avg_jct_policy_s,
                       avg_jct_baseline_s)
        return math.nan
    return avg_jct_policy_s / avg_jct_baseline_s


def improvement(avg_jct_policy_s: float, avg_jct_baseline_s: float) -> float:
    """1 - avgJCT(policy) / avgJCT(baseline) (PAL, SC24, Figure 10); NaN, with a logged
    warning, when the ratio is undefined (:func:`jct_ratio`)."""
    return 1.0 - jct_ratio(avg_jct_policy_s, avg_jct_baseline_s)


def geomean(values: FloatArray | Sequence[float]) -> float:
    """The geometric mean, exp(mean(log x)), of positive values (float64 (n,), n >= 1): the one
    home of palgym's and agents' geomeans of episodes and ratios (a bootstrap's resampled
    rows: :func:`palgym.bench.stats.geometric_mean_rows`).

    Source: the geometric mean as the exponential of the mean logarithm; numpy's pairwise
    summation for the mean.
    """
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=np.float64)))))


def geomean_improvement(ratios: FloatArray) -> float:
    """1 - geomean(avgJCT(P) / avgJCT(B)) over traces (PAL, SC24, Figure 10 style).

    Args:
        ratios: float64 (traces,), positive JCT ratios.
    """
    return 1.0 - geomean(ratios)
