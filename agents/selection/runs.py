"""Episodes, runs and tables of the learned rule selector (:mod:`agents.selection.selector`).

The episodes are a palgym-bench task's (the world, duration knowledge and the split's traces
of ``palgym-bench-v1``'s ``scheduling-clairvoyant`` by default) plus, optionally, the same
split of a regime collection written by ``python -m traces regimes`` (every regime's declared
train, validation or test seeds). Each episode carries a *stratum*: its regime, or the suite's
name for the suite's own traces; intervals resample traces within strata.

``python -m agents.selection train|evaluate`` is the command line (``--help``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.selection.selector import LinearSelector, Objective, log_ratio
from palgym.errors import ConfigError
from palgym.io.atomic import atomic_write_text
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.rule_selection import run_selected_episode
from palgym.simulate import Episode, run_episode

DEFAULT_SUITE = "palgym-bench-v1"
DEFAULT_TASK = "scheduling-clairvoyant"


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


def with_stragglers(episodes: Sequence[LabelledEpisode], ratio: float
                    ) -> list[LabelledEpisode]:
    """The same episodes with straggler migration (their belief options with
    ``straggler_ratio=ratio``; :mod:`palgym.policies.stragglers`): the same hashes, another
    belief, so :func:`run_key` keeps their runs apart.

    Raises:
        ConfigError: ``ratio`` is not > 1, or an episode's belief is not ``online``.
    """
    moved = []
    for e in episodes:
        try:
            belief = dataclasses.replace(e.episode.belief, straggler_ratio=ratio)
        except ConfigError as error:
            raise ConfigError(f"straggler migration on {e.label}: {error}") from None
        moved.append(dataclasses.replace(e, episode=dataclasses.replace(e.episode,
                                                                         belief=belief)))
    return moved


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
    """One run's row (:data:`COLUMNS`): ``job`` is ``("selector", LinearSelector, index)``
    or ``("rule", "ORDER/PLACEMENT", index)``."""
    kind, what, index = job
    episode, durations = _EPISODES[index].episode, _EPISODES[index].durations
    start = time.perf_counter()
    if kind == "rule":
        order, _, placement = what.partition("/")
        metrics = run_episode(episode, placement, order, durations=durations).metrics
        choices = switches = 0
    else:
        outcome = run_selected_episode(episode, what.rules, what, durations)
        metrics, choices, switches = outcome.result.metrics, outcome.choices, outcome.switches
    return (metrics.avg_jct_s, metrics.num_jobs - metrics.num_completed,
            time.perf_counter() - start, choices, switches, metrics.censored_avg_jct_s)


def run_many(jobs: Sequence[tuple[str, Any, int]], episodes: Sequence[LabelledEpisode],
             workers: int = 1, cache: str | Path | None = None) -> np.ndarray:
    """float64 (len(jobs), 6): :func:`_run_one` of every job (:data:`COLUMNS`), in order, on
    ``workers`` processes (forked: they inherit the episodes).

    ``cache``: a folder of finished rows (:func:`run_key`); a job found there is not run again
    (its ``wall_s`` is the first run's), and every row run is stored there (atomically)."""
    global _EPISODES
    _EPISODES = list(episodes)
    rows: list[Any] = [None] * len(jobs)
    keys: list[Path] = []
    if cache is not None:
        folder = Path(cache)
        hashes = {i: _episode_key(_EPISODES[i]) for i in {job[2] for job in jobs}}
        keys = [folder / f"{run_key(job, hashes[job[2]])}.json" for job in jobs]
        for i, key in enumerate(keys):
            if key.is_file():
                rows[i] = _cached_row(key)
    todo = [i for i, row in enumerate(rows) if row is None]

    def keep(i: int, row: Sequence[float]) -> None:  # stored as it arrives
        rows[i] = list(row)
        if keys:
            atomic_write_text(keys[i], json.dumps(rows[i]) + "\n")

    if workers <= 1 or len(todo) <= 1:
        for i in todo:
            keep(i, _run_one(jobs[i]))
    else:
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            for i, row in zip(todo, pool.imap(_run_one, [jobs[i] for i in todo], chunksize=1),
                              strict=True):
                keep(i, row)
    return np.array(rows, np.float64).reshape(len(jobs), len(COLUMNS))


_FINGERPRINT: list[str] = []


def code_fingerprint() -> str:
    """SHA-256 (16 hex chars) of what a run's row depends on: the source of palgym and of
    :mod:`agents.selection.selector`, and of :func:`_run_one` and :data:`COLUMNS`; a cached run is
    reused only by the code that produced it."""
    if not _FINGERPRINT:
        import inspect

        import palgym

        digest = hashlib.sha256()
        package = Path(palgym.__file__).parent
        selector = Path(__file__).with_name("selector.py")
        for root, path in [*((package, p) for p in sorted(package.rglob("*.py"))),
                           (selector.parent, selector)]:
            digest.update(path.relative_to(root.parent).as_posix().encode())
            digest.update(path.read_bytes())
        digest.update(inspect.getsource(_run_one).encode())
        digest.update(repr(COLUMNS).encode())
        _FINGERPRINT.append(digest.hexdigest()[:16])
    return _FINGERPRINT[0]


def _episode_key(episode: LabelledEpisode) -> str:
    """What a run's row depends on besides the rule: the episode's hash and belief and the
    duration knowledge (computed once per episode: the hash reads the whole trace)."""
    return "|".join((episode.episode.episode_hash(), repr(episode.episode.belief),
                     repr(episode.durations)))


def run_key(job: tuple[str, Any, int], episode: LabelledEpisode | str) -> str:
    """The cache key of one run: SHA-256 (24 hex chars) of the job's rule or selector (rules,
    weights, floor), the episode's hash and belief, the duration knowledge (``episode``, or
    its :func:`_episode_key`) and :func:`code_fingerprint`."""
    kind, what, _ = job
    spec = what if kind == "rule" else json.dumps(what.to_dict(), sort_keys=True)
    where = episode if isinstance(episode, str) else _episode_key(episode)
    text = "|".join((kind, spec, where, code_fingerprint()))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _cached_row(path: Path) -> list[float]:
    """A cached row (:data:`COLUMNS`).

    Raises:
        ConfigError: naming the file, for one that is not a row of len(COLUMNS) numbers.
    """
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"{path}: not a cached run ({error}); delete it to rerun") from None
    if not isinstance(row, list) or len(row) != len(COLUMNS) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in row):
        raise ConfigError(f"{path}: a cached run is a list of {len(COLUMNS)} numbers "
                          f"({', '.join(COLUMNS)}); delete it to rerun")
    return [float(v) for v in row]


