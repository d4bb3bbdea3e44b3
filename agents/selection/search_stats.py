"""What the rollout search (:class:`agents.selection.search.RolloutSearch`) did in one
episode: its counters, decision times and per-ask choices and costs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SearchStats:
    """What the search did in one episode (reset by each ``start``).

    Attributes:
        asks: times the search was asked.
        searched: asks with at least two rules left to evaluate (after the pre-filter).
        rollouts: rollouts run.
        changed: asks where the search played another rule than the base's choice.
        stuck: rollouts that left queued jobs on an idle cluster with no arrivals left (cost
            inf: the rule could never end the episode).
        sim_rounds: rounds simulated on engine copies.
        decision_s: wall seconds of each ask (float, in ask order).
        choices: the rule index played at each ask.
        base_choices: the base's choice at each ask.
        costs: per ask, the ``(rule index, rollout cost in s)`` of each rule evaluated (empty
            when at most one rule was left).
    """

    asks: int = 0
    searched: int = 0
    rollouts: int = 0
    changed: int = 0
    stuck: int = 0
    sim_rounds: int = 0
    decision_s: list[float] = field(default_factory=list)
    choices: list[int] = field(default_factory=list)
    base_choices: list[int] = field(default_factory=list)
    costs: list[tuple[tuple[int, float], ...]] = field(default_factory=list)

    @property
    def decision_mean_s(self) -> float:
        """Mean wall seconds per ask (0 without asks)."""
        return float(np.mean(self.decision_s)) if self.decision_s else 0.0

    @property
    def decision_max_s(self) -> float:
        """Longest ask (wall seconds; 0 without asks)."""
        return max(self.decision_s, default=0.0)


__all__ = ["SearchStats"]
