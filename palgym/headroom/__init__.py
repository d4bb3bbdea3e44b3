"""How far a schedule is from the best possible one: recorded schedules and their replay, a
lower bound of the average JCT for every static episode, exact optima of small episodes
(CP-SAT, the ``exact`` extra) and a hindsight search for best-known schedules.

Modules: :mod:`~palgym.headroom.schedule` (the :class:`Schedule` record, its replay),
:mod:`~palgym.headroom.record` (a heuristic's schedule), :mod:`~palgym.headroom.bound` (the
lower bound), :mod:`~palgym.headroom.exact` (the CP-SAT model), :mod:`~palgym.headroom.search`
(the hindsight search), :mod:`~palgym.headroom.small` (the small-instance suite).
"""

from palgym.headroom.bound import LowerBound, lower_bound
from palgym.headroom.schedule import Schedule, SchedulePlacement, replay_episode, replay_schedule

__all__ = ["LowerBound", "Schedule", "SchedulePlacement", "lower_bound", "replay_episode",
           "replay_schedule"]
