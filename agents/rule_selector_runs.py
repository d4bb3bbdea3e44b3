"""Episodes, runs and tables of the learned rule selector (:mod:`agents.rule_selector`).

The episodes are a palgym-bench task's (the world, duration knowledge and the split's traces
of ``palgym-bench-v1``'s ``scheduling-clairvoyant`` by default) plus, optionally, the same
split of a regime collection written by ``python -m traces regimes`` (every regime's declared
train, validation or test seeds). Each episode carries a *stratum*: its regime, or the suite's
name for the suite's own traces; intervals resample traces within strata.

``python -m agents.rule_selector_cli train|evaluate`` is the command line (``--help``).
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.rule_selector import LinearSelector, Objective, log_ratio
from palgym.errors import ConfigError
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.rule_selection import run_selected_episode
from palgym.simulate import Episode, run_episode

DEFAULT_SUITE = "palgym-bench-v1"
DEFAULT_TASK = "scheduling-clairvoyant"
DEFAULT_RULES: tuple[str, ...] = ("srtf/pal+backfill", "srtf/pal+easy", "fifo/pal+backfill",
                                  "fifo/pal+easy", "srsf/pal+backfill", "srsf/pal+easy")
"""The selector's field: PAL under each queue order that reads durations or arrival times,
with first-fit and with EASY backfilling; the first is the search's start."""


@dataclass(frozen=True)
class LabelledEpisode:
    """An episode with its trace id, its stratum (its regime, or the suite's name) and what the
    task's scheduler knows of job durations."""

    label: str
    stratum: str
    episode: Episode
    durations: Durations = CLAIRVOYANT


def split_episodes(split: str, *, suite: str = DEFAULT_SUITE, task: str = DEFAULT_TASK,
                   data_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                   regimes: str | Path | None = None, per_regime: int | None = None,
                   seed: int = 0) -> list[LabelledEpisode]:
    """The episodes of ``split`` (see the module docstring), built as the task's env builds
    them (``reset(seed=seed)``), so their hashes are the bench's.

    Raises:
        ConfigError: for an unknown suite, task or split; SuiteDataError for a missing or
            changed file (naming it).
    """
    from palgym.bench.suites import DataRoots, load_suite, split_env_kwargs, split_traces
    from palgym.envs.cluster_env import ClusterEnv

    loaded = load_suite(suite)
    found = loaded.task(task)
    roots = DataRoots(None if data_dir is None else Path(data_dir),
                      None if cache_dir is None else Path(cache_dir))
    kwargs = split_env_kwargs(loaded, found, split, roots)
    traces = [(trace, loaded.name) for trace in split_traces(loaded, found, split, roots)]
    if regimes is not None:
        from palgym.tracesets.manifest import split_traces as regime_traces

        taken: dict[str, int] = {}
        for trace in regime_traces(str(regimes), split):
            regime = trace.name.rsplit("-", 1)[0]
            taken[regime] = taken.get(regime, 0) + 1
            if per_regime is None or taken[regime] <= per_regime:
                traces.append((trace, regime))
    episodes = []
    for trace, stratum in traces:
        env = ClusterEnv(trace, task="scheduling", **kwargs)
        env.reset(seed=seed)
        episodes.append(LabelledEpisode(trace.name, stratum, env.episode, env.durations))
        env.close()
    return episodes


# ---------------------------------------------------------------------- runs (in workers)
_EPISODES: list[LabelledEpisode] = []


COLUMNS: tuple[str, ...] = ("avg_jct_s", "unfinished_jobs", "wall_s", "choices", "switches",
                             "censored_avg_jct_s")
"""The columns of :func:`run_many`'s rows: the average JCT over the completed jobs (s), the
unfinished jobs, the run's wall seconds, the selector's asks and switches (0 for a rule), and
the average JCT over every measured job, an unfinished one counted up to the episode's end
(``EpisodeMetrics.censored_avg_jct_s``, a lower bound; equal to the first when every job
completed)."""
CENSORED = COLUMNS.index("censored_avg_jct_s")


def _run_one(job: tuple[str, Any, int]) -> tuple[float, int, float, int, int, float]:
    """One run's row (:data:`COLUMNS`): ``job`` is ``("selector", (rules, weights), index)``
    or ``("rule", "ORDER/PLACEMENT", index)``."""
    kind, what, index = job
    episode, durations = _EPISODES[index].episode, _EPISODES[index].durations
    start = time.perf_counter()
    if kind == "rule":
        order, _, placement = what.partition("/")
        metrics = run_episode(episode, placement, order, durations=durations).metrics
        choices = switches = 0
    else:
        rules, weights = what
        outcome = run_selected_episode(episode, rules, LinearSelector(rules, weights), durations)
        metrics, choices, switches = outcome.result.metrics, outcome.choices, outcome.switches
    return (metrics.avg_jct_s, metrics.num_jobs - metrics.num_completed,
            time.perf_counter() - start, choices, switches, metrics.censored_avg_jct_s)


def run_many(jobs: Sequence[tuple[str, Any, int]], episodes: Sequence[LabelledEpisode],
             workers: int = 1) -> np.ndarray:
    """float64 (len(jobs), 6): :func:`_run_one` of every job (:data:`COLUMNS`), in order, on
    ``workers``
    processes (forked: they inherit the episodes)."""
    global _EPISODES
    _EPISODES = list(episodes)
    if workers <= 1:
        return np.array([_run_one(job) for job in jobs], np.float64)
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        return np.array(pool.map(_run_one, jobs, chunksize=1), np.float64)


def selector_objective(rules: Sequence[str], episodes: Sequence[LabelledEpisode],
                       base_avg_jct_s: np.ndarray, workers: int = 1) -> Objective:
    """The CEM objective over ``episodes``: the mean of :func:`agents.rule_selector.log_ratio`
    against the base rule's avg JCT (float64 (n,), same order)."""
    def objective(selectors: Sequence[LinearSelector]) -> np.ndarray:
        jobs = [("selector", (tuple(rules), s.weights), i)
                for s in selectors for i in range(len(episodes))]
        runs = run_many(jobs, episodes, workers).reshape(len(selectors), len(episodes),
                                                         len(COLUMNS))
        return np.array([np.mean([log_ratio(r[0], b, int(r[1]))
                                  for r, b in zip(rows, base_avg_jct_s, strict=True)])
                         for rows in runs])
    return objective


def geomean_ratio(values: np.ndarray, reference: np.ndarray) -> float:
    """The geometric mean of ``values / reference`` (float64 (n,) each)."""
    return float(math.exp(np.mean(np.log(values / reference))))


def check_positive(name: str, value: int) -> int:
    """``value`` if >= 1, else ConfigError naming ``name``."""
    if value < 1:
        raise ConfigError(f"{name} must be >= 1, got {value}")
    return value
