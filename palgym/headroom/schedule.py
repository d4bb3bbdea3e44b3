"""Recorded schedules: the per-round GPU allocations of an episode, and their replay.

A :class:`Schedule` is what an offline search or an exact solver decides: for each round, which
job holds which GPU. It is stored compactly (a round's allocation only where it differs from the
round before) and replayed through the engine like any placement (:func:`replay_schedule`), so
every metric of a recorded schedule is the engine's own, never the recorder's claim.

Replay rules (the engine's, :func:`palgym.sim.step_numpy.commit`): at the boundary of round r
the allocation recorded for r is committed, after freeing the GPUs of jobs that are no longer
active (a job that completed earlier than its recorder expected leaves its GPUs idle). Anything
else the engine refuses is an error naming the round: a job not yet admitted, a GPU count other
than the job's, a job index beyond the episode's jobs. After the last recorded round every GPU
is free, so a schedule that stops before every job completed is refused when the engine finds
queued jobs on an idle cluster with no arrivals left.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError, InvalidActionError
from palgym.policies.base import Sampler
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE, IntArray, JobStatus
from palgym.sim.views import SimView
from palgym.simulate import Episode, EpisodeResult, final_metrics, make_simulator

SCHEDULE_FORMAT = "palgym-schedule/1"
"""The ``format`` value of a schedule's dictionary form (:meth:`Schedule.as_dict`)."""


@dataclass(frozen=True)
class Schedule:
    """Per-round allocations of one episode.

    Attributes:
        num_gpus: G, the cluster's GPUs.
        num_rounds: the rounds the schedule speaks for (0..num_rounds-1); every GPU is free
            after them.
        rounds: int64 (K,), ascending round indices at which the allocation changes.
        targets: int64 (K, G), the allocation from ``rounds[k]`` until the next change: the job
            index (engine order: trace rows sorted by submit time) holding each GPU, or
            :data:`~palgym.sim.types.FREE`.

    Raises:
        ConfigError: for shapes that disagree, rounds not strictly ascending or negative, or a
            value below FREE.
    """

    num_gpus: int
    num_rounds: int
    rounds: IntArray
    targets: IntArray

    def __post_init__(self) -> None:
        rounds = np.asarray(self.rounds, dtype=np.int64).reshape(-1)
        targets = np.asarray(self.targets, dtype=np.int64).reshape(rounds.size, self.num_gpus)
        if rounds.size and (rounds[0] < 0 or np.any(np.diff(rounds) <= 0)
                            or rounds[-1] >= self.num_rounds):
            raise ConfigError("schedule: rounds must be >= 0, strictly ascending and below "
                              f"num_rounds ({self.num_rounds})")
        if targets.size and targets.min() < FREE:
            raise ConfigError(f"schedule: a GPU holds {int(targets.min())}, below FREE ({FREE})")
        rounds.setflags(write=False)
        targets.setflags(write=False)
        object.__setattr__(self, "rounds", rounds)
        object.__setattr__(self, "targets", targets)

    @classmethod
    def from_rounds(cls, allocations: Sequence[IntArray] | IntArray) -> Schedule:
        """The schedule of ``allocations[r]`` (int64 (G,)) for rounds r = 0..len-1, kept
        compact (only the rounds whose allocation changes)."""
        dense = np.asarray(allocations, dtype=np.int64)
        if dense.ndim != 2:
            raise ConfigError(f"schedule: allocations must be (rounds, G), got {dense.shape}")
        change = np.ones(dense.shape[0], dtype=bool)
        change[1:] = np.any(dense[1:] != dense[:-1], axis=1)
        return cls(dense.shape[1], dense.shape[0], np.flatnonzero(change), dense[change])

    def at(self, round_index: int) -> IntArray:
        """int64 (G,): the allocation of round ``round_index`` (all FREE before the first
        recorded round and from :attr:`num_rounds` on)."""
        k = int(np.searchsorted(self.rounds, round_index, side="right")) - 1
        if k < 0 or round_index >= self.num_rounds:
            return np.full(self.num_gpus, FREE, dtype=np.int64)
        row: IntArray = self.targets[k]
        return row

    def as_dict(self) -> dict[str, object]:
        """A JSON-able form: ``{"format", "num_gpus", "num_rounds", "changes": [[round, [job
        per GPU]], ...]}`` (read back by :meth:`from_dict`)."""
        return {"format": SCHEDULE_FORMAT, "num_gpus": self.num_gpus,
                "num_rounds": self.num_rounds,
                "changes": [[int(r), [int(v) for v in row]]
                            for r, row in zip(self.rounds, self.targets, strict=True)]}

    @classmethod
    def from_dict(cls, data: object, where: str = "schedule") -> Schedule:
        """Read :meth:`as_dict`'s form.

        Raises:
            ConfigError: naming ``where`` and the field for a form that is not a schedule.
        """
        if not isinstance(data, dict) or data.get("format") != SCHEDULE_FORMAT:
            raise ConfigError(f"{where}: not a {SCHEDULE_FORMAT} object")
        num_gpus, changes = data.get("num_gpus"), data.get("changes")
        num_rounds = data.get("num_rounds")
        if not isinstance(num_gpus, int) or isinstance(num_gpus, bool) or num_gpus < 1:
            raise ConfigError(f"{where}: field 'num_gpus' must be an integer >= 1")
        if not isinstance(num_rounds, int) or isinstance(num_rounds, bool) or num_rounds < 0:
            raise ConfigError(f"{where}: field 'num_rounds' must be an integer >= 0")
        if not isinstance(changes, list):
            raise ConfigError(f"{where}: field 'changes' must be a list")
        rounds, rows = [], []
        for k, change in enumerate(changes):
            ok = (isinstance(change, list) and len(change) == 2 and _is_int(change[0])
                  and isinstance(change[1], list) and len(change[1]) == num_gpus
                  and all(_is_int(v) for v in change[1]))
            if not ok:
                raise ConfigError(f"{where}: changes[{k}] must be [round, [{num_gpus} job "
                                  "indices or -1]]")
            rounds.append(change[0])
            rows.append(change[1])
        try:
            return cls(num_gpus, num_rounds, np.array(rounds, np.int64),
                       np.array(rows, np.int64).reshape(len(rows), num_gpus))
        except (OverflowError, ConfigError) as error:
            raise ConfigError(f"{where}: {error}") from error

    def __iter__(self) -> Iterator[tuple[int, IntArray]]:
        return iter(zip((int(r) for r in self.rounds), self.targets, strict=True))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class SchedulePlacement:
    """A placement that plays a :class:`Schedule` (the :class:`~palgym.policies.PlacementPolicy`
    protocol): at round r it returns the schedule's allocation of r with the GPUs of inactive
    jobs (completed, or not yet admitted is an engine error) freed.

    ``deterministic`` is False: the target changes from round to round without an event, so the
    driver asks at every boundary.
    """

    name = "schedule"
    sticky = False
    deterministic = False

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """int64 (G,): the allocation of round ``view.round_index`` (``order`` and ``sampler``
        are not read)."""
        target = self.schedule.at(view.round_index).copy()
        held = target != FREE
        if held.any():
            jobs = target[held]
            known = jobs < view.num_jobs
            done = np.zeros(jobs.size, dtype=bool)
            done[known] = view.jobs.status[jobs[known]] == JobStatus.COMPLETED
            target[np.flatnonzero(held)[done]] = FREE
        return target


