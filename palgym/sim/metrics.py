"""Episode metrics: pure functions of per-job records and per-round usage.

Definitions follow PAL_MODEL section 6 (PAL, SC24, Section V-A): JCT = completion - submit time
(simulated seconds); makespan = last measured completion - first measured submission;
allocated utilization = mean over rounds of allocated GPUs / G; effective utilization weights
every allocated GPU by 1 / (variability penalty x locality penalty) of its job.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from palgym.sim.types import NUM_PERF_CLASSES, FloatArray, IntArray


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

    ``per_class_avg_jct_s`` holds NaN for a class with no completed job.
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

    def as_dict(self) -> dict[str, object]:
        """The metrics as a plain dict (for CSV / JSON rows and ``info``)."""
        return asdict(self)


def compute_metrics(
    records: JobRecords,
    allocated_gpu_rounds: float,
    effective_gpu_rounds: float,
    num_rounds: int,
    num_gpus: int,
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

    Returns:
        The metrics; JCT statistics cover completed jobs only (percentiles: numpy linear
        interpolation).
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
    return EpisodeMetrics(
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


def _mean(values: FloatArray) -> float:
    return float(np.mean(values)) if values.size else math.nan


def improvement(avg_jct_policy_s: float, avg_jct_baseline_s: float) -> float:
    """1 - avgJCT(policy) / avgJCT(baseline) (PAL, SC24, Figure 10)."""
    return 1.0 - avg_jct_policy_s / avg_jct_baseline_s


def geomean_improvement(ratios: FloatArray) -> float:
    """1 - geomean(avgJCT(P) / avgJCT(B)) over traces (PAL, SC24, Figure 10 style).

    Args:
        ratios: float64 (traces,), positive JCT ratios.
    """
    return 1.0 - float(np.exp(np.mean(np.log(ratios))))
