"""Engine-run schedule records: the allocations a scheduler committed, replayable without it.

A :class:`ScheduleRecord` is the list of the commits that changed an episode's allocation:
for each, the round index at which it was committed and, for every job whose GPU set it
changed, the job's new GPU set (ascending GPU ids; empty: the job holds no GPU after it).
GPUs of jobs the commit left alone are not listed: a commit is stored as what changed. The
allocation a commit makes is the allocation before it with each listed job's GPUs replaced by
its new set (:meth:`Commit.target`).

Any scheduler that decides the allocation round by round on
:class:`~palgym.sim.engine.Simulator` can be recorded so: a user's placement class run by
:func:`palgym.simulate.run_episode` (:func:`record_episode`: each target it returns is diffed
against the allocation before it; a target equal to it is no commit), or a search that
produces its best-known schedule. :func:`replay_schedule` rebuilds the episode's
:class:`~palgym.simulate.EpisodeResult` from the episode and the record alone: at each round
it commits the recorded allocation if the record has a commit there, else keeps the current
one (``Simulator.commit(None)``, which is what a target equal to the current allocation does:
the engine tells the two apart in nothing), then advances. The engine checks every target
(admitted, uncompleted jobs, each on exactly its ``num_gpus`` GPUs); a commit the engine
refuses, one that changes nothing, one at a round the episode never reaches or a record that
does not end in step with the episode raises :class:`ScheduleError`, naming the commit.

The episode ends as a user's placement's episode in :func:`palgym.simulate.run_episode`
ends: when every measured job has completed, at ``config.max_rounds``, or at the stall
detector's round cap (:data:`palgym.sim.stall.DEFAULT_ROUND_CAP`; no overload test, no
blocking proof: they assume palgym's own rules).

Flat form (:meth:`ScheduleRecord.to_ints` / :meth:`ScheduleRecord.from_ints`): one int
sequence, per commit ``round, K`` then K times ``job, N, gpu_1 .. gpu_N``; it is what a bench
results file stores (:mod:`palgym.bench.module_entry`, int32 in the ``actions`` codec).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from palgym.driver.loop import check_not_stuck
from palgym.errors import InvalidActionError, PalgymError
from palgym.policies.base import PlacementPolicy, Sampler, WrappedPlacement
from palgym.sim.stall import DEFAULT_STALL_FACTOR, StallDetector
from palgym.sim.types import FREE, IntArray
from palgym.sim.views import SimView
from palgym.simulate import Episode, EpisodeResult, final_metrics, make_simulator, run_episode

FORMAT = "palgym-schedule/1"
"""The name and version of the flat form (module docstring)."""


class ScheduleError(PalgymError, ValueError):
    """A schedule record that is malformed or that the episode refuses (the message names the
    commit, its round and why)."""


@dataclass(frozen=True)
class Commit:
    """One commit that changed the allocation.

    Attributes:
        round_index: the round whose boundary it was committed at (0: the first round).
        changes: ``(job index, GPU ids ascending)`` per job whose GPU set changed, jobs
            ascending; an empty tuple of GPUs: the job holds none after the commit.
    """

    round_index: int
    changes: tuple[tuple[int, tuple[int, ...]], ...]

    def target(self, before: IntArray) -> IntArray:
        """int64 (G,): the allocation ``before`` (job index per GPU or FREE) with each listed
        job's GPUs replaced by its new set (a GPU listed for two jobs goes to the later one;
        the engine then refuses the job left short).

        Raises:
            ScheduleError: for a GPU id outside 0..G-1.
        """
        target = np.array(before, dtype=np.int64, copy=True)
        for job, _ in self.changes:
            target[target == job] = FREE
        for job, gpus in self.changes:
            if gpus and (min(gpus) < 0 or max(gpus) >= target.size):
                raise ScheduleError(f"round {self.round_index}: job {job} is given GPU ids "
                                    f"{list(gpus)}, outside 0..{target.size - 1}")
            target[list(gpus)] = job
        return target


def commit_of(round_index: int, before: IntArray, target: IntArray) -> Commit | None:
    """The commit that turns allocation ``before`` into ``target`` (both int64 (G,), job index
    per GPU or FREE) at ``round_index``; None when they are equal."""
    before = np.asarray(before, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    differs = before != target
    if not differs.any():
        return None
    jobs = np.union1d(before[differs], target[differs])
    jobs = jobs[jobs != FREE]
    changes = tuple((int(j), tuple(int(g) for g in np.flatnonzero(target == j)))
                    for j in jobs.tolist())
    return Commit(int(round_index), changes)


@dataclass(frozen=True)
class ScheduleRecord:
    """An episode's commits, in round order (module docstring)."""

    commits: tuple[Commit, ...] = ()

    def __len__(self) -> int:
        return len(self.commits)

    def __iter__(self) -> Iterator[Commit]:
        return iter(self.commits)

    def to_ints(self) -> list[int]:
        """The flat form (module docstring)."""
        flat: list[int] = []
        for commit in self.commits:
            flat += [commit.round_index, len(commit.changes)]
            for job, gpus in commit.changes:
                flat += [job, len(gpus), *gpus]
        return flat

    @classmethod
    def from_ints(cls, values: Sequence[int] | np.ndarray) -> ScheduleRecord:
        """The record of a flat form.

        Raises:
            ScheduleError: for a sequence that is not one (it ends inside a commit, a count
                or id is negative, rounds do not increase, a commit lists no job or a job
                twice), naming the position.
        """
        flat = [int(v) for v in np.asarray(values, dtype=np.int64).tolist()]
        commits: list[Commit] = []
        at, last = 0, -1

        def take(what: str) -> int:
            nonlocal at
            if at >= len(flat):
                raise ScheduleError(f"{FORMAT}: the record ends at position {at}, inside "
                                    f"commit {len(commits)} ({what} expected)")
            value = flat[at]
            if value < 0:
                raise ScheduleError(f"{FORMAT}: position {at} ({what} of commit "
                                    f"{len(commits)}) is {value}, not >= 0")
            at += 1
            return value

        while at < len(flat):
            round_index = take("a round index")
            if round_index <= last:
                raise ScheduleError(f"{FORMAT}: commit {len(commits)} is at round "
                                    f"{round_index}, not after the previous one's {last}")
            count = take("a job count")
            if count == 0:
                raise ScheduleError(f"{FORMAT}: commit {len(commits)} (round {round_index}) "
                                    "changes no job")
            changes = []
            for _ in range(count):
                job = take("a job index")
                gpus = tuple(take("a GPU id") for _ in range(take("a GPU count")))
                changes.append((job, gpus))
            jobs = [job for job, _ in changes]
            if len(set(jobs)) != len(jobs):
                raise ScheduleError(f"{FORMAT}: commit {len(commits)} (round {round_index}) "
                                    "lists a job twice")
            commits.append(Commit(round_index, tuple(changes)))
            last = round_index
        return cls(tuple(commits))


