"""least-loaded-fastest: a placement of your own, in one file, run everywhere by its name.

Each queued job, in queue order, takes the free GPUs with the lowest slowdown factor for its
class; locality is not weighed (PAL trades it against variability) and the queue is not
reordered by class (PM-First and PAL sort the jobs that fit by class first). The walk stops at
the first job that does not fit, and every round re-places the whole queue on an empty
cluster (non-sticky). Among equally fast free GPUs it takes those PM-First's per-job rule
takes (:func:`palgym.policies.pm_first.pm_first_allocation` over every free GPU), which the
env's best-factor candidate holds, so the env can act as it too.

A Python-only policy: no compiled form (the Python loop runs it) and no candidate kind (the
env asks it for its target, :mod:`palgym.envs.policy_agent`). Nothing to register by hand:
name it ``examples.least_loaded_fastest:LeastLoadedFastest`` and palgym imports and registers
it as ``least-loaded-fastest``. Run from the repository root::

    python evaluate.py --policy examples.least_loaded_fastest:LeastLoadedFastest pm-first pal
    python evaluate.py --env palgym/PALScheduling-v0 --trace-set bundled --seeds 0 1 2 \\
        --policy examples.least_loaded_fastest:LeastLoadedFastest pal --workers 2
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym import FREE, SimView, SlowdownFactors
from palgym.policies.pm_first import pm_first_allocation


@dataclass(frozen=True)
class LeastLoadedFastest:
    """Each job, in queue order, on the free GPUs of lowest slowdown factor for its class.

    Attributes:
        factors: the slowdown factors it decides on (filled from the episode, as for PAL).
    """

    factors: SlowdownFactors
    name: str = "least-loaded-fastest"
    sticky: bool = False  # every round places the whole queue on an empty cluster
    deterministic: bool = True  # draws no random numbers

    def place(self, view: SimView, order: np.ndarray, sampler: object) -> np.ndarray:
        """int64 (G,): each job's GPUs (job index per GPU, or FREE)."""
        target = np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
        for job in order.tolist():
            klass = int(view.jobs.perf_class[job])
            gpus = pm_first_allocation(target == FREE, int(view.jobs.num_gpus[job]),
                                       self.factors.sf[klass], self.factors.labels[klass],
                                       view.node_of_gpu)
            if gpus is None:  # fewer free GPUs than it needs: the walk stops here
                break
            target[gpus] = job
        return target
