"""PM-First allocation: best slowdown factor first, then best-match locality.

Source: PAL, SC24, Section IV-B; artifact ``placement/pmfirst.py::_return_pmfirst_gpus``.
"""

from __future__ import annotations

import numpy as np

from palgym.sim.types import BoolArray, IntArray


def pm_first_allocation(
    candidates: BoolArray,
    num_gpus: int,
    slowdown: np.ndarray,
    tier: IntArray,
    node_of_gpu: IntArray,
) -> IntArray | None:
    """Pick ``num_gpus`` of the candidate GPUs for one job.

    Each candidate g is scored ``|#{candidates on g's node with g's slowdown factor} - N|``;
    candidates are sorted by (slowdown factor asc, score asc, GPU id asc) and the first N taken
    (they may span nodes).

    Args:
        candidates: bool (G,), GPUs that may be used (free, possibly restricted to a tier).
        num_gpus: N.
        slowdown: float64 (G,), the job class's slowdown factors.
        tier: int64 (G,), a label equal exactly where ``slowdown`` is equal.
        node_of_gpu: int64 (G,).

    Returns:
        int64 (N,) ascending GPU ids, or None if fewer than N candidates.
    """
    index = np.flatnonzero(candidates)
    if index.size < num_gpus:
        return None
    group = node_of_gpu[index] * (int(tier.max()) + 1) + tier[index]
    score = np.abs(np.bincount(group)[group] - num_gpus)
    picked = index[np.lexsort((index, score, slowdown[index]))[:num_gpus]]
    return np.sort(picked)
