"""Planners: agents that decide by simulating ahead on copies of the env (headroom references;
they see what the env hides, so they are references, never contenders to rank).

- :mod:`~agents.planning.search`: one action evaluated on a copy of the env, finished by a base
  heuristic (exactly, or for H rounds plus a queue estimate): :class:`BaseRollout`;
- :mod:`~agents.planning.planner`: the rollout planner (:class:`PlannerAgent`, spec
  :class:`PlannerSpec`) and :func:`planner_agent`, the planner a ``planner:`` spec names;
- :mod:`~agents.planning.rule_search`: the round-by-round search over rules
  (:class:`RuleSearchAgent`, spec ``rules=...``);
- :mod:`~agents.planning.stats`: per-episode counters of a planner's search.

Names load on first use.
"""

from __future__ import annotations

from agents.lazy import lazy_exports

_LAZY = {
    ".search": ("BaseRollout", "clone_env"),
    ".planner": ("PlannerAgent", "PlannerSpec", "planner_agent", "format_planner_costs"),
    ".rule_search": ("RuleSearchAgent", "RuleSearchSpec"),
    ".stats": ("PlannerEpisodeStats",),
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
