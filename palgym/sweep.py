"""The runs of a sweep as data, and the serial runner.

A sweep (the heuristics of a comparison, the heuristic table's or a side-by-side
comparison's: ``agents.evaluation.direct.run_heuristics``) is a list of :class:`EpisodeRun`:
an episode, its slowdown factors and one (placement, queue order). A :data:`Runner` maps that
list to the results *in the list's order*; the serial one runs them here,
``agents.evaluation.parallel`` in a process pool or as Ray tasks. An episode carries its own
random streams (:func:`palgym.simulate.run_episode` copies the placement stream per run), so a
run's result does not depend on where or after what it runs, and every runner gives the serial
results bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.slowdown import SlowdownFactors
from palgym.progress import EpisodeProgress
from palgym.simulate import Episode, EpisodeResult, run_episode


class EpisodeRun(NamedTuple):
    """One run of a sweep.

    Attributes:
        episode: from :func:`palgym.simulate.make_episode`.
        factors: its slowdown factors (:func:`palgym.simulate.slowdown_factors`).
        policy: placement name.
        queue_order: queue order name.
        durations: what the queue order and EASY backfilling know of job durations.
    """

    episode: Episode
    factors: SlowdownFactors
    policy: str
    queue_order: str
    durations: Durations = CLAIRVOYANT

    @property
    def label(self) -> str:
        """``trace queue_order policy``, e.g. for a progress bar."""
        return f"{self.episode.trace.name} {self.queue_order} {self.policy}"


Runner = Callable[[Sequence[EpisodeRun]], Iterator[EpisodeResult]]
"""Maps runs to their results, yielded in the runs' order."""


def run_one(run: EpisodeRun, progress: EpisodeProgress | None = None) -> EpisodeResult:
    """Simulate one run (``progress``: its bar, closed when the run ends).

    Raises:
        PalgymError: as :func:`palgym.simulate.run_episode`.
    """
    try:
        return run_episode(run.episode, run.policy, run.queue_order, run.factors,
                           durations=run.durations, progress=progress)
    finally:
        if progress is not None:
            progress.close()


def serial_runner(episode_bars: bool = False) -> Runner:
    """The runner that runs every run here, one after the other.

    Args:
        episode_bars: show a bar for each long episode (only on a TTY, see
            :class:`palgym.progress.EpisodeProgress`).

    Returns:
        The runner.
    """

    def run(runs: Sequence[EpisodeRun]) -> Iterator[EpisodeResult]:
        for item in runs:
            yield run_one(item, EpisodeProgress(item.label) if episode_bars else None)

    return run
