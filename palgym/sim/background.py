"""Background arrivals: unmeasured copies of trace jobs admitted after the last trace arrival.

Inter-arrival times follow a Poisson process of ``rate_per_hour`` arrivals per hour, rounded up
to whole seconds, from their own ``random.Random(seed)`` stream (so they do not depend on the
policy or the placement stream). The engine admits the copies (:mod:`palgym.sim.engine`).
"""

from __future__ import annotations

import math
import random


class BackgroundArrivals:
    """The arrival times of background copies.

    Args:
        rate_per_hour: Poisson rate (> 0; the engine makes none at 0).
        seed: seed of the ``random.Random`` stream (artifact: 1).
    """

    def __init__(self, rate_per_hour: float, seed: int) -> None:
        self.rate_per_hour = rate_per_hour
        self.stream = random.Random(seed)

    def next_after(self, last_arrival_s: float) -> float:
        """Next arrival (s): last + ceil(-ln(1 - U) / rate x 3600), U the stream's next draw.

        Source: Blox ``workload/utils.py::poisson_next_arrival_time`` as run by the PAL artifact.
        """
        uniform = self.stream.random()
        return last_arrival_s + math.ceil(-math.log(1.0 - uniform) / self.rate_per_hour * 3600)
