"""Episode sources of the env: which trace, job window and profile an episode uses.

``trace`` may be a path, the name of a bundled trace (``"sia-philly-gen-0"``), ``"bundled"``
(all bundled traces), a split of a trace set (``"<set>:<split>"`` such as ``"bundled:train"`` or
``"/data/sia_philly_pal:test"``, or ``{"set": ..., "split": ...}``; see
:mod:`palgym.tracesets`), a :class:`~palgym.sim.workload.Trace`, or a list of those. At reset, the
trace and (with ``window``) the first job of a window of consecutive jobs are drawn from the
env's seeded RNG unless ``options`` names them; a window's times are rebased so that its first
job arrives at 0.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from palgym.bundled import bundled_profile, bundled_trace_paths
from palgym.envs.actions import ActionCodec
from palgym.envs.arguments import copy_rng
from palgym.envs.candidates import EpisodeTables
from palgym.envs.heuristics import pal_orders
from palgym.envs.observed import ObservedRates
from palgym.envs.references import profile_factors, reference_completions
from palgym.errors import ConfigError
from palgym.io.sia import read_sia_trace
from palgym.policies.base import Sampler, make_sampler
from palgym.policies.belief import Belief, BeliefFit, BeliefOptions
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.slowdown import ClusterCountRule, SlowdownFactors
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig
from palgym.sim.engine import Simulator
from palgym.sim.types import PERF_CLASS_NAMES
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import Episode, make_episode
from palgym.tracesets import parse_split_spec, split_traces

TraceSpec = str | Path | Trace | Mapping[str, str]


def load_traces(spec: TraceSpec | Sequence[TraceSpec]) -> list[Trace]:
    """Resolve a trace spec (see module docstring) into traces.

    Raises:
        ConfigError: for an unknown bundled name (TraceSetError, a ConfigError, for a bad
            trace-set spec or a trace set whose files changed).
        TraceFormatError: for a malformed file.
    """
    if isinstance(spec, (str, Path, Trace, Mapping)):
        specs: list[TraceSpec] = [spec]
    else:
        specs = list(spec)
    bundled = bundled_trace_paths()
    traces: list[Trace] = []
    for item in specs:
        split = None if isinstance(item, (Trace, Path)) else parse_split_spec(item)
        if isinstance(item, Trace):
            traces.append(item)
        elif split is not None:
            traces.extend(split_traces(*split))
        elif str(item) == "bundled":
            traces.extend(read_sia_trace(bundled[name]) for name in sorted(bundled))
        elif str(item) in bundled:
            traces.append(read_sia_trace(bundled[str(item)]))
        elif not isinstance(item, Mapping) and Path(item).is_file():
            traces.append(read_sia_trace(item))
        else:
            head, sep, tail = str(item).rpartition(":")
            if sep and (head == "bundled" or Path(head).exists()):
                raise ConfigError(f"trace {str(item)!r}: unknown split {tail!r} of trace set "
                                  f"{head!r} (train, validation or test)")
            raise ConfigError(
                f"trace {str(item)!r} is neither a file nor a bundled trace "
                f"({', '.join(sorted(bundled))}, or 'bundled') nor a trace-set split "
                "('<set>:<split>', e.g. 'bundled:train')"
            )
    if not traces:
        raise ConfigError("no trace given")
    return traces


def job_window(trace: Trace, start: int, size: int) -> Trace:
    """Jobs ``start .. start+size-1`` (arrival order) with times rebased to the first arrival.

    Raises:
        ConfigError: if the window does not lie inside the trace.
    """
    if start < 0 or size < 1 or start + size > trace.num_jobs:
        raise ConfigError(
            f"job window [{start}, {start + size}) is outside trace {trace.name!r} "
            f"of {trace.num_jobs} jobs"
        )
    keep = np.zeros(trace.num_jobs, dtype=bool)
    keep[start : start + size] = True
    window = trace.select(keep, name=f"{trace.name}[{start}:{start + size}]")
    offset = float(window.submit_time_s[0])
    return replace(window, submit_time_s=window.submit_time_s - offset)


def choose_episode_trace(
    traces: Sequence[Trace],
    window: int | None,
    rng: np.random.Generator,
    options: dict[str, Any],
) -> tuple[Trace, int]:
    """The episode's trace and first job (see module docstring).

    Args:
        traces: the env's traces.
        window: jobs per episode (None: the whole trace).
        rng: the env's seeded generator (used only for what ``options`` leaves open).
        options: may hold ``trace`` (index, spec or Trace) and ``window_start``.

    Returns:
        ``(trace or job window, window start)``.

    Raises:
        ConfigError: for a ``trace`` index outside the env's traces or a ``window_start``
            outside ``[0, num_jobs - window]``, naming the option and the valid range.
    """
    chosen = options.get("trace")
    if chosen is None:
        trace = traces[int(rng.integers(len(traces)))]
    elif isinstance(chosen, numbers.Integral) and not isinstance(chosen, bool):
        if not 0 <= int(chosen) < len(traces):
            raise ConfigError(f"reset option 'trace' {chosen!r}: an index of the env's traces "
                              f"must be in [0, {len(traces) - 1}] ({len(traces)} traces)")
        trace = traces[int(chosen)]
    else:
        trace = load_traces(chosen)[0]
    if window is None or window >= trace.num_jobs:
        return trace, 0
    start = options.get("window_start")
    last = trace.num_jobs - window
    if start is None:
        start = int(rng.integers(last + 1))
    elif (isinstance(start, bool) or not isinstance(start, numbers.Integral)
          or not 0 <= int(start) <= last):
        raise ConfigError(f"reset option 'window_start' must be an integer in [0, {last}] "
                          f"(windows of {window} jobs in trace {trace.name!r} of "
                          f"{trace.num_jobs}), got {start!r}")
    return job_window(trace, int(start), window), int(start)


RESET_OPTIONS: tuple[str, ...] = ("trace", "window_start", "profile")
"""The keys the env's ``reset(options=...)`` accepts."""


