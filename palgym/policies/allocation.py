"""Variability-blind GPU allocation rules: Packed and Random.

Each rule picks ``num_gpus`` GPUs among the free ones (bool (G,) mask) or returns None. Free
GPUs are listed node by node, nodes ascending, GPUs ascending.

Source: PAL artifact ``placement/packing_{sticky,nonsticky}.py::_consolidated_placement`` and
``placement/random_{sticky,nonsticky}.py::_random_placement``.
"""

from __future__ import annotations

import numpy as np

from palgym.policies.base import Sampler
from palgym.sim.types import BoolArray, IntArray


def packed_allocation(
    free: BoolArray, num_gpus: int, gpus_per_node: int, strict_total: bool = False
) -> IntArray | None:
    """Consolidated (packed) allocation.

    1. The first node with exactly ``num_gpus`` free GPUs: all of them.
    2. Else, among nodes with >= ``num_gpus`` free, the one with the fewest (lowest id on
       ties): its first ``num_gpus`` free GPUs.
    3. Else, if enough GPUs are free in total (strictly more when ``strict_total``, the
       artifact's Packed-Sticky), repeatedly take from the node with the most remaining free
       GPUs (lowest id on ties) until ``num_gpus`` are taken.

    Args:
        free: bool (G,), True where the GPU is free.
        num_gpus: GPUs wanted.
        gpus_per_node: G_n.
        strict_total: require ``total_free > num_gpus`` in step 3.

    Returns:
        int64 (num_gpus,) ascending GPU ids, or None.
    """
    per_node = free.reshape(-1, gpus_per_node).sum(axis=1)
    exact = np.flatnonzero(per_node == num_gpus)
    if exact.size:
        return _first_free(free, int(exact[0]), num_gpus, gpus_per_node)
    enough = np.flatnonzero(per_node >= num_gpus)
    if enough.size:
        node = int(enough[np.argmin(per_node[enough])])
        return _first_free(free, node, num_gpus, gpus_per_node)
    total = int(per_node.sum())
    if total < num_gpus or (strict_total and total == num_gpus):
        return None
    counts = per_node.copy()
    taken: list[IntArray] = []
    remaining = num_gpus
    while remaining > 0:
        node = int(np.argmax(counts))
        take = min(int(counts[node]), remaining)
        taken.append(_first_free(free, node, take, gpus_per_node))
        counts[node] -= take
        remaining -= take
    return np.sort(np.concatenate(taken))


def _first_free(free: BoolArray, node: int, count: int, gpus_per_node: int) -> IntArray:
    start = node * gpus_per_node
    return start + np.flatnonzero(free[start : start + gpus_per_node])[:count]


def random_allocation(free: BoolArray, num_gpus: int, sampler: Sampler) -> IntArray | None:
    """``num_gpus`` GPUs sampled uniformly without replacement from all free GPUs.

    With a ``random.Random`` sampler this is exactly CPython's ``random.sample`` over the free
    list (ascending ids), which the artifact calls; no draw is made when too few are free.

    Returns:
        int64 (num_gpus,) ascending GPU ids, or None.
    """
    free_list = free.nonzero()[0].tolist()
    if len(free_list) < num_gpus:
        return None
    return np.sort(np.asarray(sampler.sample(free_list, num_gpus), dtype=np.int64))