@dataclass
class RecordingPlacement(WrappedPlacement):
    """A placement that records every allocation change its ``inner`` placement asks for.

    Attributes:
        inner: the placement recorded (e.g. a user's class, checked).
        commits: the commits so far (:func:`commit_of` of each target it returned that differs
            from the allocation it was asked on).
        asked: the times it was asked.
        seconds: wall seconds spent in ``inner.place``.
    """

    inner: PlacementPolicy
    commits: list[Commit] = field(default_factory=list)
    asked: int = 0
    seconds: float = 0.0

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """The inner placement's target, recorded if it changes the allocation."""
        began = time.perf_counter()
        target = self.inner.place(view, order, sampler)
        self.seconds += time.perf_counter() - began
        self.asked += 1
        commit = commit_of(view.round_index, view.job_of_gpu, target)
        if commit is not None:
            if self.commits and self.commits[-1].round_index == commit.round_index:
                raise ScheduleError(f"placement {self.inner.name!r} was asked twice at round "
                                    f"{commit.round_index}")
            self.commits.append(commit)
        return target

    def record(self) -> ScheduleRecord:
        """The commits so far, as a record."""
        return ScheduleRecord(tuple(self.commits))


@dataclass(frozen=True)
class RecordedEpisode:
    """An episode run with its schedule recorded (:func:`record_episode`).

    Attributes:
        result: the episode's result, as :func:`palgym.simulate.run_episode` returns it.
        record: its commits.
        asked: the times the placement was asked.
        seconds: wall seconds spent in the placement.
    """

    result: EpisodeResult
    record: ScheduleRecord
    asked: int
    seconds: float


