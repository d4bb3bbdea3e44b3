"""Seeded generator of Sia-Philly-like job traces, calibrated on PAL's Sia-Philly workloads 1-5.

A generated trace has the Sia / PAL CSV columns ``job_id,num_gpus,submit_time,duration,model``
(``duration`` = an ITERATION count, as in PAL's files; ``submit_time`` = integer seconds; job ids
0..J-1 in submission order), so :func:`palgym.io.read_sia_trace` reads it like the originals.

Generative model (each part drawn from its own stream, see :func:`generate_sia_philly_like`):

1. arrivals: a Poisson process at ``jobs_per_hour`` (exponential gaps from t = 0, cumulative
   times floored to whole seconds);
2. ``num_gpus``: i.i.d. categorical over the published GPU-count mix;
3. ``model``: categorical given the job's GPU count, over the model x GPU-count counts of the
   public files (in those files vgg19 jobs are exactly the 1-GPU jobs, resnet50 the 4/24/32/48-GPU
   jobs, and PointNet / DCGAN / BERT / GPT2 share 6..16 GPUs), so both marginals match;
   optionally the model is drawn from the marginal model mix, independent of the GPU count;
4. ``duration``: inverse-CDF sampling, rounded to whole iterations, of a piecewise log-linear
   quantile function fitted per *duration group*: one group per model, except that resnet50 is
   split into jobs with < 24 GPUs and jobs with >= 24 GPUs (in the public files the 4-GPU
   resnet50 jobs have a median of ~59k iterations, the 24/32/48-GPU ones ~196k). Within a group
   the duration is independent of the GPU count and of the arrival time. Optionally the duration
   is drawn from the pooled, model-independent quantile function instead (the generator's
   behaviour before per-model durations; Python API only, no CLI option).

Source: the Sia-Philly traces of the PAL artifact (SC24), repository hal-uw/blox-pal, branch
``artifact``, commit 8a590708a0cd82d14162178890bebbbd1f6ec858, files
``workload-traces/philly/workload-1.csv`` .. ``workload-5.csv`` (800 jobs). The generator never
reads those files: the figures below were computed from them once and are hard-coded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from palgym.errors import ConfigError
from palgym.io import atomic_write_text
from palgym.sim.types import FloatArray, IntArray
from palgym.sim.workload import MODEL_ITERATION_TIME_S, Trace

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


@dataclass(frozen=True, eq=False)
class SiaTraceTable:
    """A generated trace in the Sia / PAL CSV layout (rows in submission order).

    Attributes:
        job_id: int64 (J,), 0..J-1.
        num_gpus: int64 (J,), GPUs per job (gang), >= 1.
        submit_time_s: int64 (J,), arrival in whole seconds from trace start, non-decreasing.
        duration_iterations: float64 (J,), whole iterations (PAL's ``duration`` column), > 0.
        model: J model names, each with a known per-iteration time.
    """

    job_id: IntArray
    num_gpus: IntArray
    submit_time_s: IntArray
    duration_iterations: FloatArray
    model: tuple[str, ...]

    @property
    def num_jobs(self) -> int:
        """J, the number of jobs."""
        return int(self.job_id.shape[0])

    def to_csv_text(self, comment: str = "") -> str:
        """The CSV text: ``# `` comment lines, the header, one row per job, ``\\n`` endings.

        Args:
            comment: provenance text; each of its lines becomes a ``# `` line.

        Returns:
            The file content; ``duration`` is written like PAL's files (e.g. ``1481.0``).
        """
        lines = [f"# {text}" for text in comment.splitlines()]
        lines.append(",".join(SIA_COLUMNS))
        for job, gpus, submit, duration, model in zip(
            self.job_id.tolist(), self.num_gpus.tolist(), self.submit_time_s.tolist(),
            self.duration_iterations.tolist(), self.model, strict=True,
        ):
            lines.append(f"{job},{gpus},{submit},{duration:.1f},{model}")
        return "\n".join(lines) + "\n"

    def to_trace(self, name: str) -> Trace:
        """The palgym trace (durations read as iterations, as :func:`read_sia_trace` does).

        Args:
            name: trace id.

        Returns:
            The validated :class:`~palgym.sim.workload.Trace`.
        """
        return Trace.from_columns(
            name,
            job_id=self.job_id,
            submit_time_s=self.submit_time_s.astype(np.float64),
            num_gpus=self.num_gpus,
            total_iterations=self.duration_iterations,
            iteration_time_s=[MODEL_ITERATION_TIME_S[m] for m in self.model],
            model=self.model,
            source=name,
        )


def generate_sia_philly_like(
    num_jobs: int = 160, seed: int = 0, params: SiaPhillyParams = SIA_PHILLY
) -> SiaTraceTable:
    """Generate a Sia-Philly-like trace.

    ``numpy.random.SeedSequence(seed).spawn(4)`` gives one stream each for arrivals, GPU counts,
    models and durations (in that order; changing it changes every generated file). Each stream
    draws its J values in job order (the duration stream one uniform per job, mapped through the
    job's quantile function), so the first J jobs of a longer trace with the same seed are this
    trace. No global RNG is used: equal arguments give equal tables.

    Args:
        num_jobs: J >= 1.
        seed: non-negative integer seed.
        params: fitted parameters (default: :data:`SIA_PHILLY`).

    Returns:
        The trace table, job ids 0..J-1 in submission order.

    Raises:
        ConfigError: if ``num_jobs`` < 1 or ``seed`` < 0.

    Source: the published Sia-Philly statistics (see the module constants).
    """
    if num_jobs < 1:
        raise ConfigError(f"num_jobs must be >= 1, got {num_jobs}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    arrival_rng, gpu_rng, model_rng, duration_rng = streams
    num_gpus = sample_num_gpus(gpu_rng, num_jobs, params.gpu_counts)
    model = sample_models(model_rng, num_gpus, params)
    return SiaTraceTable(
        job_id=np.arange(num_jobs, dtype=np.int64),
        num_gpus=num_gpus,
        submit_time_s=sample_submit_times(arrival_rng, num_jobs, params.jobs_per_hour),
        duration_iterations=sample_durations(duration_rng, model, num_gpus, params),
        model=model,
    )


def sample_submit_times(rng: np.random.Generator, num_jobs: int, jobs_per_hour: float) -> IntArray:
    """Poisson arrivals from t = 0, floored to whole seconds.

    Args:
        rng: the arrival stream.
        num_jobs: J.
        jobs_per_hour: rate (mean gap ``3600 / jobs_per_hour`` s).

    Returns:
        int64 (J,), non-decreasing submit times in seconds.

    Source: SOURCE.md "Summary" (~32 jobs/h; gaps in the files have std ~ mean).
    """
    gaps_s = rng.exponential(3600.0 / jobs_per_hour, size=num_jobs)
    return np.floor(np.cumsum(gaps_s)).astype(np.int64)


def sample_num_gpus(
    rng: np.random.Generator, num_jobs: int, gpu_counts: tuple[tuple[int, int], ...]
) -> IntArray:
    """I.i.d. GPU counts from the weighted mix.

    Args:
        rng: the GPU-count stream.
        num_jobs: J.
        gpu_counts: (num_gpus, weight) pairs.

    Returns:
        int64 (J,) GPU counts.

    Source: SOURCE.md "Summary" GPU-count mix (:data:`SIA_PHILLY_GPU_COUNTS`).
    """
    values = np.array([g for g, _ in gpu_counts], dtype=np.int64)
    weights = np.array([w for _, w in gpu_counts], dtype=np.float64)
    return values[_categorical(rng.random(size=num_jobs), weights)]


def sample_models(
    rng: np.random.Generator, num_gpus: IntArray, params: SiaPhillyParams
) -> tuple[str, ...]:
    """Model names, given each job's GPU count (or from the model marginal).

    One uniform is drawn per job whatever the option, so the stream is consumed identically.

    Args:
        rng: the model stream.
        num_gpus: int64 (J,) GPU counts of the jobs.
        params: gives ``model_gpu_counts`` and ``model_given_gpus``.

    Returns:
        J model names.

    Source: model x GPU-count table of PAL artifact workload-1..5.csv
    (:data:`SIA_PHILLY_MODEL_GPU_COUNTS`).
    """
    num_jobs = int(num_gpus.shape[0])
    uniforms = rng.random(size=num_jobs)
    names = list(dict.fromkeys(m for m, _, _ in params.model_gpu_counts))
    if not params.model_given_gpus:
        weights = np.array(
            [sum(w for m, _, w in params.model_gpu_counts if m == name) for name in names],
            dtype=np.float64,
        )
        return tuple(names[i] for i in _categorical(uniforms, weights).tolist())
    chosen = np.empty(num_jobs, dtype=np.int64)
    for gpus in np.unique(num_gpus).tolist():
        rows = [(names.index(m), w) for m, g, w in params.model_gpu_counts if g == gpus]
        here = num_gpus == gpus
        picks = _categorical(uniforms[here], np.array([w for _, w in rows], dtype=np.float64))
        chosen[here] = np.array([i for i, _ in rows], dtype=np.int64)[picks]
    return tuple(names[i] for i in chosen.tolist())


def sample_durations(
    rng: np.random.Generator, model: tuple[str, ...], num_gpus: IntArray,
    params: SiaPhillyParams,
) -> FloatArray:
    """Durations by inverse-CDF sampling of piecewise log-linear quantile functions.

    One uniform ``u`` is drawn per job (in job order, whatever the option); the duration is
    ``Q(u)`` of the job's duration group (see :class:`DurationFit`), or of the pooled
    ``params.duration_quantiles`` if ``params.duration_given_model`` is False.

    Args:
        rng: the duration stream.
        model: J model names (each with a ``min_gpus`` 1 fit).
        num_gpus: int64 (J,) GPU counts.
        params: gives ``model_durations``, ``duration_quantiles`` and ``duration_given_model``.

    Returns:
        float64 (J,) whole iteration counts, each within its quantile function's [min, max].

    Source: :data:`SIA_PHILLY_MODEL_DURATIONS` (per group) or
    :data:`SIA_PHILLY_DURATION_QUANTILES` (pooled).
    """
    uniforms = rng.random(size=int(num_gpus.shape[0]))
    if not params.duration_given_model:
        return quantile_function(uniforms, params.duration_quantiles)
    durations = np.empty_like(uniforms)
    group = np.full(uniforms.shape, -1, dtype=np.int64)
    models = np.array(model, dtype=object)
    for index, fit in sorted(
        enumerate(params.model_durations), key=lambda item: item[1].min_gpus
    ):
        # Ascending min_gpus: a later (larger) threshold overrides an earlier one.
        group[(models == fit.model) & (num_gpus >= fit.min_gpus)] = index
    for index in np.unique(group).tolist():
        here = group == index
        durations[here] = quantile_function(
            uniforms[here], params.model_durations[index].quantiles
        )
    return durations


def quantile_function(
    uniforms: FloatArray, quantiles: tuple[tuple[float, float], ...]
) -> FloatArray:
    """A piecewise log-linear quantile function, rounded to whole iterations.

    ``log Q(u)`` is linear in ``u`` between consecutive knots; values are rounded to whole
    iterations and clipped to [first knot, last knot] (the public minimum and maximum).

    Args:
        uniforms: float64 (J,) values in [0, 1).
        quantiles: (probability, iterations) knots from 0.0 to 1.0.

    Returns:
        float64 (J,) whole iteration counts.
    """
    probs = np.array([p for p, _ in quantiles], dtype=np.float64)
    log_values = np.log(np.array([v for _, v in quantiles], dtype=np.float64))
    durations = np.rint(np.exp(np.interp(uniforms, probs, log_values)))
    low = max(1.0, float(np.ceil(quantiles[0][1])))
    clipped: FloatArray = np.clip(durations, low, float(np.floor(quantiles[-1][1])))
    return clipped


def _categorical(uniforms: FloatArray, weights: FloatArray) -> IntArray:
    """Indices i with cdf[i-1] <= u < cdf[i] (inverse CDF of a weighted categorical)."""
    cdf = np.cumsum(weights) / weights.sum()
    picks = np.searchsorted(cdf, uniforms, side="right")
    clipped: IntArray = np.minimum(picks, weights.shape[0] - 1).astype(np.int64)
    return clipped


def generate_command(num_jobs: int, seed: int, params: SiaPhillyParams = SIA_PHILLY) -> str:
    """The canonical CLI command that regenerates a trace (written into the file).

    Args:
        num_jobs: J.
        seed: the seed.
        params: must differ from the defaults only in options the CLI offers
            (``jobs_per_hour``, ``model_given_gpus``).

    Returns:
        E.g. ``python -m traces generate --kind sia-philly --num-jobs 160 --seed 0``.

    Raises:
        ConfigError: if ``params`` cannot be expressed as CLI options.
    """
    cli_free = replace(params, jobs_per_hour=SIA_PHILLY_JOBS_PER_HOUR, model_given_gpus=True)
    if cli_free != SIA_PHILLY:
        raise ConfigError("these parameters have no CLI equivalent; write the file yourself")
    command = f"python -m traces generate --kind sia-philly --num-jobs {num_jobs} --seed {seed}"
    if params.jobs_per_hour != SIA_PHILLY_JOBS_PER_HOUR:
        command += f" --jobs-per-hour {params.jobs_per_hour!r}"
    if not params.model_given_gpus:
        command += " --independent-models"
    return command


def write_sia_philly_like(
    path: str | Path, num_jobs: int = 160, seed: int = 0, params: SiaPhillyParams = SIA_PHILLY
) -> Path:
    """Generate a trace and write it atomically, with its command and citation as ``#`` lines.

    Args:
        path: destination CSV file (folders are created).
        num_jobs: J.
        seed: the seed.
        params: fitted parameters (CLI-expressible, see :func:`generate_command`).

    Returns:
        The path written.

    Raises:
        ConfigError: for invalid arguments.
        OSError: if the file cannot be written.
    """
    comment = (
        f"generated by: {generate_command(num_jobs, seed, params)}\n"
        f"fitted to: {FITTED_ON}; duration = iterations"
    )
    table = generate_sia_philly_like(num_jobs, seed, params)
    return atomic_write_text(path, table.to_csv_text(comment))
