"""Figures the Sia-Philly-like generator is fitted on, and its parameters.

Source: PAL's Sia-Philly traces (hal-uw/blox-pal, branch ``artifact``,
``workload-traces/philly/workload-1.csv`` .. ``workload-5.csv``, 800 jobs); each constant below
cites what was computed from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.workload import MODEL_ITERATION_TIME_S

SIA_COLUMNS: tuple[str, ...] = ("job_id", "num_gpus", "submit_time", "duration", "model")
"""Header of a generated file (the Sia / PAL trace columns)."""

FITTED_ON = (
    "Sia-Philly traces of the PAL artifact (hal-uw/blox-pal@8a590708, "
    "workload-traces/philly/workload-1..5.csv, 800 jobs)"
)
"""Citation written into every generated file."""

SIA_PHILLY_GPU_COUNTS: tuple[tuple[int, int], ...] = (
    (1, 339), (4, 50), (6, 120), (8, 96), (12, 98), (16, 79), (24, 5), (32, 8), (48, 5),
)
"""(num_gpus, jobs) over the 800 jobs of workloads 1-5.
Source: shared/data/traces/sia_philly_pal/SOURCE.md, "Summary" (GPU-count mix)."""

SIA_PHILLY_MODEL_GPU_COUNTS: tuple[tuple[str, int, int], ...] = (
    ("vgg19", 1, 339),
    ("resnet50", 4, 50), ("resnet50", 24, 5), ("resnet50", 32, 8), ("resnet50", 48, 5),
    ("PointNet", 6, 88), ("PointNet", 8, 72), ("PointNet", 12, 77), ("PointNet", 16, 69),
    ("DCGAN", 6, 20), ("DCGAN", 8, 18), ("DCGAN", 12, 12),
    ("BERT", 6, 6), ("BERT", 8, 4), ("BERT", 12, 5), ("BERT", 16, 6),
    ("GPT2", 6, 6), ("GPT2", 8, 2), ("GPT2", 12, 4), ("GPT2", 16, 4),
)
"""(model, num_gpus, jobs): the model x GPU-count table of workloads 1-5 (zero cells omitted).
Marginals: vgg19 339, PointNet 306, resnet50 68, DCGAN 50, BERT 21, GPT2 16 (800 jobs).
Source: computed once from PAL artifact workload-traces/philly/workload-1..5.csv
(pandas.crosstab(model, num_gpus)); the GPU marginal equals SOURCE.md's "Summary" mix."""

SIA_PHILLY_JOBS_PER_HOUR: float = 32.0
"""Mean arrival rate. Source: SOURCE.md "Summary" ("roughly 32 jobs/h", 160 jobs over
4.8-5.0 h per file; mean gap 111-112 s, gap std ~ mean, i.e. Poisson-like)."""

SIA_PHILLY_DURATION_QUANTILES: tuple[tuple[float, float], ...] = (
    (0.0, 60.0), (0.10, 72.0), (0.50, 1408.0), (0.90, 12_700.0), (0.99, 210_000.0),
    (1.0, 2_900_000.0),
)
"""(probability, duration in iterations): knots of the pooled, model-independent quantile function,
used only with ``SiaPhillyParams(duration_given_model=False)``.
Source: SOURCE.md "Summary" (raw duration p10 72, p50 1408, p90 12.7k, p99 210k, max 2.9M);
the p0 knot (minimum 60) was computed once from PAL artifact workload-1..5.csv."""


@dataclass(frozen=True)
class DurationFit:
    """The duration quantile function of one duration group (a model, optionally a GPU range).

    A job of model ``model`` with ``num_gpus`` GPUs uses the fit of its model with the largest
    ``min_gpus`` <= ``num_gpus``.

    Attributes:
        model: model name.
        min_gpus: smallest GPU count of the group (every model needs a group with ``min_gpus`` 1).
        jobs: number of public jobs the fit was computed from (documentation; > 0).
        quantiles: (probability, iterations) knots, probabilities strictly increasing from 0.0 to
            1.0, iterations > 0 and non-decreasing.
    """

    model: str
    min_gpus: int
    jobs: int
    quantiles: tuple[tuple[float, float], ...]