def record_episode(episode: Episode, policy: str | PlacementPolicy, queue_order: str = "fifo",
                   **run_options: Any) -> RecordedEpisode:
    """Run :func:`palgym.simulate.run_episode` and record the schedule it commits (an aging
    guard too: each of its rules' placements records into one list).

    Args:
        episode: a :class:`palgym.simulate.Episode`.
        policy, queue_order, run_options: as :func:`palgym.simulate.run_episode` takes them
            (e.g. ``durations``).

    Raises:
        whatever :func:`palgym.simulate.run_episode` raises.
    """
    holder: list[RecordingPlacement] = []
    commits: list[Commit] = []  # one list: a guard's rules each place in their own rounds

    def wrap(placement: PlacementPolicy) -> PlacementPolicy:
        holder.append(RecordingPlacement(placement, commits))
        return holder[-1]

    result = run_episode(episode, policy, queue_order, wrap_placement=wrap, **run_options)
    return RecordedEpisode(result, ScheduleRecord(tuple(commits)),
                           sum(r.asked for r in holder), sum(r.seconds for r in holder))


def replay_schedule(episode: Episode, record: ScheduleRecord, name: str = "recorded"
                    ) -> EpisodeResult:
    """The :class:`palgym.simulate.EpisodeResult` of ``episode`` run on ``record``'s commits
    (module docstring), ``policy`` ``name``, ``queue_order`` ``recorded``.

    Raises:
        ScheduleError: for a commit the engine refuses (a job not admitted or completed, a
            job on other than its ``num_gpus`` GPUs, a GPU id outside the cluster), one that
            changes nothing, one at a round the episode does not reach (it ended before, or
            the next commit is at an earlier round), or an episode whose cluster is left idle
            with jobs queued and no arrival left (it could never end); each names the commit
            and its round.
    """
    commits = record.commits
    targets = [(c.round_index, c) for c in commits]
    result, _ = _run_commits(episode, targets, name, lambda c, before: c.target(before), True)
    return result


def schedule_of_targets(episode: Episode,
                        targets: Sequence[tuple[int, IntArray]] | Mapping[int, IntArray],
                        name: str = "recorded") -> tuple[EpisodeResult, ScheduleRecord]:
    """Run ``episode`` on whole target allocations and record them compactly: at each given
    round index (ascending) the target (int64 (G,), job index per GPU or FREE) is committed,
    at every other round the allocation is kept. A target equal to the allocation it meets
    is no commit (the record leaves it out). E.g. a search that found a schedule round by
    round records it so, and :func:`replay_schedule` gives the same result from the record.

    Returns:
        ``(result, record)``: the episode's result (as :func:`replay_schedule` gives it) and
        the record of the commits that changed the allocation.

    Raises:
        ScheduleError: for a target the engine refuses, one at a round the episode does not
            reach, rounds out of order, or an episode left idle with jobs queued (naming the
            target's position and round).
    """
    pairs = sorted(targets.items()) if isinstance(targets, Mapping) else list(targets)
    return _run_commits(episode, pairs, name,
                        lambda target, _before: np.asarray(target, dtype=np.int64), False)


