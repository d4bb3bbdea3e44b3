"""What a scheduler believes a job's remaining run time is (EASY backfill's reservations).

Kept as one function so that every consumer (the EASY walk of
:mod:`palgym.policies.backfill` and its env agent) reads remaining times the same way.
"""

from __future__ import annotations

import numpy as np

from palgym.sim.engine import Simulator
from palgym.sim.types import FloatArray, IntArray


def remaining_time_s(sim: Simulator, jobs: IntArray) -> FloatArray:
    """Remaining run time of ``jobs`` at their current pace.

    ``max(total - done iterations, 0) x T_it x variability_penalty x locality_penalty``, the
    penalties of the job's current (or last) GPU set; 1.0 x 1.0 before its first start.
    Clairvoyant: it reads the trace's true iteration counts.

    Args:
        sim: the engine (read only).
        jobs: int64 (n,) job indices.

    Returns:
        float64 (n,) seconds.

    Source: PAL_MODEL section 3 (T_eff = penalties x T_it).
    """
    table = sim.jobs
    left = np.maximum(table.total_iterations[jobs] - table.iterations_done[jobs], 0.0)
    pace = table.variability_penalty[jobs] * table.locality_penalty[jobs]
    result: FloatArray = left * table.iteration_time_s[jobs] * pace
    return result
