"""A placement of a user's own for the bench tests: "the fastest node with room".

Each queued job, in queue order, goes to the node with enough free GPUs whose free GPUs are
fastest for the job's class (lowest mean slowdown factor of the GPUs it would take: that
node's ``num_gpus`` free GPUs of lowest factor), ties by node index; a job larger than a node
takes the free GPUs of lowest factor anywhere. The walk stops at the first job that does not
fit; every round re-places the whole queue on an empty cluster (non-sticky). Its GPU sets are
not those of any env candidate, so the env cannot act as it: the bench runs it on the engine
and records its schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym import FREE, SimView, SlowdownFactors


@dataclass(frozen=True)
class NodeFastest:
    """The fastest node with room (module docstring).

    Attributes:
        factors: the slowdown factors it decides on (filled from the episode's belief).
    """

    factors: SlowdownFactors
    name: str = "node-fastest"
    sticky: bool = False
    deterministic: bool = True

    def place(self, view: SimView, order: np.ndarray, sampler: object) -> np.ndarray:
        """int64 (G,): each job's GPUs (job index per GPU, or FREE)."""
        target = np.full(view.cluster.num_gpus, FREE, dtype=np.int64)
        per_node = view.cluster.gpus_per_node
        for job in order.tolist():
            need = int(view.jobs.num_gpus[job])
            speed = np.asarray(self.factors.sf[int(view.jobs.perf_class[job])], dtype=float)
            free = np.flatnonzero(target == FREE)
            if need > free.size:
                break
            if need > per_node:
                chosen = free[np.argsort(speed[free], kind="stable")[:need]]
            else:
                best: tuple[float, int] | None = None
                chosen = None
                for node in range(view.cluster.num_gpus // per_node):
                    room = free[view.node_of_gpu[free] == node]
                    if room.size < need:
                        continue
                    take = room[np.argsort(speed[room], kind="stable")[:need]]
                    score = (float(speed[take].mean()), node)
                    if best is None or score < best:
                        best, chosen = score, take
                if chosen is None:
                    break
            target[chosen] = job
        return target
