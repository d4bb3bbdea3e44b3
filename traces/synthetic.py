"""Seeded synthetic trace generators in the canonical schema (durations in seconds).

- ``philly-poisson``: Poisson arrivals, GPU counts and per-GPU-count durations fitted on the
  Philly extract (:mod:`traces.philly_fit`);
- ``gavel``: the Gavel / Synergy-style workload: log-uniform run time, Gavel's multi-GPU scale
  factors, Poisson arrivals at a given jobs-per-hour rate.

``numpy.random.SeedSequence(seed).spawn(4)`` gives one stream each for arrivals, GPU counts,
durations and models (in that order; changing it changes every generated file). Each stream draws
its J values in job order, so the first J jobs of a longer trace with the same seed are this one.
(The Sia-Philly-like generator, the default bundled set, is :mod:`traces.generate`.)
"""

from __future__ import annotations

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.types import FloatArray, IntArray
from traces.inverse_cdf import categorical
from traces.philly_fit import (
    PHILLY_FITTED_ON,
    PHILLY_GPU_COUNTS,
    PHILLY_JOBS_PER_HOUR,
    sample_philly_durations,
)
from traces.schema import UNKNOWN_MODEL, CanonicalTrace, make_canonical
from traces.sia_philly_fit import SIA_PHILLY_JOBS_PER_HOUR

GENERATOR_KINDS: tuple[str, ...] = ("sia-philly", "philly-poisson", "gavel")

GAVEL_SCALE_FACTORS: tuple[tuple[int, float], ...] = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
"""(num_gpus, probability). Source: Gavel (Narayanan et al., OSDI'20) artifact
stanford-futuredata/gavel ``scheduler/utils.py::_generate_scale_factor`` (r < 0.7: 1 GPU,
[0.7, 0.8): 2, [0.8, 0.95): 4, >= 0.95: 8), described there as "from the Philly distribution"."""

GAVEL_SHORT_PROB: float = 0.8
GAVEL_SHORT_LOG10_MINUTES: tuple[float, float] = (1.5, 3.0)
GAVEL_LONG_LOG10_MINUTES: tuple[float, float] = (3.0, 4.0)
"""Run time = 60 x 10^U minutes->seconds, U ~ Uniform(1.5, 3) with probability 0.8, else
Uniform(3, 4) (about 32 min .. 16.7 h, and 16.7 h .. 6.9 days). Source: Gavel artifact
``scheduler/utils.py::_generate_duration``; Synergy (Mohan et al., OSDI'22) generates its
synthetic traces with the same Gavel-style rule."""

GAVEL_MODELS: tuple[tuple[str, str], ...] = (
    ("ResNet-18", "A"), ("ResNet-50", "A"), ("CycleGAN", "A"), ("Transformer", "B"),
    ("LM", "B"), ("A3C", "D"), ("Recommendation", "D"),
)
"""Gavel's job-type families, drawn uniformly (Gavel picks a job type uniformly from its job
table), with the perf class palgym assigns (an assumption: convolutional -> A, ResNet
measurements; sequence models -> B, BERT measurements; reinforcement learning and embedding-bound
recommendation -> D, PageRank measurements). Source: Gavel ``scheduler/job_table.py``."""

GAVEL_FITTED_ON = (
    "Gavel OSDI'20 workload generator (stanford-futuredata/gavel scheduler/utils.py: "
    "_generate_duration, _generate_scale_factor; job types of job_table.py)"
)


def _streams(seed: int, num_jobs: int, jobs_per_hour: float) -> list[np.random.Generator]:
    if num_jobs < 1:
        raise ConfigError(f"num_jobs must be >= 1, got {num_jobs}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    if not (np.isfinite(jobs_per_hour) and jobs_per_hour > 0):
        raise ConfigError(f"jobs_per_hour must be > 0, got {jobs_per_hour!r}")
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]


def _poisson(rng: np.random.Generator, num_jobs: int, jobs_per_hour: float) -> FloatArray:
    """float64 (J,) whole-second arrivals: floor(cumsum(Exp(3600 / rate)))."""
    return np.floor(np.cumsum(rng.exponential(3600.0 / jobs_per_hour, size=num_jobs)))