def reset_options(options: object) -> dict[str, Any]:
    """The env's ``reset`` options as a dict (None: no options).

    Raises:
        TypeError: if ``options`` is neither None nor a mapping, naming ``options``.
        ConfigError: naming unknown keys and the accepted ones (:data:`RESET_OPTIONS`).
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset(options=...) must be a dict with keys among "
                        f"{list(RESET_OPTIONS)} or None, got {type(options).__name__} "
                        f"{options!r}")
    unknown = [key for key in options if key not in RESET_OPTIONS]
    if unknown:
        raise ConfigError(f"reset options {unknown} are not known: the env accepts "
                          f"{list(RESET_OPTIONS)}")
    return dict(options)


class EpisodeSource(Protocol):
    """What :func:`draw_episode` reads of the env (its constructor's episode arguments)."""

    traces: list[Trace]
    window: int | None
    cluster: ClusterSpec
    config: SimConfig
    profile: VariabilityProfile | None
    variability_data: str | Path | None
    belief: BeliefOptions


def draw_episode(env: EpisodeSource, memo: EpisodeMemo, rng: np.random.Generator,
                 options: Mapping[str, Any]) -> tuple[Episode, int]:
    """The next episode of ``env`` and its window start: trace and window
    (:func:`choose_episode_trace`), then the episode seed, drawn from ``rng``; the profile
    from ``options["profile"]``, else the env's, else its measurements or the bundled one."""
    trace, window_start = choose_episode_trace(env.traces, env.window, rng, dict(options))
    episode_seed = int(rng.integers(2**31 - 1))
    profile = options.get("profile", env.profile)
    if profile is None and env.variability_data is None:
        profile = memo.bundled_profile(env.config.profile_sampling, env.cluster)
    episode = make_episode(
        trace, cluster=env.cluster, config=env.config, profile=profile,
        variability_data=None if profile is not None else env.variability_data,
        seed=episode_seed, belief=env.belief,
    )
    return episode, window_start


class EpisodeMemo:
    """What an env's episodes share, computed once: the bundled profile, and through the
    process's caches (:mod:`palgym.envs.references`) the slowdown factors of each profile and
    the baseline's completion times of each episode."""

    def __init__(self) -> None:
        self._bundled: dict[tuple[str, int], VariabilityProfile] = {}

    def bundled_profile(self, sampling: str, cluster: ClusterSpec) -> VariabilityProfile:
        """The bundled profile of ``sampling`` for the cluster (read once)."""
        key = (sampling, cluster.num_gpus)
        if key not in self._bundled:
            self._bundled[key] = bundled_profile(sampling, cluster.num_gpus)
        return self._bundled[key]

    def slowdown_factors(self, episode: Episode, max_tiers: int) -> SlowdownFactors:
        """The episode profile's slowdown factors (fitted once per profile and rule,
        :func:`palgym.envs.references.profile_factors`).

        Raises:
            ConfigError: if a class has more than ``max_tiers`` tiers.
        """
        return check_tiers(profile_factors(episode), max_tiers, "the profile",
                           episode.profile.name)

    def baseline(self, episode: Episode, policy: str, queue_order: str,
                 durations: Durations = CLAIRVOYANT) -> np.ndarray:
        """float64 (J,), read-only: completion times (s) of ``policy`` on the identical
        episode (the queue order knowing job durations as ``durations`` does; PAL / PM-First
        deciding on ``episode.belief``, as the env's own heuristics do), run once per episode
        and reference in the process (:func:`palgym.envs.references.reference_completions`)."""
        return reference_completions(episode, policy, queue_order, durations)


def reset_info(episode: Episode, window_start: int) -> dict[str, Any]:
    """The env's ``reset`` info: the episode's trace, window start, profile, hash, seed and
    belief mode."""
    return {
        "trace": episode.trace.name, "window_start": window_start,
        "profile": episode.profile.name, "profile_hash": episode.profile.content_hash(),
        "episode_hash": episode.episode_hash(), "seed": episode.seed,
        "belief": episode.belief.mode.value,
    }


def check_tiers(factors: SlowdownFactors, max_tiers: int, source: str = "the profile",
                profile: str = "") -> SlowdownFactors:
    """``factors`` (fitted from ``source`` of the profile named ``profile``) if no class has
    more than ``max_tiers`` tiers.

    Raises:
        ConfigError: naming the profile, the first widest perf class, its tier count, every
            class's count and ``max_tiers``.
    """
    counts = [len(t) for t in factors.tiers]
    widest = max(counts)
    if widest > max_tiers:
        name = PERF_CLASS_NAMES[counts.index(widest)]
        per_class = ", ".join(f"{c} {n}" for c, n in zip(PERF_CLASS_NAMES, counts, strict=True))
        raise ConfigError(
            f"{source} ({profile or 'unnamed profile'}) has {widest} slowdown tiers in perf "
            f"class {name} (tiers per class: {per_class}), more than max_tiers={max_tiers} "
            f"that the env's candidates and observation have room for: use max_tiers >= "
            f"{widest} (a layout of its own: docs/ENV.md \"Cluster-independent layout\")")
    return factors


@dataclass(frozen=True)
class EpisodeContext:
    """The constants of one env episode, built at reset (and rebuilt when the belief's factors
    are refitted: :func:`refreshed`).

    Attributes:
        episode: the episode (trace window, profile, cluster, config, seeds, belief).
        factors: the slowdown factors the scheduler decides on (fitted from the belief).
        pal_orders: PAL's cost order of every perf class as candidate indices
            (:func:`palgym.envs.heuristics.pal_orders`).
        tables: the decision backends' episode tables.
        sampler: the Random candidate's sampler (a copy of the episode's placement RNG, so
            the env draws exactly what ``run_episode`` draws).
        fit: the belief and its fitted factors (:class:`palgym.policies.belief.BeliefFit`).
        rates: the observed rates of the ``gpus`` key (``observed_rates=True``), else None.
        fit_count: ``fit.refits`` when ``factors`` were taken from it.
    """

    episode: Episode
    factors: SlowdownFactors
    pal_orders: tuple[tuple[int, ...], ...]
    tables: EpisodeTables
    sampler: Sampler
    fit: BeliefFit
    rates: ObservedRates | None = None
    fit_count: int = 0

    def watcher(self) -> Callable[[Simulator], object] | None:
        """The round driver's per-commit and per-advance callback: the belief's update (if
        it changes during the episode) and the observed rates' (if kept); None if neither.

        The callback is an object holding this context's ``fit`` and ``rates`` (not a
        closure): ``copy.deepcopy`` of an env then gives the copy a callback on the copy's
        own belief and rates (a function is copied as itself, so a closure would keep
        updating the original's)."""
        fit = self.fit if self.fit.belief.changes else None
        if fit is None and self.rates is None:
            return None
        return _Watcher(fit, self.rates)


class _Watcher:
    """:meth:`EpisodeContext.watcher`'s callback: updates ``fit`` (None: a belief that does
    not change) and ``rates`` (None: not kept) on the engine's view."""

    def __init__(self, fit: BeliefFit | None, rates: ObservedRates | None) -> None:
        self.fit = fit
        self.rates = rates

    def __call__(self, sim: Simulator) -> None:
        view = sim.view()
        if self.fit is not None and self.fit.update(view):
            sim.mark_event()  # a refit is an event, as in run_episode's driver
        if self.rates is not None:
            self.rates.watch(view)


def episode_streams(seed: int) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """The dynamic truth's and the profiling run's seeds of an episode seed: children 3 and
    4 of ``SeedSequence(seed)``, as :func:`palgym.simulate.run_episode` spawns them."""
    truth_seed, profiling_seed = np.random.SeedSequence(seed).spawn(5)[3:]
    return truth_seed, profiling_seed


def start_episode(
    episode: Episode, memo: EpisodeMemo, codec: ActionCodec, strict_total: bool,
    observed_rates: bool = False,
) -> tuple[EpisodeContext, Simulator]:
    """The episode's constants and a fresh engine on it (the truth seeded as ``run_episode``
    seeds it; the scheduler's factors fitted from ``episode.belief``).

    Args:
        episode: the episode.
        memo: the env's memo (slowdown factors fitted once per profile).
        codec: the env's action codec.
        strict_total: the Packed candidate's strict-total quirk.
        observed_rates: keep the observed rates (:mod:`palgym.envs.observed`).

    Raises:
        ConfigError: the profile (or the initial belief) has more slowdown tiers than
            ``codec.max_tiers``.
    """
    profile_factors = memo.slowdown_factors(episode, codec.max_tiers)
    truth_seed, profiling_seed = episode_streams(episode.seed)
    sim = Simulator(episode.trace, episode.profile, episode.cluster, episode.config,
                    dynamics_seed=truth_seed)
    process = None if sim.truth is None else sim.truth.process
    belief = Belief(sim.view(), episode.belief, np.random.default_rng(profiling_seed), process)
    fit = BeliefFit(belief, ClusterCountRule(episode.config.slowdown_clusters), profile_factors,
                    episode.profile.perfvar)
    factors = check_tiers(fit.factors, codec.max_tiers, "the belief", episode.profile.name)
    context = EpisodeContext(
        episode=episode, factors=factors,
        pal_orders=pal_orders(factors, episode.config, codec),
        tables=EpisodeTables.build(sim, factors, codec, strict_total),
        sampler=make_sampler(copy_rng(episode.placement_rng)), fit=fit,
        rates=ObservedRates(sim.view()) if observed_rates else None,
    )
    return context, sim


def refreshed(context: EpisodeContext, sim: Simulator) -> EpisodeContext:
    """``context`` on the belief's current factors (itself if they were not refitted).

    Raises:
        ConfigError: a refit has more slowdown tiers than the codec's ``max_tiers``.
    """
    fit = context.fit
    if fit.refits == context.fit_count:
        return context
    tables = context.tables
    factors = check_tiers(fit.factors, tables.max_tiers,
                          f"the belief refitted at round {sim.round_index}",
                          context.episode.profile.name)
    rebuilt = EpisodeTables.build(sim, factors, tables.codec, tables.strict_total)
    return replace(context, factors=factors,
                   pal_orders=pal_orders(factors, sim.config, tables.codec),
                   tables=replace(rebuilt, buffers=tables.buffers), fit_count=fit.refits)