SIA_PHILLY_DURATION_KNOT_MIN_JOBS: int = 5
"""A quantile knot p in {0.10, 0.25, 0.50, 0.75, 0.90} is kept for a group of n public jobs only
if n * min(p, 1 - p) >= 5 (at least five jobs on each side); min and max are always kept."""

SIA_PHILLY_MODEL_DURATIONS: tuple[DurationFit, ...] = (
    DurationFit("vgg19", 1, 339, (
        (0.0, 60.0), (0.10, 69.0), (0.25, 198.5), (0.50, 1013.0), (0.75, 2109.5),
        (0.90, 2704.6), (1.0, 3417.0),
    )),
    DurationFit("PointNet", 1, 306, (
        (0.0, 60.0), (0.10, 71.0), (0.25, 189.0), (0.50, 888.0), (0.75, 1924.75),
        (0.90, 2685.5), (1.0, 3123.0),
    )),
    DurationFit("resnet50", 1, 50, (
        (0.0, 1324.0), (0.10, 14205.1), (0.25, 37004.25), (0.50, 59447.0), (0.75, 94267.25),
        (0.90, 130408.1), (1.0, 192340.0),
    )),
    DurationFit("resnet50", 24, 18, (
        (0.0, 76977.0), (0.50, 195574.5), (1.0, 2912468.0),
    )),
    DurationFit("DCGAN", 1, 50, (
        (0.0, 493.0), (0.10, 3770.8), (0.25, 4197.5), (0.50, 5992.5), (0.75, 10836.5),
        (0.90, 22366.4), (1.0, 29258.0),
    )),
    DurationFit("BERT", 1, 21, (
        (0.0, 768.0), (0.25, 3712.0), (0.50, 4532.0), (0.75, 9577.0), (1.0, 16185.0),
    )),
    DurationFit("GPT2", 1, 16, (
        (0.0, 615.0), (0.50, 5138.0), (1.0, 29157.0),
    )),
)
"""Per-group duration quantiles (iterations). The resnet50 group with ``min_gpus`` 1 was fitted on
its 4-GPU jobs (the only resnet50 jobs with < 24 GPUs), the one with ``min_gpus`` 24 on its 24-,
32- and 48-GPU jobs; the other models have one group each. Knots follow
:data:`SIA_PHILLY_DURATION_KNOT_MIN_JOBS`: all of min/p10/p25/p50/p75/p90/max for vgg19 (339
jobs), PointNet (306), resnet50 < 24 GPUs (50) and DCGAN (50); min/p25/p50/p75/max for BERT (21);
min/p50/max for GPT2 (16) and resnet50 >= 24 GPUs (18).
Source: computed once from PAL artifact workload-traces/philly/workload-1..5.csv (800 jobs):
``numpy.quantile(duration, p)`` (default linear interpolation) per group, min and max exact.
No other split was warranted: Kruskal-Wallis p >= 0.45 across GPU counts for every other model
and p = 0.91 among the 24/32/48-GPU resnet50 jobs (vs p = 7e-8 for resnet50 4 vs >= 24 GPUs).
Without the split, the expected work is ~1.9k GPU-hours per 160 jobs (public mean 3.5k); with it,
~3.9k."""


