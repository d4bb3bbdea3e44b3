"""Figures fitted on the Microsoft Philly job-level extract, and the duration sampler built on them.

Source: ``philly.csv`` of the Sia SOSP'23 artifact (siasosp23/artifacts@aaf7a0de,
``sia-simulator/traces/philly.csv``, 82,247 jobs, 2017-09-04 .. 2017-12-22; underlying data:
Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads",
ATC'19, msr-fiddle/philly-traces). The figures were computed once from that file with pandas /
``numpy.quantile`` (default linear interpolation) and are hard-coded; nothing here reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.sim.types import FloatArray, IntArray
from traces.inverse_cdf import quantile_function

PHILLY_FITTED_ON = (
    "Microsoft Philly job-level extract (siasosp23/artifacts@aaf7a0de, "
    "sia-simulator/traces/philly.csv, 82,247 jobs; Jeon et al., ATC'19)"
)
"""Citation written into generated files and loader metadata."""

PHILLY_JOBS_PER_HOUR: float = 31.47
"""Mean arrival rate: 82,247 jobs over 9,408,690 s (108.9 days). Source: philly.csv."""

PHILLY_GPU_COUNTS: tuple[tuple[int, int], ...] = (
    (1, 76627), (2, 1818), (4, 1870), (8, 1643), (12, 7), (16, 199), (24, 7), (32, 67),
    (64, 6), (128, 3),
)
"""(num_gpus, jobs). Source: philly.csv ``num_gpus`` value counts (SOURCE.md "Summary")."""


@dataclass(frozen=True)
class GpuGroupDurations:
    """Duration quantiles (seconds) of the Philly jobs with ``min_gpus <= num_gpus``, up to the
    next group's ``min_gpus``.

    Attributes:
        min_gpus: smallest GPU count of the group.
        jobs: public jobs the fit was computed on.
        quantiles: (probability, seconds) knots p0, p10, p25, p50, p75, p90, p99, p100.
    """

    min_gpus: int
    jobs: int
    quantiles: tuple[tuple[float, float], ...]


_P = (0.0, 0.10, 0.25, 0.50, 0.75, 0.90, 0.99, 1.0)

PHILLY_DURATIONS_BY_GPUS: tuple[GpuGroupDurations, ...] = (
    GpuGroupDurations(1, 76627, tuple(zip(_P, (
        1.0, 62.0, 122.0, 1117.0, 2716.0, 8512.0, 135399.32, 3256045.0), strict=True))),
    GpuGroupDurations(2, 1818, tuple(zip(_P, (
        2.0, 11.0, 16.0, 21.0, 76.0, 72740.2, 523316.12, 2582803.0), strict=True))),
    GpuGroupDurations(4, 1870, tuple(zip(_P, (
        3.0, 137.8, 772.75, 17409.5, 89394.25, 184435.3, 907375.53, 2750674.0), strict=True))),
    GpuGroupDurations(8, 1643, tuple(zip(_P, (
        1.0, 216.2, 1876.0, 23683.0, 173248.5, 351981.6, 1060498.24, 4628226.0), strict=True))),
    GpuGroupDurations(12, 289, tuple(zip(_P, (
        1.0, 72.2, 566.0, 21137.0, 104218.0, 247972.0, 922628.68, 1710643.0), strict=True))),
)
"""Duration (s) quantiles per GPU-count group: 1, 2, 3-7 (all 4), 8-11 (all 8), >= 12 GPUs.
Source: philly.csv, ``numpy.quantile(duration, p)`` per group (1-GPU median 1,117 s; the
multi-GPU jobs are much longer: medians 17-24k s for 4+ GPUs). The 2-GPU group is odd in the
public file (median 21 s, p90 73k s) and is kept as is."""


def group_of(num_gpus: IntArray) -> IntArray:
    """int64 (J,) index into :data:`PHILLY_DURATIONS_BY_GPUS` of each job's GPU-count group."""
    thresholds = np.array([g.min_gpus for g in PHILLY_DURATIONS_BY_GPUS], dtype=np.int64)
    groups: IntArray = np.searchsorted(thresholds, num_gpus, side="right").astype(np.int64) - 1
    return np.maximum(groups, 0)


def sample_philly_durations(rng: np.random.Generator, num_gpus: IntArray) -> FloatArray:
    """Durations (whole seconds) drawn from the Philly quantile function of each job's group.

    One uniform is drawn per job, in job order; ``log Q`` is linear between knots
    (:func:`traces.inverse_cdf.quantile_function`), so every value lies in the group's [min, max].

    Args:
        rng: the duration stream.
        num_gpus: int64 (J,) GPU counts (>= 1).

    Returns:
        float64 (J,) seconds.

    Source: :data:`PHILLY_DURATIONS_BY_GPUS`.
    """
    uniforms = rng.random(size=int(num_gpus.shape[0]))
    groups = group_of(num_gpus)
    durations = np.empty_like(uniforms)
    for index in np.unique(groups).tolist():
        here = groups == index
        durations[here] = quantile_function(
            uniforms[here], PHILLY_DURATIONS_BY_GPUS[index].quantiles
        )
    return durations
