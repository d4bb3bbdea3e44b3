"""The leaderboard's tables: entries checked against ``pal``, per-task rows of ratios,
intervals and counts, ranked (the method: :mod:`palgym.bench.leaderboard`). A ``planner``
entry's row is a reference, never ranked: it plans on a copy of the simulator
(:data:`PLANNER_KIND`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from palgym.bench import stats
from palgym.bench.leaderboard_entries import BEST, FIELD, REFERENCE, Entry, Episode, Key, entry_of
from palgym.bench.results import ResultsError, ResultsFile
from palgym.errors import ConfigError

SHOWN_DIFFERENCES = 5
"""Differing episodes named in a refusal (the count of the rest follows)."""
PLANNER = "planner"
"""The entry kind shown as a reference, never ranked."""
PLANNER_KIND = "planner (reference: plans on a copy of the simulator)"
"""The kind text of a planner row: its rollouts run on a deep copy of the env
(``agents/planning/planner.py``), which holds the true job durations, the random streams and
the true slowdowns, whatever the task lets a scheduler know."""
BEST_KNOWN, LOWER_BOUND = "best-known", "lower-bound"
"""The reference entries of the room (:mod:`palgym.bench.reference_entry`)."""
REFERENCE_KINDS: dict[str, str] = {
    PLANNER: PLANNER_KIND,
    BEST_KNOWN: ("best-known (reference: sees the whole trace; placement only where the "
                 "task fixes the queue order)"),
    LOWER_BOUND: "lower bound (reference: no schedule beats it)",
}
"""The entry kinds shown as references, never ranked, and their kind text."""


def gap_closed(row_geomean: float, best_known_geomean: float) -> float | None:
    """The share of the room an entry takes: ``(best - entry) / (best - best-known)`` on the
    geomean ratios to the best (``(1 - r) / (1 - r_best_known)``); None when the best-known
    schedule is no better than the best (no room to close). 1: the entry matches the
    best-known schedule; 0: the best; < 0: worse than the best."""
    room = 1.0 - best_known_geomean
    if not (math.isfinite(row_geomean) and room > 0):
        return None
    return (1.0 - row_geomean) / room


@dataclass(frozen=True)
class Summary:
    """Geomean and IQM of a row's ratios to the best and to PAL, with their intervals."""

    to_best_geomean: stats.Interval
    to_best_iqm: stats.Interval
    to_pal_geomean: stats.Interval
    to_pal_iqm: stats.Interval


@dataclass(frozen=True)
class Row:
    """One line of a task table: an entry's (or the oracle's) ratios and counts.

    ``summary`` is None when an episode has no average JCT (no job completed: its ratio is
    +inf); such a row is not ranked. ``ratios_to_best`` and ``traces`` are float64 (n,) / n
    trace names in key order. ``reference``: a planner's or the room's row (best-known, lower
    bound), shown but never ranked. ``gap_closed``: :func:`gap_closed` on a task with a
    best-known row (None elsewhere, and on the oracle and lower-bound rows).
    """

    entry: str
    kind: str
    oracle: bool
    summary: Summary | None
    improvement: float
    num_episodes: int
    episodes_without_jct: int
    unfinished_jobs: int
    episodes_unfinished: int
    invalid_actions: int
    decision_time_ms: float | None
    ratios_to_best: np.ndarray
    traces: tuple[str, ...]
    reference: bool = False
    gap_closed: float | None = None


@dataclass(frozen=True)
class TaskBoard:
    """A task's rows, ranked (by geomean ratio to best, then name; the rows without a summary
    last, by name), its references (the planner rows, never ranked, in the same order) and
    its oracle row."""

    task: str
    best_member: str
    traces: tuple[str, ...]
    seeds: tuple[int, ...]
    rows: tuple[Row, ...]
    oracle: Row | None
    references: tuple[Row, ...] = ()


@dataclass(frozen=True)
class SuiteBoard:
    """A suite's entries (sorted by name) and task boards (sorted by task)."""

    suite: str
    suite_sha256: str
    entries: tuple[Entry, ...]
    tasks: tuple[TaskBoard, ...]