@dataclass(frozen=True)
class SiaPhillyParams:
    """Fitted parameters of the Sia-Philly-like generator (defaults = the published figures).

    Attributes:
        jobs_per_hour: Poisson arrival rate (jobs / hour), > 0.
        gpu_counts: (num_gpus, weight) pairs of the GPU-count mix.
        model_gpu_counts: (model, num_gpus, weight) triples; every model must have a known
            per-iteration time, and every GPU count of ``gpu_counts`` at least one row.
        duration_quantiles: pooled (probability, iterations) knots, probabilities strictly
            increasing from 0.0 to 1.0, iterations > 0 and non-decreasing; used only when
            ``duration_given_model`` is False.
        model_durations: per-group duration fits; every model of ``model_gpu_counts`` needs a
            fit with ``min_gpus`` 1, and no (model, min_gpus) may repeat.
        model_given_gpus: draw the model given the job's GPU count (True) or from the model
            marginal, independently of the GPU count (False).
        duration_given_model: draw the duration from the job's duration group (True, the
            default) or from the pooled ``duration_quantiles``, independently of the model (False;
            no CLI equivalent, so such a trace cannot be written by :func:`write_sia_philly_like`).

    Raises:
        ConfigError: if any of the above does not hold.
    """

    jobs_per_hour: float = SIA_PHILLY_JOBS_PER_HOUR
    gpu_counts: tuple[tuple[int, int], ...] = SIA_PHILLY_GPU_COUNTS
    model_gpu_counts: tuple[tuple[str, int, int], ...] = SIA_PHILLY_MODEL_GPU_COUNTS
    duration_quantiles: tuple[tuple[float, float], ...] = SIA_PHILLY_DURATION_QUANTILES
    model_durations: tuple[DurationFit, ...] = SIA_PHILLY_MODEL_DURATIONS
    model_given_gpus: bool = True
    duration_given_model: bool = True

    def __post_init__(self) -> None:
        if not (np.isfinite(self.jobs_per_hour) and self.jobs_per_hour > 0):
            raise ConfigError(f"jobs_per_hour must be > 0, got {self.jobs_per_hour!r}")
        if not self.gpu_counts or any(g < 1 or w <= 0 for g, w in self.gpu_counts):
            raise ConfigError("gpu_counts needs (num_gpus >= 1, weight > 0) pairs")
        unknown = {m for m, _, _ in self.model_gpu_counts} - set(MODEL_ITERATION_TIME_S)
        if unknown:
            raise ConfigError(f"models without a per-iteration time: {sorted(unknown)}")
        covered = {g for _, g, w in self.model_gpu_counts if w > 0}
        missing = [g for g, _ in self.gpu_counts if g not in covered]
        if missing:
            raise ConfigError(f"no model rows for GPU counts {missing}")
        _check_quantiles(self.duration_quantiles, "duration_quantiles")
        keys = [(fit.model, fit.min_gpus) for fit in self.model_durations]
        if len(set(keys)) != len(keys):
            raise ConfigError("model_durations: a (model, min_gpus) pair repeats")
        for fit in self.model_durations:
            if fit.min_gpus < 1 or fit.jobs < 1:
                raise ConfigError(f"model_durations: bad min_gpus or jobs for {fit.model}")
            _check_quantiles(fit.quantiles, f"model_durations[{fit.model}, {fit.min_gpus}]")
        uncovered = {m for m, _, _ in self.model_gpu_counts} - {m for m, g in keys if g == 1}
        if uncovered:
            raise ConfigError(f"model_durations: no min_gpus=1 fit for {sorted(uncovered)}")


def _check_quantiles(knots: tuple[tuple[float, float], ...], what: str) -> None:
    probs = np.array([p for p, _ in knots], dtype=np.float64)
    values = np.array([v for _, v in knots], dtype=np.float64)
    if probs.size < 2 or probs[0] != 0.0 or probs[-1] != 1.0 or (np.diff(probs) <= 0).any():
        raise ConfigError(f"{what}: probabilities must rise strictly from 0 to 1")
    if (values <= 0).any() or (np.diff(values) < 0).any():
        raise ConfigError(f"{what}: durations must be > 0 and non-decreasing")


SIA_PHILLY = SiaPhillyParams()
"""The calibrated defaults."""
