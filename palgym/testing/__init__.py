"""Reusable correctness checks for the simulator (docs/TESTING.md, "Invariants after every event").

Library code usable from any test suite (no pytest import): every check raises
:class:`AssertionError` (explicitly, so the checks also run under ``python -O``) with a message
naming the broken invariant, the round boundary and the job or GPU concerned.

Typical use, after every ``commit`` and every ``advance``::

    checker = InvariantChecker()
    sim = Simulator(trace, profile, cluster, config)
    checker.check(sim)
    while not sim.done and not sim.truncated:
        view = sim.view()
        sim.commit(placement.place(view, order.order(view), sampler))
        checker.check(sim)
        sim.advance()
        checker.check(sim)
    check_episode_outcome(sim)

or simply :func:`run_checked`, which drives a heuristic exactly like
:func:`palgym.simulate.run_episode` with the checks in between.
"""

from palgym.testing.generators import random_profile, random_trace
from palgym.testing.invariants import (
    InvariantChecker,
    check_episode_outcome,
    check_records,
    check_sim_invariants,
)
from palgym.testing.runners import drive_checked, run_checked

__all__ = [
    "InvariantChecker", "check_episode_outcome", "check_records", "check_sim_invariants",
    "drive_checked", "random_profile", "random_trace", "run_checked",
]