def listed(keys: set[Key]) -> str:
    """The first :data:`SHOWN_DIFFERENCES` keys, sorted, and the count of the rest."""
    ordered = sorted(keys)
    text = ", ".join(f"({task}, {trace}, seed {seed})"
                     for task, trace, seed in ordered[:SHOWN_DIFFERENCES])
    more = len(ordered) - SHOWN_DIFFERENCES
    return text + (f" and {more} more" if more > 0 else "")


def check_same_episodes(label: str, episodes: dict[Key, Episode],
                        reference: dict[Key, Episode]) -> None:
    """Refuse episodes other than the reference's, or another trace file for one of them.

    Raises:
        ConfigError: naming ``label`` and the missing / extra episodes, or the trace.
    """
    missing, extra = set(reference) - set(episodes), set(episodes) - set(reference)
    if missing or extra:
        parts = ([f"missing {len(missing)}: {listed(missing)}"] if missing else []) + \
                ([f"extra {len(extra)}: {listed(extra)}"] if extra else [])
        raise ConfigError(f"{label}: not the episodes of entry {REFERENCE!r} (test split); "
                          + "; ".join(parts))
    for key, episode in sorted(episodes.items()):
        if episode.trace_sha256 != reference[key].trace_sha256:
            raise ConfigError(f"{episode.where}, field 'trace_sha256': trace {key[1]!r} differs "
                              f"from entry {REFERENCE!r}'s ({reference[key].where})")


def check_roles(suite: str, entries: dict[str, Entry]) -> None:
    """Refuse a suite without ``pal`` (with test episodes) or ``best`` (of kind ``best``), an
    entry of kind ``best`` under another name, or two ``field`` entries.

    Raises:
        ConfigError: naming the suite, the entry and its file.
    """
    for needed in (REFERENCE, BEST):
        if needed not in entries:
            raise ConfigError(f"suite {suite!r}: no results file of entry {needed!r} "
                              f"(given: {sorted(entries)})")
    if not entries[REFERENCE].episodes:
        raise ConfigError(f"{entries[REFERENCE].path}: entry {REFERENCE!r} has no test episode")
    for entry in entries.values():
        if (entry.kind == BEST) != (entry.name == BEST):
            raise ConfigError(f"{entry.path}, line 1, field 'entry_kind': entry {entry.name!r} "
                              f"of kind {entry.kind!r}; the entry named {BEST!r} and only it "
                              f"has kind {BEST!r}")
    fields = sorted(entry.path for entry in entries.values() if entry.kind == FIELD)
    if len(fields) > 1:
        raise ConfigError(f"suite {suite!r}: more than one entry of kind {FIELD!r}: {fields}")


def check_field(field: Entry, reference: dict[Key, Episode],
                declared: dict[str, tuple[str, ...]]) -> None:
    """Refuse a ``field`` entry whose member lacks (or adds) an episode of a task it runs, or
    whose members on a task are not the field the ``best`` entry chose among.

    Raises:
        ConfigError: naming the file, the member or task, and what differs.
    """
    where = f"{field.path}: entry {field.name!r}"
    for member, episodes in sorted(field.members.items()):
        tasks = {key[0] for key in episodes}
        expected = {key: e for key, e in reference.items() if key[0] in tasks}
        check_same_episodes(f"{where}, member {member!r}", episodes, expected)
    for task in sorted({key[0] for key in reference}):
        present = tuple(sorted(m for m, episodes in field.members.items()
                               if any(key[0] == task for key in episodes)))
        if present != declared.get(task, present) or not present:
            raise ConfigError(f"{where}: its members on task {task!r} are {list(present)}; "
                              f"the best heuristic was chosen among "
                              f"{list(declared.get(task, ()))}")


