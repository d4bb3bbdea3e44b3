"""Heuristic runs with the invariant checks between every commit and advance."""

from __future__ import annotations

from palgym.policies import CLAIRVOYANT, make_placement, make_queue_order
from palgym.policies.base import PlacementPolicy, QueueOrder, Sampler
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.engine import Simulator
from palgym.simulate import Episode, drive, episode_sampler, make_simulator, slowdown_factors
from palgym.testing.invariants import InvariantChecker, check_episode_outcome


def drive_checked(
    sim: Simulator,
    order: QueueOrder,
    placement: PlacementPolicy,
    sampler: Sampler,
    checker: InvariantChecker | None = None,
) -> InvariantChecker:
    """Drive ``sim`` to the end like :func:`palgym.simulate.run_episode`, checking every event.

    The loop (including its memo: a deterministic policy under a static order whose last plan
    changed nothing commits ``None`` until the next event) mirrors ``palgym.simulate.drive``, so
    the run gives the same records as ``run_episode``.

    Args:
        sim: a fresh simulator.
        order: queue order.
        placement: placement policy.
        sampler: the policy's random sampler.
        checker: the checker to use (if None, a new one checking the utilizations every 10
            calls).

    Returns:
        The checker, after checking the initial state and the state after every commit and
        every advance.

    Raises:
        AssertionError: if an invariant breaks.
        PalgymError: if the policy leaves queued jobs unplaced on an idle cluster with no
            arrivals left (as ``run_episode`` does, instead of looping forever).
    """
    checker = checker or InvariantChecker(metrics_every=10)
    checker.check(sim)
    drive(sim, order, placement, sampler, on_event=checker.check)
    check_episode_outcome(sim)
    return checker


def run_checked(
    episode: Episode,
    policy: str = "pal",
    queue_order: str = "fifo",
    factors: SlowdownFactors | None = None,
) -> Simulator:
    """Run one heuristic on ``episode`` with invariant checks after every commit and advance.

    Args:
        episode: a :class:`palgym.simulate.Episode` (from ``make_episode``).
        policy: placement name.
        queue_order: queue order name.
        factors: precomputed slowdown factors (fitted from the profile if None).

    Returns:
        The finished simulator (``sim.records()`` equals ``run_episode(...).records``).

    Raises:
        AssertionError: if an invariant breaks.
    """
    factors = factors or slowdown_factors(episode)
    placement = make_placement(policy, factors, episode.config)
    order = make_queue_order(queue_order, CLAIRVOYANT, episode.config)
    sim = make_simulator(episode)  # as run_episode builds it (the dynamic truth included)
    drive_checked(sim, order, placement, episode_sampler(episode))
    return sim


