"""The heuristic loop: :func:`drive` runs an engine's rounds under one queue order and one
placement, on the Python loop or, where :func:`palgym.driver.plan.compiled_plan` serves the
episode, on the compiled one (:func:`palgym.driver.loop.drive_compiled`), with the same result
bit for bit. :func:`palgym.simulate.run_episode` calls it; so can a user holding an engine
(:func:`palgym.simulate.make_simulator`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from palgym.driver.loop import check_not_stuck, drive_compiled
from palgym.driver.plan import Driver, chosen_plan
from palgym.policies.base import PlacementPolicy, QueueOrder, Sampler
from palgym.sim.engine import Simulator
from palgym.sim.stall import StallDetector
from palgym.sim.types import IntArray


def drive(
    sim: Simulator,
    order: QueueOrder,
    placement: PlacementPolicy,
    sampler: Sampler,
    on_event: Callable[[Simulator], None] | None = None,
    stall: StallDetector | None = None,
    progress: Callable[[Simulator], int] | None = None,
    driver: str | Driver = Driver.AUTO,
) -> str:
    """The heuristic loop: place, commit, advance, until every measured job completes, or the
    episode is truncated (``sim.truncated``: ``max_rounds``; or ``stall`` fires).

    A memo (:class:`RoundMemo`) skips the placement when a deterministic policy made no
    change last round, nothing happened since and the queue order ranks the jobs as it did
    then (it would make the same, empty, change); under a static order the rounds up to the
    next event then run in one call (:meth:`palgym.sim.engine.Simulator.idle_rounds`) unless
    ``on_event`` watches every round.

    Args:
        sim: the engine, fresh or mid-episode.
        order, placement, sampler: the heuristic and its random stream.
        on_event: called with ``sim`` after every commit and every advance (e.g. invariant
            checks, :mod:`palgym.testing`).
        stall: checked after every advance (None: only ``max_rounds`` truncates).
        progress: reads ``sim`` (a progress bar), returns the round index to call it next at.
        driver: which loop runs the rounds (:class:`palgym.driver.Driver`; ``auto``: the
            compiled one where :func:`palgym.driver.compiled_plan` serves the episode, with
            the same result bit for bit).

    Returns:
        ``""`` if every measured job completed, else why the episode stopped.

    Raises:
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (the episode could never end).
        ConfigError: for an unknown ``driver``, or ``compiled`` for an episode it does not
            serve (naming why).
    """
    plan = chosen_plan(driver, sim, order, placement, sampler, on_event)
    if plan is not None:
        return drive_compiled(sim, plan, stall, progress)
    memo, next_progress = RoundMemo(), 0
    while not sim.done and not sim.truncated:
        if progress is not None and sim.round_index >= next_progress:
            next_progress = progress(sim)
        play_round(sim, order, placement, sampler, memo, on_event)
        if stall is not None and (reason := stall.check(sim)):
            return reason
    return f"max_rounds ({sim.config.max_rounds}) reached" if sim.truncated else ""


@dataclass
class RoundMemo:
    """What :func:`play_round` remembers of the last round it placed.

    Attributes:
        valid: the last round's commit changed nothing (the placement's target was the
            allocation already held), and the memo has not been reset since.
        ranking: int64 (A,), the queue order's ranking that round's placement was made from
            (None under a static order, whose ranking changes only on events).
    """

    valid: bool = False
    ranking: IntArray | None = None

    def reset(self) -> None:
        """Forget the last round (e.g. when the rule that places changes)."""
        self.valid, self.ranking = False, None


def play_round(sim: Simulator, order: QueueOrder, placement: PlacementPolicy, sampler: Sampler,
               memo: RoundMemo, on_event: Callable[[Simulator], None] | None = None) -> None:
    """One round of the heuristic loop (:func:`drive`): place, commit, advance.

    The memo skips the placement when a deterministic policy made no change last round
    (``memo.valid``), nothing happened since (:attr:`palgym.sim.engine.Simulator.
    events_since_commit`) and the order ranks the active jobs as it did then: the policy, given
    the same state and order (:class:`palgym.policies.base.PlacementPolicy`), would make the
    same, empty, change. Under a static order the ranking is not recomputed (it changes only on
    events), and without ``on_event`` the rounds up to the next event run in one call
    (:meth:`palgym.sim.engine.Simulator.idle_rounds`); otherwise a round kept by the memo
    commits no change and advances. The result is the same bit for bit as placing every round.

    Raises:
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (:func:`palgym.driver.loop.check_not_stuck`).
    """
    kept = placement.deterministic and memo.valid and not sim.events_since_commit
    if kept and order.static and on_event is None:
        sim.idle_rounds()  # the memo holds until the next event: those rounds at once
        return
    if not (kept and order.static):
        view = sim.view()
        ranking = order.order(view)
        if not (kept and memo.ranking is not None and np.array_equal(ranking, memo.ranking)):
            target = placement.place(view, ranking, sampler)
            memo.valid = not sim.commit(target)  # the one call that applies the allocation
            memo.ranking = None if order.static else ranking
            check_not_stuck(sim, placement.name)
            kept = False
    if kept:
        sim.commit(None)
    if on_event is not None:
        on_event(sim)
    sim.advance()
    if on_event is not None:
        on_event(sim)
