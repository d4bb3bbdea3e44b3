"""Grouped arrivals of long wide jobs: the wide-groups knob of :mod:`traces.knobs`.

A trace of J jobs under ``Knobs(wide_groups=N, wide_group_size=K, wide_group_window_s=W)``
holds the generator's first J - N K jobs at its seed (the *ordinary* jobs, unchanged) and N K
*long wide* jobs in N groups of K. :func:`traces.generate.generate_sia_philly_like` merges them
by arrival time (ties: ordinary jobs first) and numbers the jobs 0..J-1 in submission order.

- A **long wide** job has ``num_gpus >= LONG_WIDE_MIN_GPUS`` (24) and a duration above its
  duration group's median. In the fit, every job of 24 or more GPUs is a resnet50 job of the
  duration group of 24-48 GPUs (18 public jobs; median 195,574.5 iterations, 9.5 h at resnet50's
  0.1754 s per iteration, maximum 2,912,468). Several such jobs arriving close together are
  what first-fit backfilling can starve: short jobs keep taking the GPUs the wide jobs wait for.
- Its GPU count is drawn from the trace's GPU-count mix (after the wide-share and wide-mean
  knobs) conditioned on >= 24 GPUs (fitted: 24, 32, 48 GPUs with weights 5, 8, 5), its model
  from the model mix given that count (fitted: resnet50), and its duration at the level
  ``v = 1 - u / 2`` of its group's quantile function ``Q`` (after the duration-spread knob):
  ``v`` is uniform on (0.5, 1], so ``Q(v)`` follows the fitted distribution conditioned on
  lying above its median. In the fitted group ``log Q`` is linear on [0.5, 1], so the
  duration is log-uniform between the median and the maximum.
- Group g's anchor is ``a_g = floor(S u)``, ``S`` the last ordinary arrival (s), and its K
  arrivals are ``a_g + floor(W u_k)``: every group starts within the ordinary jobs' span and
  its arrivals lie in [a_g, a_g + W), less than W s apart. Groups are drawn independently
  and may overlap.

The draws come from a fifth stream of the seed, ``SeedSequence(seed).spawn(5)[4]`` (the first
four are the generator's, unchanged): N anchor uniforms, then four rows of N K uniforms (arrival
offsets, GPU counts, models, durations), the jobs in group order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.types import FloatArray, IntArray
from traces.inverse_cdf import categorical, durations_at, models_at
from traces.knobs import LONG_WIDE_MIN_GPUS, Knobs
from traces.sia_philly_fit import SiaPhillyParams


@dataclass(frozen=True, eq=False)
class WideGroups:
    """The long wide jobs of a trace, in group order (M = N K rows).

    Attributes:
        group: int64 (M,), the job's group 0..N-1 (K consecutive rows each).
        submit_time_s: int64 (M,), arrival in whole seconds from trace start.
        num_gpus: int64 (M,), >= :data:`~traces.knobs.LONG_WIDE_MIN_GPUS`.
        model: M model names.
        duration_iterations: float64 (M,), whole iterations, above the group's median.
    """

    group: IntArray
    submit_time_s: IntArray
    num_gpus: IntArray
    model: tuple[str, ...]
    duration_iterations: FloatArray


def ordinary_jobs(num_jobs: int, knobs: Knobs) -> int:
    """J - N K, the jobs of a J-job trace that are not in a wide group.

    Raises:
        ConfigError: ``"--wide-groups N x --wide-group-size K = M grouped jobs must be fewer
            than --num-jobs J"`` unless one job at least is left (its arrivals give the span
            the groups are anchored in).
    """
    grouped = knobs.wide_groups * knobs.wide_group_size
    if knobs.wide_groups and grouped >= num_jobs:
        raise ConfigError(f"--wide-groups {knobs.wide_groups} x --wide-group-size "
                          f"{knobs.wide_group_size} = {grouped} grouped jobs must be fewer "
                          f"than --num-jobs {num_jobs}")
    return num_jobs - grouped if knobs.wide_groups else num_jobs


def long_wide_mix(gpu_counts: tuple[tuple[int, float], ...]) -> tuple[IntArray, FloatArray]:
    """The GPU counts >= :data:`~traces.knobs.LONG_WIDE_MIN_GPUS` of a mix, and their weights.

    Args:
        gpu_counts: (num_gpus, weight) pairs (after :func:`traces.knobs.gpu_weights`).

    Returns:
        int64 (C,) counts and float64 (C,) weights > 0, in the mix's order.

    Raises:
        ConfigError: if no such count has a positive weight (e.g. ``--wide-share 0``).
    """
    rows = [(g, w) for g, w in gpu_counts if g >= LONG_WIDE_MIN_GPUS and w > 0]
    if not rows:
        raise ConfigError(f"--wide-groups: the GPU-count mix has no count of "
                          f"{LONG_WIDE_MIN_GPUS} GPUs or more with a positive weight")
    return (np.array([g for g, _ in rows], dtype=np.int64),
            np.array([w for _, w in rows], dtype=np.float64))


def sample_wide_groups(
    rng: np.random.Generator, knobs: Knobs, gpu_counts: tuple[tuple[int, float], ...],
    params: SiaPhillyParams, span_s: int,
) -> WideGroups:
    """Draw the N groups of K long wide jobs (rules and draw order: module docstring).

    Args:
        rng: the group stream.
        knobs: gives N = ``wide_groups`` >= 1, K = ``wide_group_size``, W =
            ``wide_group_window_s``.
        gpu_counts: the trace's (num_gpus, weight) mix.
        params: the fitted parameters, durations already spread by the duration-spread knob.
        span_s: S >= 0, the last ordinary arrival (s).

    Returns:
        The jobs, in group order.

    Raises:
        ConfigError: if the mix has no count of 24 GPUs or more (:func:`long_wide_mix`).
    """
    values, weights = long_wide_mix(gpu_counts)
    num, size = knobs.wide_groups, knobs.wide_group_size
    anchors = np.floor(rng.random(num) * span_s).astype(np.int64)
    offsets, widths, models, levels = rng.random((4, num * size))
    submit = np.repeat(anchors, size) + np.floor(offsets * knobs.wide_group_window_s).astype(
        np.int64)
    num_gpus = values[categorical(widths, weights)]
    model = models_at(models, num_gpus, params)
    durations = durations_at(1.0 - 0.5 * levels, model, num_gpus, params)
    return WideGroups(group=np.repeat(np.arange(num, dtype=np.int64), size),
                      submit_time_s=submit, num_gpus=num_gpus, model=model,
                      duration_iterations=durations)
