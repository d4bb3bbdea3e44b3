"""The heuristic loop: :func:`drive` runs an engine's rounds under one queue order and one
placement, on the Python loop or, where :func:`palgym.driver.plan.compiled_plan` serves the
episode, on the compiled one (:func:`palgym.driver.loop.drive_compiled`), with the same result
bit for bit. :func:`palgym.simulate.run_episode` calls it; so can a user holding an engine
(:func:`palgym.simulate.make_simulator`).
"""

from __future__ import annotations

from collections.abc import Callable

from palgym.driver.loop import check_not_stuck, drive_compiled
from palgym.driver.plan import Driver, chosen_plan
from palgym.policies.base import PlacementPolicy, QueueOrder, Sampler
from palgym.sim.engine import Simulator
from palgym.sim.stall import StallDetector


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

    A memo skips the placement when a deterministic policy under a static order made no
    change last round and nothing happened since (it would make the same, empty, change); the
    rounds up to the next event then run in one call
    (:meth:`palgym.sim.engine.Simulator.idle_rounds`) unless ``on_event`` watches every round.

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
    memo_valid, next_progress = False, 0
    while not sim.done and not sim.truncated:
        if progress is not None and sim.round_index >= next_progress:
            next_progress = progress(sim)
        memo_valid = play_round(sim, order, placement, sampler, memo_valid, on_event)
        if stall is not None and (reason := stall.check(sim)):
            return reason
    return f"max_rounds ({sim.config.max_rounds}) reached" if sim.truncated else ""


def play_round(sim: Simulator, order: QueueOrder, placement: PlacementPolicy, sampler: Sampler,
               memo_valid: bool, on_event: Callable[[Simulator], None] | None = None) -> bool:
    """One round of the heuristic loop (:func:`drive`): place, commit, advance.

    A memo skips the placement when a deterministic policy under a static order made no
    change last round (``memo_valid``) and nothing happened since: without ``on_event`` the
    rounds up to the next event then run in one call
    (:meth:`palgym.sim.engine.Simulator.idle_rounds`), with it they run one by one.

    Returns:
        The memo for the next round: True when this round's commit changed nothing.

    Raises:
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (:func:`palgym.driver.loop.check_not_stuck`).
    """
    if placement.deterministic and order.static and memo_valid and not sim.events_since_commit:
        if on_event is None:  # the memo holds until the next event: those rounds at once
            sim.idle_rounds()
            return True
        sim.commit(None)
    else:
        view = sim.view()
        target = placement.place(view, order.order(view), sampler)
        memo_valid = not sim.commit(target)  # the one call that applies the allocation
        check_not_stuck(sim, placement.name)
    if on_event is not None:
        on_event(sim)
    sim.advance()
    if on_event is not None:
        on_event(sim)
    return memo_valid
