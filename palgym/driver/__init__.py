"""The compiled heuristic driver: whole heuristic episodes in a compiled loop.

:func:`drive` (:mod:`palgym.driver.rounds`) chooses, once per episode, between its Python loop
and the compiled one (:func:`drive_compiled`), by the rule of :mod:`palgym.driver.plan`
(:func:`compiled_plan` returns the plan, or why the Python loop runs the episode); its
``driver`` argument (:class:`Driver`) can ask for either. Both give the same episode bit for
bit. The kernel is :mod:`palgym.driver.kernel`, its lazy starvation account
:mod:`palgym.driver.waiting`; importing this package does not import numba.
"""

from __future__ import annotations

from palgym.driver.loop import check_not_stuck, drive_compiled
from palgym.driver.plan import CompiledPlan, Driver, chosen_plan, compiled_plan
from palgym.driver.rounds import drive

__all__ = [
    "CompiledPlan", "Driver", "check_not_stuck", "chosen_plan", "compiled_plan", "drive",
    "drive_compiled",
]
