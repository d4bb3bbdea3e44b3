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
from traces.arrivals import Mmpp2
from traces.inverse_cdf import categorical, durations_at, models_at
from traces.knobs import NO_KNOBS, Knobs, gpu_weights, spread_params
from traces.sia_philly_fit import (
    FITTED_ON,
    SIA_COLUMNS,
    SIA_PHILLY,
    SIA_PHILLY_JOBS_PER_HOUR,
    SiaPhillyParams,
)
from traces.wide_groups import ordinary_jobs, sample_wide_groups


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
    num_jobs: int = 160, seed: int = 0, params: SiaPhillyParams = SIA_PHILLY,
    knobs: Knobs = NO_KNOBS,
) -> SiaTraceTable:
    """Generate a Sia-Philly-like trace.

    ``numpy.random.SeedSequence(seed).spawn(5)`` gives one stream each for arrivals, GPU counts,
    models, durations and wide groups (in that order; changing it changes every generated file).
    Each of the first four draws its J values in job order (the duration stream one uniform per
    job, mapped through the job's quantile function), so the first J jobs of a longer trace with
    the same seed are this trace. The wide-groups knob (:mod:`traces.wide_groups`) draws its
    N K long wide jobs from the fifth stream, and they take the place of the last N K jobs: the
    other jobs are the first J - N K of the trace without groups. No global RNG is used: equal
    arguments give equal tables. The other knobs (:mod:`traces.knobs`) change the
    distributions, not the draws: the GPU-count, model and duration streams still draw one
    uniform per job (bursty arrivals draw their own sequence from the arrival stream,
    :meth:`traces.arrivals.Mmpp2.sample_times`).

    Args:
        num_jobs: J >= 1.
        seed: non-negative integer seed.
        params: fitted parameters (default: :data:`SIA_PHILLY`).
        knobs: load, wide-job, burstiness, duration-spread and wide-group shifts (default:
            none, the fitted generator byte for byte).

    Returns:
        The trace table, job ids 0..J-1 in submission order.

    Raises:
        ConfigError: if ``num_jobs`` < 1 or ``seed`` < 0, if the wide groups leave no other
            job or the mix has no count for them (:mod:`traces.wide_groups`).

    Source: the published Sia-Philly statistics (see the module constants).
    """
    if num_jobs < 1:
        raise ConfigError(f"num_jobs must be >= 1, got {num_jobs}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    ordinary = ordinary_jobs(num_jobs, knobs)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]
    arrival_rng, gpu_rng, model_rng, duration_rng, group_rng = streams
    weights = gpu_weights(params.gpu_counts, knobs)
    spread = spread_params(params, knobs.duration_spread)
    num_gpus = sample_num_gpus(gpu_rng, ordinary, weights)
    model = sample_models(model_rng, num_gpus, params)
    durations = sample_durations(duration_rng, model, num_gpus, spread)
    rate = params.jobs_per_hour * knobs.load
    if knobs.burst_ratio == 1.0:
        submit_time_s = sample_submit_times(arrival_rng, ordinary, rate)
    else:
        process = Mmpp2.from_burstiness(
            rate / 3600.0, knobs.burst_ratio, knobs.burst_share, knobs.burst_length_s)
        submit_time_s = np.floor(process.sample_times(arrival_rng, ordinary)).astype(np.int64)
    if ordinary < num_jobs:
        groups = sample_wide_groups(group_rng, knobs, weights, spread, int(submit_time_s[-1]))
        order = np.argsort(np.concatenate([submit_time_s, groups.submit_time_s]), kind="stable")
        num_gpus = np.concatenate([num_gpus, groups.num_gpus])[order]
        submit_time_s = np.concatenate([submit_time_s, groups.submit_time_s])[order]
        durations = np.concatenate([durations, groups.duration_iterations])[order]
        model = tuple((model + groups.model)[i] for i in order.tolist())
    return SiaTraceTable(
        job_id=np.arange(num_jobs, dtype=np.int64), num_gpus=num_gpus,
        submit_time_s=submit_time_s, duration_iterations=durations, model=model,
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
    rng: np.random.Generator, num_jobs: int, gpu_counts: tuple[tuple[int, float], ...]
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
    return values[categorical(rng.random(size=num_jobs), weights)]


def sample_models(
    rng: np.random.Generator, num_gpus: IntArray, params: SiaPhillyParams
) -> tuple[str, ...]:
    """Model names, given each job's GPU count (or from the model marginal).

    One uniform is drawn per job whatever the option, so the stream is consumed identically;
    the uniforms are mapped by :func:`traces.inverse_cdf.models_at`.

    Args:
        rng: the model stream.
        num_gpus: int64 (J,) GPU counts of the jobs.
        params: gives ``model_gpu_counts`` and ``model_given_gpus``.

    Returns:
        J model names.
    """
    return models_at(rng.random(size=int(num_gpus.shape[0])), num_gpus, params)


def sample_durations(
    rng: np.random.Generator, model: tuple[str, ...], num_gpus: IntArray,
    params: SiaPhillyParams,
) -> FloatArray:
    """Durations by inverse-CDF sampling of piecewise log-linear quantile functions.

    One uniform ``u`` is drawn per job (in job order, whatever the option); the duration is
    ``Q(u)`` of the job's duration group (:func:`traces.inverse_cdf.durations_at`).

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
    return durations_at(rng.random(size=int(num_gpus.shape[0])), model, num_gpus, params)


def generate_command(
    num_jobs: int, seed: int, params: SiaPhillyParams = SIA_PHILLY, knobs: Knobs = NO_KNOBS
) -> str:
    """The canonical CLI command that regenerates a trace (written into the file).

    Args:
        num_jobs: J.
        seed: the seed.
        params: must differ from the defaults only in options the CLI offers
            (``jobs_per_hour``, ``model_given_gpus``).
        knobs: every knob that differs from its default is written as its flag
            (:meth:`traces.knobs.Knobs.flags`).

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
    return command + knobs.flags()


def write_sia_philly_like(
    path: str | Path, num_jobs: int = 160, seed: int = 0, params: SiaPhillyParams = SIA_PHILLY,
    knobs: Knobs = NO_KNOBS, note: str = "",
) -> Path:
    """Generate a trace and write it atomically, with its command and citation as ``#`` lines.

    Args:
        path: destination CSV file (folders are created).
        num_jobs: J.
        seed: the seed.
        params: fitted parameters (CLI-expressible, see :func:`generate_command`).
        knobs: distribution shifts (:mod:`traces.knobs`), recorded as flags in the command.
        note: an extra ``#`` line after the citation (e.g. the regime's name); none if empty.

    Returns:
        The path written.

    Raises:
        ConfigError: for invalid arguments.
        OSError: if the file cannot be written.
    """
    comment = (
        f"generated by: {generate_command(num_jobs, seed, params, knobs)}\n"
        f"fitted to: {FITTED_ON}; duration = iterations"
        + (f"\n{note}" if note else "")
    )
    table = generate_sia_philly_like(num_jobs, seed, params, knobs)
    return atomic_write_text(path, table.to_csv_text(comment))
