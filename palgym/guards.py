"""Running an aging guard (:mod:`palgym.policies.guards`) on the engine's rule selection.

:func:`run_guard` is what :func:`palgym.simulate.run_episode` does with a guard name (this
module hands it to ``run_episode`` when ``palgym`` is imported: the engine's rule selection
sits above ``palgym.simulate``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from palgym.errors import ConfigError
from palgym.policies.base import PlacementPolicy
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.guards import GUARD_TOKEN, GuardName, parse_guard
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


def run_guard(episode: Episode, guard: str | GuardName, queue_order: object,
              durations: Durations = CLAIRVOYANT, *, belief: object = None,
              driver: str = "auto",
              wrap_placement: Callable[[PlacementPolicy], PlacementPolicy] | None = None
              ) -> EpisodeResult:
    """Simulate ``episode`` under the guard (rules ``queue_order/BASE`` and ``ALT``).

    Args:
        episode: the episode.
        guard: the guard placement text (``pal+backfill+age=32h:fifo/pal+easy``) or parsed.
        queue_order: the base rule's queue order (a name; ``MODULE:CLASS`` too, imported and
            registered: :func:`palgym.policies.loader.queue_order_name`).
        durations: what the orders, EASY and the features know of durations.
        belief: must be None (a guard decides on the episode's belief); ``run_episode``'s.
        driver: ``auto`` or ``python`` (rule selection runs the Python loop); ``run_episode``'s.
        wrap_placement: as :func:`palgym.rule_selection.run_selected_episode` (a recorder).

    Returns:
        The episode's result, ``policy`` the guard's placement text and ``queue_order`` the
        base order (what the heuristic tables print as ``ORDER/PLACEMENT``).

    Raises:
        ConfigError: for a malformed guard, a base order given in the name or not as a name,
            a ``belief``, the compiled driver, or a rule that needs durations under
            ``unknown``.
    """
    from dataclasses import replace

    from palgym.policies.loader import queue_order_name
    from palgym.rule_selection import run_selected_episode

    text = guard if isinstance(guard, str) else guard.placement
    _check_call(text, queue_order, belief, driver)
    parsed = parse_guard(text, "policy")
    base = queue_order_name(str(queue_order))  # a MODULE:CLASS: its registered name
    selected = run_selected_episode(episode, parsed.rules(base),
                                    GuardSelector(parsed.hours), durations, wrap_placement)
    return replace(selected.result, policy=parsed.placement, queue_order=str(queue_order))


def _check_call(policy: str, queue_order: object, belief: object, driver: str) -> None:
    """What ``run_episode``'s other arguments may be with a guard (ConfigError naming why)."""
    if "/" in policy.split(GUARD_TOKEN, 1)[0]:
        order, placement = policy.split("/", 1)
        raise ConfigError(f"policy {policy!r}: run_episode takes the guard's base order as "
                          f"queue_order: run_episode(episode, {placement!r}, {order!r})")
    if not isinstance(queue_order, str):
        raise ConfigError(f"policy {policy!r}: a guard's base order is a queue order name")
    if belief is not None:
        raise ConfigError(f"policy {policy!r}: a guard decides on the episode's belief "
                          "(make_episode(..., belief=))")
    if str(driver) == "compiled":
        raise ConfigError(f"policy {policy!r}: a guard runs on the Python loop (rule selection)")


set_guard_runner(run_guard)
