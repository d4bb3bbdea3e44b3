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

from agents.lazy import lazy_getattr

_LAZY = {
    "BaseRollout": "agents.planning.search",
    "clone_env": "agents.planning.search",
    "PlannerAgent": "agents.planning.planner",
    "PlannerSpec": "agents.planning.planner",
    "planner_agent": "agents.planning.planner",
    "format_planner_costs": "agents.planning.planner",
    "RuleSearchAgent": "agents.planning.rule_search",
    "RuleSearchSpec": "agents.planning.rule_search",
    "PlannerEpisodeStats": "agents.planning.stats",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = sorted(_LAZY)
