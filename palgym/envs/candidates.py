"""Placement candidates of one job: the GPU sets an agent chooses among.

For a job of class c needing N GPUs, on the currently free GPUs, with the class's slowdown tiers
v_0 < v_1 < ... (padded to ``max_tiers``), the candidates are, in this order (M = 2 T + 2):

- ``within[t]``: PAL's within-node rule restricted to GPUs with slowdown factor <= v_t;
- ``best[t]``: PM-First restricted to GPUs with slowdown factor <= v_t;
- ``packed``: the variability-blind Packed rule;
- ``random``: N free GPUs drawn uniformly (drawn only when chosen, so that the env consumes the
  placement RNG exactly like ``run_episode``).

PAL's choice is the first feasible entry of its cost order, (v, WITHIN) -> ``within[t]`` and
(v, ACROSS) -> ``best[t]``; PM-First is ``best`` at the top tier. Source: PAL, SC24, Section IV.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.policies.allocation import packed_allocation
from palgym.policies.pal import MatrixEntry, within_node_allocation
from palgym.policies.pm_first import pm_first_allocation
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.engine import Simulator
from palgym.sim.types import BoolArray, IntArray, Locality


def num_candidates(max_tiers: int) -> int:
    """M = 2 x max_tiers + 2."""
    return 2 * max_tiers + 2


def packed_index(max_tiers: int) -> int:
    """Candidate index of the Packed candidate."""
    return 2 * max_tiers


def random_index(max_tiers: int) -> int:
    """Candidate index of the Random candidate."""
    return 2 * max_tiers + 1


@dataclass(frozen=True)
class JobCandidates:
    """The M candidates of one job: ``sets[m]`` is int64 (N,) GPU ids or None (infeasible).

    The Random candidate's set is always None here (drawn at decision time); ``random_feasible``
    tells whether it can be drawn.
    """

    job: int
    sets: tuple[IntArray | None, ...]
    random_feasible: bool

    def feasible(self) -> BoolArray:
        """bool (M,): which candidates can be taken."""
        mask = np.array([s is not None for s in self.sets], dtype=bool)
        mask[-1] = self.random_feasible
        return mask


def job_candidates(
    sim: Simulator,
    job: int,
    free: BoolArray,
    factors: SlowdownFactors,
    max_tiers: int,
    packed_strict_total: bool = False,
) -> JobCandidates:
    """Compute the candidates of ``job`` on the free GPUs (see module docstring).

    Args:
        sim: the engine (read only).
        job: job index.
        free: bool (G,) free GPUs.
        factors: slowdown factors.
        max_tiers: T, tiers per class the action space has room for.
        packed_strict_total: the Packed candidate's strict-total variant (artifact
            Packed-Sticky quirk).
    """
    perf_class = int(sim.jobs.perf_class[job])
    num_gpus = int(sim.jobs.num_gpus[job])
    slowdown = factors.sf[perf_class]
    tier = factors.labels[perf_class]
    tiers = factors.tiers[perf_class]
    within: list[IntArray | None] = [None] * max_tiers
    best: list[IntArray | None] = [None] * max_tiers
    previous: BoolArray | None = None
    for t, value in enumerate(tiers.tolist()[:max_tiers]):
        candidates = free & (slowdown <= value)
        if previous is not None and np.array_equal(candidates, previous):
            within[t], best[t] = within[t - 1], best[t - 1]  # no free GPU on this tier
            continue
        previous = candidates
        if np.count_nonzero(candidates) < num_gpus:
            continue
        within[t] = within_node_allocation(
            candidates, num_gpus, slowdown, sim.node_of_gpu, sim.config.pal_node_order
        )
        best[t] = pm_first_allocation(candidates, num_gpus, slowdown, tier, sim.node_of_gpu)
    packed = packed_allocation(free, num_gpus, sim.cluster.gpus_per_node, packed_strict_total)
    return JobCandidates(
        job=job,
        sets=(*within, *best, packed, None),
        random_feasible=int(free.sum()) >= num_gpus,
    )


def pal_choice(
    sim: Simulator,
    job: int,
    free: BoolArray,
    factors: SlowdownFactors,
    entries: tuple[MatrixEntry, ...],
    max_tiers: int,
) -> int | None:
    """Candidate index PAL takes for ``job``: the first feasible entry of its cost order.

    Returns:
        The candidate index, or None if the job does not fit.
    """
    perf_class = int(sim.jobs.perf_class[job])
    num_gpus = int(sim.jobs.num_gpus[job])
    tiers = factors.tiers[perf_class].tolist()
    if num_gpus == 1 or num_gpus > sim.cluster.gpus_per_node:
        top = len(tiers) - 1
        return int(max_tiers + top) if int(free.sum()) >= num_gpus else None
    slowdown = factors.sf[perf_class]
    for entry in entries:
        t = tiers.index(entry.value)
        candidates = free & (slowdown <= entry.value)
        if candidates.sum() < num_gpus:
            continue
        if entry.locality is Locality.ACROSS:
            return int(max_tiers + t)
        if within_node_allocation(
            candidates, num_gpus, slowdown, sim.node_of_gpu, sim.config.pal_node_order
        ) is not None:
            return int(t)
    return None
