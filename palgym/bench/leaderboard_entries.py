"""What the leaderboard takes from a results file read by
:func:`palgym.bench.results.read_results`: an entry's test-split episodes by (task, trace,
seed) (:func:`entry_of`), after the checks the leaderboard adds to the reader's.

The reader checks the schema (every field present, known and of its type). The leaderboard
further refuses, naming the file, the line and the field (:class:`~palgym.bench.results.
ResultsError`, or :func:`palgym.bench.submission.check_submission`'s error for the header's
``submission``):

- an episode's impossible metrics (:func:`check_episode`);
- a ``submission`` object that breaks docs/SUBMITTING.md (its ``selection_data`` naming a
  test trace of the suite among them: :func:`traces_under_test`);
- a ``best`` entry's choice not made on the validation split, made twice for a task, or of a
  member outside its field, and a test episode of a task without a choice;
- a test episode repeated, or of a member other than the entry (or its choice).

Actions, hashes and the other fields are the replay's business (:mod:`palgym.bench.replay`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from palgym.bench.results import EpisodeRow, ResultsError, ResultsFile
from palgym.bench.submission import check_submission
from palgym.bench.suites import load_suite, suite_names, suite_test_traces

Key = tuple[str, str, int]
"""An episode: (task, trace, seed)."""

REFERENCE, BEST, FIELD = "pal", "best", "field"
"""The entries every leaderboard compares with, and the entry holding the oracle's field."""

COUNTS = ("num_jobs", "completed_jobs", "unfinished_jobs", "invalid_actions", "decisions")
"""The episode counts, each >= 0."""


class Episode(NamedTuple):
    """What the leaderboard reads of one episode line (``avg_jct_s`` in seconds, +inf: no job
    completed; ``decision_time_s`` in wall seconds; ``where``: ``"FILE, line N"``)."""

    avg_jct_s: float
    unfinished_jobs: int
    invalid_actions: int
    decisions: int
    decision_time_s: float
    trace_sha256: str
    where: str


@dataclass(frozen=True)
class Entry:
    """One results file's test-split episodes.

    Attributes:
        name, kind, spec, palgym_version, commit, description: from the header.
        path: the results file.
        episodes: test-split episodes by key (empty for a ``field`` entry).
        members: ``field`` entries: member -> test-split episodes by key.
        choices: ``best`` entries: task -> the member chosen on validation.
        fields: ``best`` entries: task -> the members (sorted) the choice was made among.
        submission: the header's checked ``submission`` object, or None.
    """

    name: str
    kind: str
    spec: str
    palgym_version: str
    commit: str
    description: str
    path: str
    episodes: dict[Key, Episode]
    members: dict[str, dict[Key, Episode]]
    choices: dict[str, str]
    fields: dict[str, tuple[str, ...]]
    submission: dict[str, Any] | None


def check_episode(row: EpisodeRow, path: str, line: int) -> None:
    """Refuse impossible metrics: an average JCT that is not finite and > 0 (null only when no
    job completed), a negative count, counts that do not add up (completed + unfinished =
    num_jobs), a decision time that is not finite and >= 0.

    Raises:
        ResultsError: naming ``path``, ``line`` and the field.
    """
    def refuse(message: str, field: str) -> ResultsError:
        return ResultsError(message, path, line, field)

    jct = row.avg_jct_s
    if jct is None and row.completed_jobs > 0:
        raise refuse(f"null with {row.completed_jobs} completed jobs", "avg_jct_s")
    if jct is not None and not (math.isfinite(jct) and jct > 0):
        raise refuse(f"must be finite and > 0 (or null when no job completed), got {jct!r}",
                     "avg_jct_s")
    for name in COUNTS:
        if getattr(row, name) < 0:
            raise refuse(f"must be >= 0, got {getattr(row, name)!r}", name)
    if row.completed_jobs + row.unfinished_jobs != row.num_jobs:
        raise refuse(f"completed_jobs {row.completed_jobs} + unfinished_jobs "
                     f"{row.unfinished_jobs} != num_jobs {row.num_jobs}", "unfinished_jobs")
    if not (math.isfinite(row.decision_time_s) and row.decision_time_s >= 0):
        raise refuse(f"must be finite and >= 0, got {row.decision_time_s!r}", "decision_time_s")


