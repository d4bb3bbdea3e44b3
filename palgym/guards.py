"""Running an aging guard (:mod:`palgym.policies.guards`) on the engine's rule selection.

:func:`run_guard` is what :func:`palgym.simulate.run_episode` does with a guard name (this
module hands it to ``run_episode`` when ``palgym`` is imported: the engine's rule selection
sits above ``palgym.simulate``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from palgym.policies.base import PlacementPolicy
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.guards import GuardName, parse_guard
from palgym.sim.types import FloatArray
from palgym.sim.views import SimView
from palgym.simulate import Episode, EpisodeResult, set_guard_runner


class GuardSelector:
    """Rule 1 once the longest-queued job has queued more than ``hours`` (the first of
    :data:`palgym.rule_selection.STATE_FEATURES`, ``ln(1 + hours queued)``), else rule 0 (the
    :data:`palgym.rule_selection.Selector` protocol)."""

    def __init__(self, hours: float) -> None:
        self.hours = hours
        self.threshold = math.log1p(hours)

    def __call__(self, features: FloatArray, view: SimView | None = None) -> int:
        """The rule index: 1 past the threshold, else 0."""
        return 1 if features[0] > self.threshold else 0


def run_guard(episode: Episode, guard: str | GuardName, queue_order: str,
              durations: Durations = CLAIRVOYANT,
              wrap_placement: Callable[[PlacementPolicy], PlacementPolicy] | None = None
              ) -> EpisodeResult:
    """Simulate ``episode`` under the guard (rules ``queue_order/BASE`` and ``ALT``).

    Args:
        episode: the episode.
        guard: the guard placement text (``pal+backfill+age=32h:fifo/pal+easy``) or parsed.
        queue_order: the base rule's queue order (a name).
        durations: what the orders, EASY and the features know of durations.
        wrap_placement: as :func:`palgym.rule_selection.run_selected_episode` (a recorder).

    Returns:
        The episode's result, ``policy`` the guard's placement text and ``queue_order`` the
        base order (what the heuristic tables print as ``ORDER/PLACEMENT``).

    Raises:
        ConfigError: for a malformed guard or a rule that needs durations under ``unknown``.
    """
    from dataclasses import replace

    from palgym.rule_selection import run_selected_episode

    parsed = parse_guard(guard) if isinstance(guard, str) else guard
    selected = run_selected_episode(episode, parsed.rules(queue_order),
                                    GuardSelector(parsed.hours), durations, wrap_placement)
    return replace(selected.result, policy=parsed.placement, queue_order=queue_order)


set_guard_runner(run_guard)