def _check_order(rounds: Sequence[int]) -> None:
    """Refuse round indices that do not increase (ScheduleError naming the commit)."""
    for index in range(1, len(rounds)):
        if rounds[index] <= rounds[index - 1]:
            raise ScheduleError(f"commit {index} is at round {rounds[index]}, not after the "
                                f"previous one's {rounds[index - 1]}")


def _commit(sim: Any, at: int, target: IntArray, must_change: bool) -> Commit | None:
    """Commit ``target`` (planned commit ``at``) on ``sim``; the commit it made (None: none)."""
    before = sim.job_of_gpu.copy()
    try:
        changed = sim.commit(target)
    except InvalidActionError as exc:
        raise ScheduleError(f"commit {at} (round {sim.round_index}) is refused: {exc}"
                            ) from None
    if not changed and must_change:
        raise ScheduleError(f"commit {at} (round {sim.round_index}) changes nothing")
    return commit_of(sim.round_index, before, sim.job_of_gpu) if changed else None


def replay_allocations(episode: Episode, record: ScheduleRecord
                       ) -> tuple[EpisodeResult, IntArray]:
    """:func:`replay_schedule`, and the allocation of every round it ran: int64 (R, G), row r
    the job index per GPU (or FREE) during round r (e.g. a solver's hint)."""
    rows: list[IntArray] = []
    targets = [(c.round_index, c) for c in record.commits]
    result, _ = _run_commits(episode, targets, "recorded", lambda c, before: c.target(before),
                             True, lambda sim: rows.append(sim.job_of_gpu.copy()))
    dense = (np.array(rows, dtype=np.int64) if rows
             else np.zeros((0, episode.cluster.num_gpus), np.int64))
    return result, dense


def _run_commits(episode: Episode, planned: Sequence[tuple[int, Any]], name: str,
                 target_of: Callable[[Any, IntArray], IntArray], must_change: bool,
                 on_round: Callable[[Any], None] | None = None
                 ) -> tuple[EpisodeResult, ScheduleRecord]:
    """The loop of :func:`replay_schedule` and :func:`schedule_of_targets`: ``planned`` holds
    ``(round index, item)``, ``target_of(item, allocation before)`` the target; ``must_change``:
    a target that changes nothing is refused (else it is left out of the record);
    ``on_round(sim)``: called after each round's commit."""
    _check_order([r for r, _ in planned])
    sim = make_simulator(episode)
    stall = StallDetector(sim, DEFAULT_STALL_FACTOR, None, prefix_order=None)
    at, reason = 0, ""
    made: list[Commit | None] = []
    while not sim.done and not sim.truncated:
        round_index = sim.round_index
        if at < len(planned) and planned[at][0] == round_index:
            made.append(_commit(sim, at, target_of(planned[at][1], sim.job_of_gpu.copy()),
                                must_change))
            at += 1
        else:
            sim.commit(None)
        if on_round is not None:
            on_round(sim)
        try:  # as the heuristic loop checks after each commit
            check_not_stuck(sim, f"the schedule (round {round_index}, {at} commits made)")
        except PalgymError as exc:
            raise ScheduleError(str(exc)) from None
        sim.advance()
        if reason := stall.check(sim):
            break
    if at < len(planned):
        raise ScheduleError(f"the episode ended at round {sim.round_index} with "
                            f"{len(planned) - at} of the record's {len(planned)} commits "
                            f"left (commit {at} at round {planned[at][0]})")
    if not reason and sim.truncated:
        reason = f"max_rounds ({sim.config.max_rounds}) reached"
    result = EpisodeResult(
        trace=episode.trace.name, policy=name, queue_order="recorded",
        metrics=final_metrics(sim, reason), records=sim.records(),
        num_rounds=sim.round_index, episode_hash=episode.episode_hash(), belief="none")
    return result, ScheduleRecord(tuple(c for c in made if c is not None))


__all__ = ["FORMAT", "Commit", "RecordedEpisode", "RecordingPlacement", "ScheduleError",
           "ScheduleRecord", "commit_of", "record_episode", "replay_allocations", "replay_schedule",
           "schedule_of_targets"]