def episode_of(row: EpisodeRow, where: str) -> Episode:
    """The leaderboard's view of an episode row checked by :func:`check_episode` (an average
    JCT of null, no job completed, is +inf: worse than any)."""
    jct = math.inf if row.avg_jct_s is None else row.avg_jct_s
    return Episode(jct, row.unfinished_jobs, row.invalid_actions, row.decisions,
                   row.decision_time_s, row.trace_sha256, where)


def choices_of(results: ResultsFile) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A ``best`` entry's task -> (chosen member, the sorted field it was chosen from).

    Raises:
        ResultsError: naming the file, the line and the field, for a choice not made on the
            validation split, a second choice for a task, or a member outside its field.
    """
    chosen: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line, choice in results.choices:
        if choice.selection_split != "validation":
            raise ResultsError(f"the best heuristic is chosen on the validation split, got "
                               f"{choice.selection_split!r}", results.path, line,
                               "selection_split")
        if choice.task in chosen:
            raise ResultsError(f"a second choice for {choice.task!r}", results.path, line,
                               "task")
        if choice.member not in choice.field:
            raise ResultsError(f"{choice.member!r} is not in the field {choice.field}",
                               results.path, line, "member")
        chosen[choice.task] = (choice.member, tuple(sorted(choice.field)))
    return chosen


@functools.cache
def committed_test_traces(suite: str) -> frozenset[str]:
    """The test traces of the committed suite named ``suite`` (none for another name)."""
    return suite_test_traces(load_suite(suite)) if suite in suite_names() else frozenset()


def traces_under_test(results: ResultsFile) -> frozenset[str]:
    """The test traces a ``submission``'s ``selection_data`` may not name: those of the
    committed suite the header names, and the trace ids (without a job range) of the file's
    own test episodes."""
    own = {row.trace.split("[")[0] for _, row in results.episodes if row.split == "test"}
    return committed_test_traces(results.header.suite) | own


def entry_of(results: ResultsFile) -> Entry:
    """An :class:`Entry` from a read results file (test-split episodes only), after the checks
    of the module docstring (every episode's metrics, on any split, are checked).

    Raises:
        ConfigError: a :class:`~palgym.bench.results.ResultsError` (or, for the header's
            ``submission``, :func:`~palgym.bench.submission.check_submission`'s error) naming
            the file, the line and the field.
    """
    header, path = results.header, str(results.path)
    if header.submission is not None:
        check_submission(header.submission, f"{path}, line 1", traces_under_test(results))
    made = choices_of(results) if header.entry_kind == BEST else {}
    choices = {task: member for task, (member, _) in made.items()}
    episodes: dict[Key, Episode] = {}
    members: dict[str, dict[Key, Episode]] = {}
    for line, row in results.episodes:
        check_episode(row, path, line)
        if row.split != "test":
            continue
        key: Key = (row.task, row.trace, row.seed)
        if header.entry_kind == BEST and row.task not in choices:
            raise ResultsError(f"no choice line for task {row.task!r}", path, line, "task")
        expected = choices[row.task] if header.entry_kind == BEST else header.entry
        if header.entry_kind != FIELD and row.member != expected:
            raise ResultsError(f"expected {expected!r}, got {row.member!r}", path, line,
                               "member")
        table = members.setdefault(row.member, {}) if header.entry_kind == FIELD else episodes
        where = f"{path}, line {line}"
        if key in table:
            raise ResultsError(f"episode {key} repeats {table[key].where}", path, line)
        table[key] = episode_of(row, where)
    return Entry(name=header.entry, kind=header.entry_kind, spec=header.entry_spec,
                 palgym_version=header.palgym_version, commit=header.commit,
                 description=header.description, path=path, episodes=episodes,
                 members=members, choices=choices,
                 fields={task: field for task, (_, field) in made.items()},
                 submission=header.submission)