def replay_schedule(sim: Simulator, schedule: Schedule) -> str:
    """Play ``schedule`` on ``sim`` (fresh, at t = 0) until every measured job completes.

    Returns:
        ``""`` if every measured job completed, else the reason it stopped (``max_rounds``).

    Raises:
        ConfigError: if the schedule's GPU count differs from the cluster's.
        InvalidActionError: for a round's allocation the engine refuses, naming the round.
        PalgymError: if the schedule ends (or idles) with queued jobs on an idle cluster and
            no arrivals left.
    """
    from palgym.driver.loop import check_not_stuck

    if schedule.num_gpus != sim.cluster.num_gpus:
        raise ConfigError(f"schedule: {schedule.num_gpus} GPUs, the cluster has "
                          f"{sim.cluster.num_gpus}")
    placement = SchedulePlacement(schedule)
    view = sim.view()
    empty = np.zeros(0, np.int64)
    while not sim.done and not sim.truncated:
        round_index = sim.round_index
        try:
            sim.commit(placement.place(view, empty, None))  # type: ignore[arg-type]
        except InvalidActionError as error:
            raise InvalidActionError(f"schedule round {round_index}: {error}") from error
        check_not_stuck(sim, f"schedule (round {round_index})")
        sim.advance()
        view = sim.view()
    return f"max_rounds ({sim.config.max_rounds}) reached" if sim.truncated else ""


def replay_episode(episode: Episode, schedule: Schedule, name: str = "schedule") -> EpisodeResult:
    """Replay ``schedule`` on a fresh engine of ``episode`` (:func:`replay_schedule`).

    Returns:
        The episode result, ``policy`` = ``name``, queue order ``"recorded"``, metrics and
        records the engine's.

    Raises:
        ConfigError, InvalidActionError, PalgymError: as :func:`replay_schedule`.
    """
    sim = make_simulator(episode)
    reason = replay_schedule(sim, schedule)
    return EpisodeResult(trace=episode.trace.name, policy=name, queue_order="recorded",
                         metrics=final_metrics(sim, reason), records=sim.records(),
                         num_rounds=sim.round_index, episode_hash=episode.episode_hash(),
                         belief="none")