def generate_philly_poisson(
    num_jobs: int, seed: int = 0, jobs_per_hour: float = PHILLY_JOBS_PER_HOUR,
) -> CanonicalTrace:
    """A Philly-calibrated Poisson trace.

    Args:
        num_jobs: J >= 1.
        seed: >= 0.
        jobs_per_hour: Poisson rate (default: the Philly mean, 31.47 jobs/h).

    Returns:
        Canonical trace: job ids 0..J-1, whole-second arrivals, GPU counts from the Philly mix,
        durations (whole seconds) from the Philly quantiles of the job's GPU-count group,
        model ``unknown``.

    Raises:
        ConfigError: for invalid arguments.

    Source: :data:`traces.philly_fit.PHILLY_GPU_COUNTS`, ``PHILLY_DURATIONS_BY_GPUS``,
    ``PHILLY_JOBS_PER_HOUR`` (philly.csv of the Sia artifact).
    """
    arrival, gpu_rng, duration_rng, _ = _streams(seed, num_jobs, jobs_per_hour)
    values = np.array([g for g, _ in PHILLY_GPU_COUNTS], dtype=np.int64)
    weights = np.array([w for _, w in PHILLY_GPU_COUNTS], dtype=np.float64)
    num_gpus: IntArray = values[categorical(gpu_rng.random(size=num_jobs), weights)]
    return make_canonical(
        f"philly-poisson-{seed}", job_id=np.arange(num_jobs),
        submit_time_s=_poisson(arrival, num_jobs, jobs_per_hour), num_gpus=num_gpus,
        duration=sample_philly_durations(duration_rng, num_gpus), duration_unit="seconds",
        model=UNKNOWN_MODEL,
        metadata={"generated_by": generate_command("philly-poisson", num_jobs, seed,
                                                   jobs_per_hour, PHILLY_JOBS_PER_HOUR),
                  "fitted_on": PHILLY_FITTED_ON},
    )


def generate_gavel(
    num_jobs: int, seed: int = 0, jobs_per_hour: float = SIA_PHILLY_JOBS_PER_HOUR,
) -> CanonicalTrace:
    """A Gavel / Synergy-style trace.

    Args:
        num_jobs: J >= 1.
        seed: >= 0.
        jobs_per_hour: Poisson rate (Gavel sweeps it; default 32 jobs/h, the rate of palgym's
            Sia-Philly-like traces, not a Gavel figure).

    Returns:
        Canonical trace: job ids 0..J-1, whole-second arrivals, GPU counts from
        :data:`GAVEL_SCALE_FACTORS`, durations (seconds) by the log-uniform rule, models from
        :data:`GAVEL_MODELS` with their perf class.

    Raises:
        ConfigError: for invalid arguments.

    Source: :data:`GAVEL_SCALE_FACTORS`, :data:`GAVEL_SHORT_PROB` (Gavel artifact).
    """
    arrival, gpu_rng, duration_rng, model_rng = _streams(seed, num_jobs, jobs_per_hour)
    values = np.array([g for g, _ in GAVEL_SCALE_FACTORS], dtype=np.int64)
    weights = np.array([p for _, p in GAVEL_SCALE_FACTORS], dtype=np.float64)
    num_gpus = values[categorical(gpu_rng.random(size=num_jobs), weights)]
    draws = duration_rng.random(size=(num_jobs, 2))  # per job: (long-or-short, position)
    short, unit = draws[:, 0] < GAVEL_SHORT_PROB, draws[:, 1]
    low = np.where(short, GAVEL_SHORT_LOG10_MINUTES[0], GAVEL_LONG_LOG10_MINUTES[0])
    high = np.where(short, GAVEL_SHORT_LOG10_MINUTES[1], GAVEL_LONG_LOG10_MINUTES[1])
    duration = 60.0 * 10.0 ** (low + (high - low) * unit)
    pick = model_rng.integers(0, len(GAVEL_MODELS), size=num_jobs)
    return make_canonical(
        f"gavel-{seed}", job_id=np.arange(num_jobs),
        submit_time_s=_poisson(arrival, num_jobs, jobs_per_hour), num_gpus=num_gpus,
        duration=duration, duration_unit="seconds",
        model=[GAVEL_MODELS[i][0] for i in pick.tolist()],
        perf_class=[GAVEL_MODELS[i][1] for i in pick.tolist()],
        metadata={"generated_by": generate_command("gavel", num_jobs, seed, jobs_per_hour,
                                                   SIA_PHILLY_JOBS_PER_HOUR),
                  "fitted_on": GAVEL_FITTED_ON},
    )


def generate_command(kind: str, num_jobs: int, seed: int, jobs_per_hour: float,
                     default_rate: float) -> str:
    """The CLI command that regenerates a trace (recorded in its metadata; no ``--output``).

    Returns:
        E.g. ``python -m traces generate --kind gavel --num-jobs 100 --seed 0``.
    """
    command = f"python -m traces generate --kind {kind} --num-jobs {num_jobs} --seed {seed}"
    if jobs_per_hour != default_rate:
        command += f" --jobs-per-hour {jobs_per_hour!r}"
    return command