def suite_entries(files: Sequence[ResultsFile]) -> dict[str, tuple[str, list[Entry]]]:
    """Suite -> (suite sha256, entries sorted by name), every entry checked against ``pal``.

    Raises:
        ConfigError: for two hashes of one suite, an entry name twice, no ``pal`` or ``best``
            entry, or an entry (or field member) with other episodes than ``pal``.
    """
    grouped: dict[str, tuple[str, str, dict[str, Entry]]] = {}
    for results in files:
        suite, digest = results.header.suite, results.header.suite_sha256
        first_digest, first_path, entries = grouped.setdefault(suite, (digest, str(results.path),
                                                                       {}))
        if digest != first_digest:
            raise ResultsError(f"suite {suite!r} has another hash in {first_path}",
                               results.path, 1, "suite_sha256")
        name = results.header.entry
        if name in entries:
            raise ResultsError(f"entry {name!r} is also in {entries[name].path}", results.path,
                               1, "entry")
        entries[name] = entry_of(results)
    checked = {}
    for suite, (digest, _, entries) in sorted(grouped.items()):
        check_roles(suite, entries)
        reference = entries[REFERENCE].episodes
        for entry in entries.values():
            if entry.kind == FIELD:
                check_field(entry, reference, entries[BEST].fields)
            else:
                # an entry runs the tasks it can act in (a placement model is no scheduler),
                # each of them on exactly pal's episodes; pal and best run every task
                tasks = ({key[0] for key in reference} if entry.name in (REFERENCE, BEST)
                         else {key[0] for key in entry.episodes})
                check_same_episodes(f"{entry.path}: entry {entry.name!r}", entry.episodes,
                                    {k: e for k, e in reference.items() if k[0] in tasks})
        checked[suite] = (digest, [entries[name] for name in sorted(entries)])
    return checked


def oracle_episodes(field: Entry, keys: list[Key]) -> dict[Key, Episode]:
    """Per episode of one task, the episode of the field member (among those running the
    task) with the lowest average JCT among those that finish every job (ties: the first
    member by name); only when no member finishes every job, the lowest of all. An average
    over the completed jobs of an episode that leaves a wide job unfinished is no bound (as
    ``benchmarks/hindsight.py`` never picks one)."""
    ordered = [m for m in sorted(field.members) if keys[0] in field.members[m]]
    chosen = {}
    for key in keys:
        found = [field.members[m][key] for m in ordered]
        finished = [e for e in found if e.unfinished_jobs == 0] or found
        chosen[key] = min(finished, key=lambda e: e.avg_jct_s)
    return chosen


def summaries(jcts: list[np.ndarray], pal: np.ndarray, best: np.ndarray,
              traces: tuple[str, ...], num_resamples: int) -> list[Summary | None]:
    """Each row's :class:`Summary` (None for a row with an episode of infinite JCT).

    Every ratio vector of the task is resampled with the same draws of whole traces (each with
    all its seeds; one draw per statistic, :func:`palgym.bench.stats.cluster_bootstraps`):
    the intervals equal those of separate bootstraps with the same seed, at a fraction of the
    cost.
    """
    finite = [index for index, jct in enumerate(jcts) if np.isfinite(jct).all()]
    found: list[Summary | None] = [None] * len(jcts)
    if not finite:
        return found
    ratios = np.vstack([jcts[i] / best for i in finite] + [jcts[i] / pal for i in finite])
    geomean, iqm = (stats.cluster_bootstraps(ratios, traces, statistic,
                                             num_resamples=num_resamples,
                                             seed=stats.DEFAULT_SEED)
                    for statistic in (stats.geometric_mean_rows, stats.interquartile_mean_rows))
    count = len(finite)
    for slot, index in enumerate(finite):
        found[index] = Summary(geomean[slot], iqm[slot], geomean[count + slot],
                               iqm[count + slot])
    return found


Label = tuple[str, str, bool, bool]
"""A row's entry name, kind text, whether it is the oracle, whether it is a reference."""


def row_of(label: Label, episodes: list[Episode], summary: Summary | None,
           best: np.ndarray, traces: tuple[str, ...]) -> Row:
    """A table row from an entry's episodes (in the order of ``best`` and ``traces``)."""
    jct = np.array([e.avg_jct_s for e in episodes])
    by_trace = [np.flatnonzero(np.asarray(traces) == t) for t in sorted(set(traces))]
    improvement = float(np.mean([stats.task_improvement(jct[p], best[p], better="lower")
                                 for p in by_trace]))
    decisions = sum(e.decisions for e in episodes)
    time_s = sum(e.decision_time_s for e in episodes)
    name, kind, oracle, reference = label
    return Row(entry=name, kind=kind, oracle=oracle, reference=reference, summary=summary,
               improvement=improvement, num_episodes=len(episodes),
               episodes_without_jct=int(np.isinf(jct).sum()),
               unfinished_jobs=sum(e.unfinished_jobs for e in episodes),
               episodes_unfinished=sum(e.unfinished_jobs > 0 for e in episodes),
               invalid_actions=sum(e.invalid_actions for e in episodes),
               decision_time_ms=None if oracle or decisions == 0
               else 1000.0 * time_s / decisions,
               ratios_to_best=jct / best, traces=traces)


