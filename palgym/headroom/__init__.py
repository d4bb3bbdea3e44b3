"""How far a schedule is from the best possible one: a lower bound of the average JCT for every
episode (a dynamic one without drift too), exact optima of small episodes (CP-SAT, the
``exact`` extra), a hindsight search for best-known schedules, and the small-instance suite.
Every schedule they produce is a :class:`palgym.schedule_record.ScheduleRecord`, replayed by
:func:`palgym.schedule_record.replay_schedule`.

Modules: :mod:`~palgym.headroom.bound` (the lower bound), :mod:`~palgym.headroom.exact` (the
CP-SAT solve) and :mod:`~palgym.headroom.model` (its model), :mod:`~palgym.headroom.search`
(the hindsight search),
:mod:`~palgym.headroom.schedule` (dense allocations played and recorded),
:mod:`~palgym.headroom.small` and :mod:`~palgym.headroom.suite` (the small-instance suite).
"""

from palgym.headroom.bound import LowerBound, lower_bound

__all__ = ["LowerBound", "lower_bound"]
