"""Regime knobs of the Sia-Philly-like generator: load, wide jobs, burstiness, duration spread,
grouped long wide jobs.

A :class:`Knobs` shifts the fitted distributions of :mod:`traces.generate` without changing how
the streams are consumed (one uniform per job for GPU counts, models and durations), so the
same seed gives the same models and duration quantiles under any GPU-count knob and the same
GPU counts under any duration knob. Every default leaves the generator unchanged, byte for byte.

- **load** ``L``: the arrival rate is ``L x jobs_per_hour`` (Poisson gaps are ``1 / L`` times
  the default's, drawn from the same uniforms).
- **wide share** ``p``: a *wide* job has ``num_gpus >= WIDE_MIN_GPUS`` (2: every multi-GPU job).
  The narrow and the wide weights of the GPU-count mix are rescaled to total ``1 - p`` and
  ``p``, each keeping its own proportions (the fitted mix has ``p = 461 / 800``).
- **wide mean** ``w``: the wide weights are exponentially tilted in ``log num_gpus``,
  ``weight_g x g^theta``, with ``theta`` solved (bisection) so that the wide jobs' mean GPU
  count is ``w``; ``theta = 1`` would be the size-biased mix (the job a random busy GPU sees).
  The mean is increasing in ``theta`` (its derivative is Cov(g, log g) > 0), so ``w`` has one
  ``theta`` for every ``w`` strictly between the smallest and the largest wide count. Widths stay
  in the fitted support (4..48 GPUs), so models and duration groups stay as fitted.
- **burstiness**: arrivals from a two-state Markov-modulated Poisson process with rate ratio
  ``R`` (``burst_ratio``), burst time share ``f`` and mean burst length ``M`` s
  (:mod:`traces.arrivals`; mean rate unchanged). ``R = 1`` keeps the Poisson sampler.
- **duration spread** ``s``: every duration quantile function ``Q`` becomes
  ``m (Q / m)^s`` with ``m = Q(0.5)`` its median: the median is kept and every spread of
  ``log duration`` (its standard deviation, its interquartile range) is multiplied by ``s``.
  Applied to the knots of the piecewise log-linear quantile functions, this is exact (log Q is
  linear in the knots' logs).
- **wide groups** ``N``, ``K``, ``W``: N groups of K *long wide* jobs (at least
  :data:`LONG_WIDE_MIN_GPUS` GPUs, duration above their duration group's median, drawn from
  the fitted conditional distributions), each group's arrivals less than W s apart; they take
  the place of the trace's last N K jobs (:mod:`traces.wide_groups`). ``N = 0`` adds none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.types import FloatArray, IntArray
from traces.sia_philly_fit import DurationFit, SiaPhillyParams

WIDE_MIN_GPUS: int = 2
"""A job with at least this many GPUs is *wide* (every multi-GPU job)."""

LONG_WIDE_MIN_GPUS: int = 24
"""A *long wide* job (the wide-groups knob) has at least this many GPUs: the smallest count of
the fitted duration group of the longest jobs (resnet50 with 24-48 GPUs, median 195,574.5
iterations against 59,447 for its 4-GPU jobs;
:data:`traces.sia_philly_fit.SIA_PHILLY_MODEL_DURATIONS`)."""

MAX_WIDE_GROUP_WINDOW_S: float = 1e9
"""Largest ``wide_group_window_s`` (31.7 years): arrival times stay whole seconds far inside
int64."""

MAX_DURATION_SPREAD: float = 4.0
"""Largest ``duration_spread``: at 4 the longest fitted group (resnet50, >= 24 GPUs, max / median
14.9) reaches 14.9^4 x 195,575 iterations, ~50 years of run time; beyond it durations leave any
simulable range."""

KNOB_FLAGS: dict[str, str] = {
    "load": "--load",
    "wide_share": "--wide-share",
    "wide_mean_gpus": "--wide-mean-gpus",
    "burst_ratio": "--burst-ratio",
    "burst_share": "--burst-share",
    "burst_length_s": "--burst-length-s",
    "duration_spread": "--duration-spread",
    "wide_groups": "--wide-groups",
    "wide_group_size": "--wide-group-size",
    "wide_group_window_s": "--wide-group-window-s",
}
"""The command-line flag of each :class:`Knobs` field (``python -m traces generate``)."""


@dataclass(frozen=True)
class Knobs:
    """Shifts of the fitted distributions (defaults: none; see the module docstring).

    Attributes:
        load: arrival-rate scale L > 0 (rate = L x jobs_per_hour).
        wide_share: share p in [0, 1] of jobs with >= :data:`WIDE_MIN_GPUS` GPUs, or None
            (the fitted share).
        wide_mean_gpus: mean GPU count of those jobs, strictly between the smallest and the
            largest wide count of the mix (4 and 48 for the fitted mix), or None (the fitted
            mean, 10.29).
        burst_ratio: R >= 1, arrival rate in a burst / in a quiet period (1: Poisson).
        burst_share: f in (0, 1), share of time in bursts (used when R > 1).
        burst_length_s: M > 0, mean burst length in seconds (used when R > 1).
        duration_spread: s in (0, :data:`MAX_DURATION_SPREAD`], the log-duration spread scale.
        wide_groups: N >= 0, groups of long wide jobs (0: none).
        wide_group_size: K >= 1, long wide jobs per group (used when N > 0).
        wide_group_window_s: W in (0, :data:`MAX_WIDE_GROUP_WINDOW_S`], the arrivals of a
            group are less than W s apart (used when N > 0).

    The two counts take whole numbers; an integral float (``1.0``, as the command line parses
    it) is stored as the int.

    Raises:
        ConfigError: ``"{flag} must be ..., got {value}"``, naming the field's flag
            (:data:`KNOB_FLAGS`), for a value out of its range, not finite, or (a count) not
            whole.
    """

    load: float = 1.0
    wide_share: float | None = None
    wide_mean_gpus: float | None = None
    burst_ratio: float = 1.0
    burst_share: float = 0.2
    burst_length_s: float = 1800.0
    duration_spread: float = 1.0
    wide_groups: int = 0
    wide_group_size: int = 3
    wide_group_window_s: float = 1200.0

    def __post_init__(self) -> None:
        _check("load", self.load, 0.0, math.inf, low_open=True)
        if self.wide_share is not None:
            _check("wide_share", self.wide_share, 0.0, 1.0)
        if self.wide_mean_gpus is not None:
            _check("wide_mean_gpus", self.wide_mean_gpus, 0.0, math.inf, low_open=True)
        _check("burst_ratio", self.burst_ratio, 1.0, math.inf)
        _check("burst_share", self.burst_share, 0.0, 1.0, low_open=True, high_open=True)
        _check("burst_length_s", self.burst_length_s, 0.0, math.inf, low_open=True)
        _check("duration_spread", self.duration_spread, 0.0, MAX_DURATION_SPREAD,
               low_open=True)
        object.__setattr__(self, "wide_groups", _whole("wide_groups", self.wide_groups, 0))
        object.__setattr__(self, "wide_group_size",
                           _whole("wide_group_size", self.wide_group_size, 1))
        _check("wide_group_window_s", self.wide_group_window_s, 0.0, MAX_WIDE_GROUP_WINDOW_S,
               low_open=True)

    def changed(self) -> dict[str, float | None]:
        """The fields that differ from the defaults, in declaration order."""
        default = Knobs()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    def flags(self) -> str:
        """The command-line flags of :meth:`changed` (``repr`` of each value: exact), e.g.
        ``" --load 2.0 --duration-spread 1.5"``; empty for the defaults."""
        return "".join(f" {KNOB_FLAGS[name]} {value!r}" for name, value in self.changed().items())


def _check(name: str, value: float, low: float, high: float, *, low_open: bool = False,
           high_open: bool = False) -> None:
    number = float(value)
    below = number <= low if low_open else number < low
    above = number >= high if high_open else number > high
    if not math.isfinite(number) or below or above:
        if math.isinf(high):
            wanted = f"{'>' if low_open else '>='} {low:g}"
        else:
            wanted = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ConfigError(f"{KNOB_FLAGS[name]} must be a finite number {wanted}, got {value!r}")


def _whole(name: str, value: object, low: int) -> int:
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or number != int(number) or number < low:
        raise ConfigError(f"{KNOB_FLAGS[name]} must be a whole number >= {low}, got {value!r}")
    return int(number)


NO_KNOBS = Knobs()
"""The defaults: the generator as fitted."""


def gpu_weights(gpu_counts: tuple[tuple[int, int], ...], knobs: Knobs
                ) -> tuple[tuple[int, float], ...]:
    """The GPU-count mix under the wide-share and wide-mean knobs.

    Args:
        gpu_counts: (num_gpus, weight) pairs of the fitted mix.
        knobs: gives ``wide_share`` and ``wide_mean_gpus``.

    Returns:
        (num_gpus, weight) pairs in the same order; the input itself when both knobs are None.

    Raises:
        ConfigError: naming the flag, if the mix has no wide (or no narrow) count the share
            asks for, or if ``wide_mean_gpus`` is not strictly between the smallest and the
            largest wide count.

    Source: exponential tilting (module docstring).
    """
    if knobs.wide_share is None and knobs.wide_mean_gpus is None:
        return tuple((g, float(w)) for g, w in gpu_counts)
    values = np.array([g for g, _ in gpu_counts], dtype=np.int64)
    weights = np.array([w for _, w in gpu_counts], dtype=np.float64)
    wide = values >= WIDE_MIN_GPUS
    if knobs.wide_mean_gpus is not None:
        total = weights[wide].sum()  # the wide share is kept unless wide_share is given
        weights[wide] = total * tilt_to_mean(values[wide], weights[wide], knobs.wide_mean_gpus)
    if knobs.wide_share is not None:
        share = knobs.wide_share
        for part, total in ((wide, share), (~wide, 1.0 - share)):
            if total > 0 and not part.any():
                raise ConfigError(f"--wide-share {share!r}: the GPU-count mix has no "
                                  f"{'wide' if part is wide else 'narrow'} count")
            if part.any():
                weights[part] *= total / weights[part].sum()
    return tuple((int(g), float(w)) for g, w in zip(values.tolist(), weights.tolist(),
                                                     strict=True))


def tilt_to_mean(values: IntArray, weights: FloatArray, mean: float) -> FloatArray:
    """Weights ``w_g g^theta`` (rescaled) whose mean of ``g`` is ``mean``.

    Args:
        values: int64 (K,) distinct GPU counts >= 1.
        weights: float64 (K,) weights > 0.
        mean: target mean GPU count, strictly between ``values.min()`` and ``values.max()``.

    Returns:
        float64 (K,) weights summing to 1.

    Raises:
        ConfigError: ``--wide-mean-gpus`` out of that open interval.

    Source: exponential tilting in log g; bisection on theta (the tilted mean is increasing).
    """
    low_g, high_g = int(values.min()), int(values.max())
    if not low_g < mean < high_g:
        raise ConfigError(f"--wide-mean-gpus must lie strictly between {low_g} and {high_g} "
                          f"(the wide GPU counts of the mix), got {mean!r}")
    logs = np.log(values.astype(np.float64))

    def tilted(theta: float) -> FloatArray:
        scaled = np.log(weights) + theta * logs
        probs: FloatArray = np.exp(scaled - scaled.max())
        normalised: FloatArray = probs / probs.sum()
        return normalised

    low, high = -1.0, 1.0
    while float(tilted(low) @ values) > mean:
        low *= 2.0
    while float(tilted(high) @ values) < mean:
        high *= 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if float(tilted(middle) @ values) < mean:
            low = middle
        else:
            high = middle
    return tilted(0.5 * (low + high))


def spread_quantiles(quantiles: tuple[tuple[float, float], ...], spread: float
                     ) -> tuple[tuple[float, float], ...]:
    """Knots of ``m (Q / m)^spread``, ``m`` the median of the piecewise log-linear ``Q``.

    Args:
        quantiles: (probability, iterations) knots from 0.0 to 1.0.
        spread: s > 0.

    Returns:
        The knots with the same probabilities and values ``m (v / m)^s``.

    Source: the duration-spread knob (module docstring).
    """
    probs = np.array([p for p, _ in quantiles], dtype=np.float64)
    logs = np.log(np.array([v for _, v in quantiles], dtype=np.float64))
    log_median = float(np.interp(0.5, probs, logs))
    values = np.exp(log_median + spread * (logs - log_median))
    return tuple(zip(probs.tolist(), values.tolist(), strict=True))


def spread_params(params: SiaPhillyParams, spread: float) -> SiaPhillyParams:
    """``params`` with every duration quantile function spread by ``spread`` (1: ``params``)."""
    if spread == 1.0:
        return params
    fits = tuple(DurationFit(f.model, f.min_gpus, f.jobs, spread_quantiles(f.quantiles, spread))
                 for f in params.model_durations)
    return replace(params, model_durations=fits,
                   duration_quantiles=spread_quantiles(params.duration_quantiles, spread))
