"""Compiled (numba) twins of the PM-First and PAL per-job rules, for the contiguous layout.

:func:`pm_first_pick` is :func:`palgym.policies.pm_first.pm_first_allocation` on the free GPUs
and :func:`pal_pick` is :func:`palgym.policies.pal.pal_allocation` with the ascending node order,
for GPU g on node g // G_n (:class:`palgym.sim.cluster.ClusterSpec`'s layout). They make the
same float comparisons as the numpy rules and break ties the same way
(``tests/test_pal_kernel.py`` checks them against the numpy rules on random states); the
placement policies use them when the layout is contiguous and the node order is ascending, and
the numpy rules otherwise.

PAL's WITHIN step is one compiled form, :func:`node_tables` then :func:`within_node_pick` at a
tier, which the env's candidate kernels (:mod:`palgym.envs.kernel`) share.

Why no sort: PM-First's order is (slowdown factor, ``|#free on the node with the GPU's label -
N|``, GPU id); the N smallest keys are kept by insertion. PAL's ACROSS step at tier v restricts
PM-First to factors <= v, which removes whole (node, label) groups, all ordered after every
lower factor: the restricted set is the unrestricted one whenever >= N candidates have factor
<= v. Its WITHIN step at v keeps the node with the smallest (N-th best factor, -candidate
count, node id), the first minimum of its visit order (count descending, then node id); a node
with >= N candidates at v has its N best free GPUs among them, so the N-th best free factor
(``node_tables``' sorted row) is the N-th best candidate.

Source: PAL, SC24, Sections IV-B and IV-C; artifact ``placement/pmfirst.py``, ``placement/pal.py``.
Importing this module imports numba (see :mod:`palgym._numba`).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit


@njit(cache=True, nogil=True)
def keep_smallest(values, count, value):  # type: ignore[no-untyped-def]
    """Insert ``value`` into ascending ``values[:count]``, keeping at most ``values.size``
    of the smallest (an insertion-sort step); returns the new count."""
    if count == values.size:
        if value >= values[count - 1]:
            return count
        count -= 1
    i = count
    while i > 0 and values[i - 1] > value:
        values[i] = values[i - 1]
        i -= 1
    values[i] = value
    return count + 1


@njit(cache=True, nogil=True)
def pm_first_pick(free, num_gpus, rank_c, label_c, num_labels, gpus_per_node, out):  # type: ignore[no-untyped-def]
    """PM-First on the free GPUs.

    Args:
        free: bool (G,).
        num_gpus: N >= 1.
        rank_c: int64 (G,), the rank of each GPU's slowdown factor among the class's distinct
            factors (equal factors, equal rank).
        label_c: int64 (G,), the class's k-means labels, in [0, num_labels).
        num_labels: labels of the class.
        gpus_per_node: G_n.
        out: int64 (>= N,) out: the N chosen GPU ids, ascending.

    Returns:
        The largest rank among the chosen GPUs, or -1 if fewer than N GPUs are free.
    """
    total_gpus = free.size
    num_nodes = total_gpus // gpus_per_node
    groups = np.zeros(num_labels, np.int64)  # free GPUs per label on the node being read
    chosen = np.empty(num_gpus, np.int64)
    k = 0
    total = 0
    for node in range(num_nodes):  # node by node: no integer division per GPU
        start = node * gpus_per_node
        groups[:] = 0
        for g in range(start, start + gpus_per_node):
            if free[g]:
                groups[label_c[g]] += 1
        for g in range(start, start + gpus_per_node):
            if free[g]:
                total += 1
                score = abs(groups[label_c[g]] - num_gpus)
                key = (rank_c[g] * (total_gpus + 1) + score) * total_gpus + g
                if k < num_gpus or key < chosen[num_gpus - 1]:
                    k = keep_smallest(chosen, k, key)
    if total < num_gpus:
        return -1
    for i in range(num_gpus):
        keep_smallest(out[:num_gpus], i, chosen[i] % total_gpus)
    return chosen[num_gpus - 1] // total_gpus // (total_gpus + 1)


@njit(cache=True, nogil=True)
def node_tables(free, sf_c, rank_c, num_tiers, gpus_per_node, node_sorted, node_le):  # type: ignore[no-untyped-def]
    """What PAL's WITHIN step reads of the free GPUs, per node, for every tier at once.

    Args:
        free: bool (G,).
        sf_c: float64 (G,), the class's slowdown factors.
        rank_c: int64 (G,), each factor's tier (its rank among the class's distinct factors).
        num_tiers: T_c, the class's distinct factors (tiers to fill).
        gpus_per_node: G_n.
        node_sorted: float64 (N_n, G_n) out: each node's free GPUs' factors ascending, inf
            padded.
        node_le: int64 (>= T_c, N_n) out: ``node_le[t, node]``, the node's free GPUs of tier
            <= t (the WITHIN candidates at tier t); rows from T_c on are 0.
    """
    num_nodes = free.size // gpus_per_node
    node_sorted[:] = np.inf
    node_le[:] = 0
    for node in range(num_nodes):
        k = 0
        for g in range(node * gpus_per_node, (node + 1) * gpus_per_node):
            if free[g]:
                value = sf_c[g]
                i = k
                while i > 0 and node_sorted[node, i - 1] > value:  # insertion sort
                    node_sorted[node, i] = node_sorted[node, i - 1]
                    i -= 1
                node_sorted[node, i] = value
                k += 1
                for t in range(rank_c[g], num_tiers):
                    node_le[t, node] += 1


@njit(cache=True, nogil=True)
def within_node_pick(free, num_gpus, sf_c, counts, node_sorted, gpus_per_node, out):  # type: ignore[no-untyped-def]
    """PAL's WITHIN step (:func:`palgym.policies.pal.within_node_allocation`, ascending node
    order) at one tier, from :func:`node_tables`; returns feasible.

    Nodes with >= N candidates are visited by candidate count descending, ties ascending id,
    and the first with the smallest N-th best factor wins: the minimum of (N-th factor, -count,
    node id). Its first N free GPUs (ascending id) with factor <= that value go to ``out``.

    Args:
        free, sf_c, gpus_per_node: as :func:`node_tables`.
        num_gpus: N, 1 <= N <= G_n.
        counts: int64 (N_n,), candidates per node at the tier (a row of ``node_le``).
        node_sorted: float64 (N_n, >= N), :func:`node_tables`' ``node_sorted``.
        out: int64 (>= N,) out.
    """
    best_node = -1
    best_worst = 0.0
    best_count = 0
    for node in range(free.size // gpus_per_node):
        count = counts[node]
        if count < num_gpus:
            continue
        worst = node_sorted[node, num_gpus - 1]  # the N candidates: the N best free GPUs
        if best_node == -1 or worst < best_worst or (worst == best_worst and count > best_count):
            best_node, best_worst, best_count = node, worst, count
    if best_node == -1:
        return False
    k = 0
    for g in range(best_node * gpus_per_node, (best_node + 1) * gpus_per_node):
        if k < num_gpus and free[g] and sf_c[g] <= best_worst:
            out[k] = g
            k += 1
    return True


@njit(cache=True, nogil=True)
def pal_pick(free, num_gpus, sf_c, rank_c, label_c, num_labels, gpus_per_node,  # type: ignore[no-untyped-def]  # noqa: PLR0913
             num_tiers, entry_rank, entry_within, out):
    """PAL on the free GPUs (ascending node order); returns feasible.

    Args:
        free, num_gpus, rank_c, label_c, num_labels, gpus_per_node, out: as
            :func:`pm_first_pick`.
        sf_c: float64 (G,), the class's slowdown factors.
        num_tiers: T_c, the class's distinct factors.
        entry_rank: int64 (E,), the tier of each matrix entry's value, in cost order.
        entry_within: bool (E,), True for a WITHIN entry, False for ACROSS.
    """
    if num_gpus == 1 or num_gpus > gpus_per_node:
        return pm_first_pick(free, num_gpus, rank_c, label_c, num_labels, gpus_per_node,
                             out) >= 0
    num_nodes = free.size // gpus_per_node
    node_sorted = np.empty((num_nodes, gpus_per_node), np.float64)
    node_le = np.empty((num_tiers, num_nodes), np.int64)
    node_tables(free, sf_c, rank_c, num_tiers, gpus_per_node, node_sorted, node_le)
    across_rank = -2  # PM-First on all free GPUs, computed at the first ACROSS entry
    across = np.empty(num_gpus, np.int64)
    for e in range(entry_rank.size):
        t = entry_rank[e]
        if entry_within[e]:
            if within_node_pick(free, num_gpus, sf_c, node_le[t], node_sorted, gpus_per_node,
                                out):
                return True
            continue
        if node_le[t].sum() < num_gpus:  # fewer than N free GPUs of tier <= t
            continue
        if across_rank == -2:
            across_rank = pm_first_pick(free, num_gpus, rank_c, label_c, num_labels,
                                        gpus_per_node, across)
        out[:num_gpus] = across
        return True
    return False