def rule_runs(rules: Sequence[str], episodes: Sequence[LabelledEpisode], workers: int = 1,
              cache: str | Path | None = None) -> np.ndarray:
    """float64 (R, n, len(COLUMNS)): every rule's run on every episode (:func:`run_many`)."""
    jobs = [("rule", rule, i) for rule in rules for i in range(len(episodes))]
    return run_many(jobs, episodes, workers, cache).reshape(len(rules), len(episodes),
                                                            len(COLUMNS))


def selector_objective(episodes: Sequence[LabelledEpisode], base_avg_jct_s: np.ndarray,
                       workers: int = 1) -> Objective:
    """The CEM objective over ``episodes``: the mean of :func:`agents.selection.selector.log_ratio`
    against the base rule's avg JCT (float64 (n,), same order)."""
    def objective(selectors: Sequence[LinearSelector]) -> np.ndarray:
        jobs = [("selector", s, i) for s in selectors for i in range(len(episodes))]
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


def interval(ratios: np.ndarray, strata: list[str]) -> tuple[float, float, float]:
    """The geometric mean of ``ratios`` (float64 (n,)) and its 95% bootstrap interval over
    the n traces resampled within ``strata`` (:func:`palgym.bench.bootstrap.
    stratified_bootstrap`); NaN bounds when it cannot resample."""
    from palgym.bench.bootstrap import stratified_bootstrap
    from palgym.bench.stats import geometric_mean_rows

    return stratified_bootstrap(ratios, strata, geometric_mean_rows).scalar()


def no_nan(value: Any) -> Any:
    """``value`` with every NaN float as None (strict JSON: no interval, no validation run)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: no_nan(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [no_nan(item) for item in value]
    return value


def pooled_scores(ratios: np.ndarray, traces: list[str]) -> dict[str, list[float]]:
    """Geomean and IQM of ``ratios`` (float64 (S, T): seed x trace) with cluster-bootstrap
    intervals over the T traces (:func:`palgym.bench.bootstrap.cluster_bootstraps`)."""
    from palgym.bench.bootstrap import cluster_bootstraps
    from palgym.bench.stats import geometric_mean_rows, interquartile_mean_rows

    labels = np.tile(np.arange(len(traces)), ratios.shape[0])
    return {name: list(cluster_bootstraps(ratios.ravel()[None, :], labels, statistic)[0]
                       .scalar())
            for name, statistic in (("geomean", geometric_mean_rows),
                                    ("iqm", interquartile_mean_rows))}
