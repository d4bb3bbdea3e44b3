"""Recording a heuristic's schedule: the allocation it commits at each boundary, as a
:class:`~palgym.headroom.schedule.Schedule` that replays to the same episode."""

from __future__ import annotations

import numpy as np

from palgym.headroom.schedule import Schedule
from palgym.policies import CLAIRVOYANT, make_placement
from palgym.policies.base import PlacementPolicy, QueueOrder, Sampler, WrappedPlacement
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.types import IntArray
from palgym.sim.views import SimView
from palgym.simulate import Episode, EpisodeResult, run_episode, slowdown_factors


class RecordingPlacement(WrappedPlacement):
    """``inner`` with every target it returns kept by round index (``targets``)."""

    def __init__(self, inner: PlacementPolicy) -> None:
        self.inner = inner
        self.targets: dict[int, IntArray] = {}

    def place(self, view: SimView, order: IntArray, sampler: Sampler) -> IntArray:
        """The inner placement's target, recorded at ``view.round_index``."""
        target = self.inner.place(view, order, sampler)
        self.targets[view.round_index] = np.array(target, dtype=np.int64)
        return target

    def schedule(self, num_gpus: int, num_rounds: int) -> Schedule:
        """The recorded targets as a schedule of ``num_rounds`` rounds (a round without a
        target keeps the last one; the replay frees the GPUs of completed jobs)."""
        rounds = sorted(self.targets)
        rows = [self.targets[r] for r in rounds]
        keep = [k for k in range(len(rows)) if k == 0 or not np.array_equal(rows[k], rows[k - 1])]
        return Schedule(num_gpus, num_rounds, np.array([rounds[k] for k in keep], np.int64),
                        np.array([rows[k] for k in keep], np.int64).reshape(len(keep), num_gpus))


def record_heuristic(episode: Episode, policy: str | PlacementPolicy,
                     queue_order: str | QueueOrder = "fifo",
                     factors: SlowdownFactors | None = None) -> tuple[EpisodeResult, Schedule]:
    """Run a heuristic on ``episode`` and record its schedule.

    Args:
        episode: the episode.
        policy: a placement name (made with the episode's slowdown factors and config) or
            object.
        queue_order: a queue order name or object.
        factors: the slowdown factors a named placement decides on (None: the episode's).

    Returns:
        ``(result, schedule)``: the run's result and its schedule (whose replay,
        :func:`~palgym.headroom.schedule.replay_episode`, gives the same metrics).
    """
    inner = (make_placement(policy, factors or slowdown_factors(episode), episode.config,
                            durations=CLAIRVOYANT.for_seed(episode.seed))
             if isinstance(policy, str) else policy)
    recorder = RecordingPlacement(inner)
    result = run_episode(episode, policy=recorder, queue_order=queue_order, driver="python")
    return result, recorder.schedule(episode.cluster.num_gpus, result.num_rounds)