def reference_jct(entry: Entry, keys: list[Key]) -> np.ndarray:
    """float64 (n,) a reference entry's average JCTs (s) on ``keys``.

    Raises:
        ConfigError: naming the episode line if one has no average JCT (no job completed).
    """
    jct = np.array([entry.episodes[key].avg_jct_s for key in keys])
    failed = np.flatnonzero(np.isinf(jct))
    if failed.size:
        raise ConfigError(f"{entry.episodes[keys[failed[0]]].where}, field 'avg_jct_s': entry "
                          f"{entry.name!r} is a reference and completed no job here: the "
                          f"ratios to it are undefined")
    return jct


def task_board(task: str, entries: list[Entry], num_resamples: int) -> TaskBoard:
    """The ranked rows of one task (entries checked by :func:`suite_entries`)."""
    by_name = {entry.name: entry for entry in entries}
    keys = sorted(key for key in by_name[REFERENCE].episodes if key[0] == task)
    traces = tuple(key[1] for key in keys)
    pal, best = (reference_jct(by_name[name], keys) for name in (REFERENCE, BEST))
    running = [e for e in entries if e.kind != FIELD and keys[0] in e.episodes]
    labels: list[Label] = [(e.name, REFERENCE_KINDS.get(e.kind, e.kind), False,
                            e.kind in REFERENCE_KINDS) for e in running]
    episodes = [[e.episodes[k] for k in keys] for e in running]
    field = next((e for e in entries if e.kind == FIELD and e.members), None)
    if field is not None:
        chosen = oracle_episodes(field, keys)
        labels.append((f"oracle ({field.name})", "hindsight bound", True, False))
        episodes.append([chosen[k] for k in keys])
    found = summaries([np.array([e.avg_jct_s for e in row]) for row in episodes], pal, best,
                      traces, num_resamples)
    rows = [row_of(label, row, summary, best, traces)
            for label, row, summary in zip(labels, episodes, found, strict=True)]
    oracle = rows.pop() if field is not None else None
    rows = with_gap_closed(rows, [e.kind for e in running])
    rows.sort(key=lambda row: (row.summary is None, math.inf if row.summary is None
                               else row.summary.to_best_geomean.point[0], row.entry))
    return TaskBoard(task=task, best_member=by_name[BEST].choices[task],
                     traces=tuple(sorted(set(traces))),
                     seeds=tuple(sorted({key[2] for key in keys})),
                     rows=tuple(row for row in rows if not row.reference), oracle=oracle,
                     references=tuple(row for row in rows if row.reference))


def with_gap_closed(rows: list[Row], kinds: Sequence[str]) -> list[Row]:
    """The rows with :func:`gap_closed` set where the task has a best-known row with a summary
    (not on the lower-bound row: it is no schedule)."""
    known = [row for row, kind in zip(rows, kinds, strict=True)
             if kind == BEST_KNOWN and row.summary is not None]
    if not known:
        return rows
    assert known[0].summary is not None
    room = known[0].summary.to_best_geomean.point[0]
    return [row if kind == LOWER_BOUND or row.summary is None else
            replace(row, gap_closed=gap_closed(row.summary.to_best_geomean.point[0], room))
            for row, kind in zip(rows, kinds, strict=True)]


def build_leaderboard(files: Sequence[ResultsFile], *,
                      num_resamples: int = stats.DEFAULT_RESAMPLES) -> list[SuiteBoard]:
    """Every suite's boards from read results files (in any order).

    Raises:
        ConfigError: see :func:`suite_entries` and :func:`entry_of`.
    """
    boards = []
    for suite, (digest, entries) in suite_entries(files).items():
        tasks = sorted({key[0] for key in entries[[e.name for e in entries].index(REFERENCE)]
                        .episodes})
        boards.append(SuiteBoard(suite=suite, suite_sha256=digest, entries=tuple(entries),
                                 tasks=tuple(task_board(t, entries, num_resamples)
                                             for t in tasks)))
    return boards
