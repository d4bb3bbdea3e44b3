"""Per-episode counters of a planner's search (the rollout planner and the search over rules):
decisions, fallbacks, rollouts and planning time, paired with the episode by its hash."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agents.planning.search import SearchCounters


@dataclass
class PlannerEpisodeStats:
    """One episode of the planner.

    Attributes:
        episode_hash: the episode's hash (pairs the stats with the outcome).
        trace: the episode's trace id.
        decisions: decisions taken.
        one_valid: fallbacks: decisions with a single valid action (no search).
        no_alternative: fallbacks: every valid action was equivalent to the base action.
        evaluated: decisions searched (base plus at least one alternative evaluated).
        changed: decisions where the planner took another action than the base heuristic.
        ties: searched decisions where an alternative's cost equalled the base action's.
        planning_s: wall seconds spent choosing actions (rollouts included).
        counters: rollouts, env steps and rounds simulated by the search.
    """

    episode_hash: str
    trace: str
    decisions: int = 0
    one_valid: int = 0
    no_alternative: int = 0
    evaluated: int = 0
    changed: int = 0
    ties: int = 0
    planning_s: float = 0.0
    counters: SearchCounters = field(default_factory=SearchCounters)

    def row(self) -> dict[str, Any]:
        """Flat dict (counters inlined)."""
        values = asdict(self)
        values.update(values.pop("counters"))
        return values


def episode_stats(episodes: list[PlannerEpisodeStats], env: Any,
                  episode_start: np.ndarray | None) -> tuple[PlannerEpisodeStats, bool]:
    """The stats of ``env``'s episode, appended to ``episodes`` when a new one starts (another
    episode hash, or ``episode_start`` set); and whether it was appended now."""
    digest = env.episode.episode_hash()
    new = not episodes or episodes[-1].episode_hash != digest or (
        episode_start is not None and bool(np.asarray(episode_start).ravel()[0]))
    if new:
        episodes.append(PlannerEpisodeStats(digest, env.episode.trace.name))
    return episodes[-1], new
