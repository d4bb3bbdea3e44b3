"""Compiled (numba) kernels of the env's per-decision candidates: the GPU sets of every rule.

Every decision needs, for each distinct (perf class, GPU count) "shape" in the job window, the
2T + 1 deterministic candidate GPU sets of :mod:`palgym.envs.candidates` (their observation
features are computed in :mod:`palgym.envs.obs_kernel`, the only numba module that reads the
feature tables). The reference implementation does this with the placement policies' own numpy
functions; these kernels do the same walk in one compiled call per decision, reproducing the
policies' selection and tie-breaking rules exactly (``tests/test_env_kernel.py`` checks every
set and feature against the reference on random states, and the parity tests check whole
episodes).

Rules reproduced (Source: PAL, SC24, Section IV; PAL artifact ``placement/*.py``):

- within-node (PAL WITHIN): nodes with >= N candidates, visited by candidate count descending,
  ties ascending node id; the first node with the smallest N-th best factor wins; its first N
  candidates (ascending id) with factor <= that value are taken
  (:func:`palgym.policies.pal.within_node_allocation`, default node order). This is the
  policies' own compiled form, :func:`palgym.policies.pal_kernel.node_tables` (once per class
  and decision) and :func:`~palgym.policies.pal_kernel.within_node_pick` (per shape and tier);
- best-factor (PM-First): candidates sorted by (slowdown factor, ``|#same node and k-means
  label - N|``, GPU id), the first N taken (:func:`palgym.policies.pm_first.pm_first_allocation`;
  its compiled form :func:`palgym.policies.pal_kernel.pm_first_pick`, once per shape);
- packed: :func:`palgym.policies.allocation.packed_allocation`.

The GPU layout is contiguous (GPU g on node g // G_n), as :class:`palgym.sim.cluster.ClusterSpec`
builds it. Without numba installed, :data:`AVAILABLE` is False and the env uses the reference.
"""

from __future__ import annotations

import numpy as np

from palgym._numba import AVAILABLE as AVAILABLE  # re-exported for the env
from palgym._numba import njit as njit  # re-exported for obs_kernel
from palgym.policies.pal_kernel import node_tables, pm_first_pick, within_node_pick


@njit(cache=True, nogil=True)
def _packed(free, num_gpus, gpus_per_node, strict_total, out):  # type: ignore[no-untyped-def]
    """Packed on bool (G,) ``free``; writes N ascending GPU ids to ``out``. Returns feasible."""
    num_nodes = free.size // gpus_per_node
    counts = np.zeros(num_nodes, np.int64)
    for g in range(free.size):
        if free[g]:
            counts[g // gpus_per_node] += 1
    node = _packed_node(counts, num_gpus)
    if node != -1:
        _first_free(free, node, num_gpus, gpus_per_node, out, 0)
        return True
    total = counts.sum()
    if total < num_gpus or (strict_total and total == num_gpus):
        return False
    remaining = num_gpus
    taken = 0
    while remaining > 0:
        node = int(np.argmax(counts))
        take = min(counts[node], remaining)
        _first_free(free, node, take, gpus_per_node, out, taken)
        taken += take
        counts[node] -= take
        remaining -= take
    out[:num_gpus] = np.sort(out[:num_gpus])
    return True


@njit(cache=True, nogil=True)
def _packed_node(counts, num_gpus):  # type: ignore[no-untyped-def]
    """The first node with exactly N free GPUs, else the one with the fewest >= N (lowest id
    on ties), else -1."""
    for n in range(counts.size):
        if counts[n] == num_gpus:
            return n
    node = -1
    for n in range(counts.size):
        if counts[n] >= num_gpus and (node == -1 or counts[n] < counts[node]):
            node = n
    return node


@njit(cache=True, nogil=True)
def _first_free(free, node, count, gpus_per_node, out, offset):  # type: ignore[no-untyped-def]
    k = 0
    for g in range(node * gpus_per_node, (node + 1) * gpus_per_node):
        if k < count and free[g]:
            out[offset + k] = g
            k += 1


@njit(cache=True, nogil=True)
def window_candidates(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    free, jobs, perf_class, num_gpus, sf, rank, labels, tiers, num_tiers, max_tiers,
    gpus_per_node, strict_total, best0, packed, random,
    shape_of_slot, shape_gpus, sets, feasible,
):
    """Candidate GPU sets of every shape of the window on the free GPUs (their observation
    features: :func:`palgym.envs.obs_kernel.candidate_features`).

    Args:
        free: bool (G,).
        jobs: int64 (K',) window jobs; perf_class, num_gpus: the job table's columns.
        sf: float64 (C, G) slowdown factors; rank: int64 (C, G) index of sf in the class's
            tiers; labels: int64 (C, G) k-means labels; tiers: float64 (C, T) ascending, padded
            with inf; num_tiers: int64 (C,).
        max_tiers: T. gpus_per_node: G_n. strict_total: Packed's strict-total quirk.
        best0, packed, random: candidate indices of the tier-0 best-factor, the Packed and the
            Random candidate (:class:`palgym.envs.actions.ActionCodec`; within[t] is t and
            best[t] is best0 + t).
        shape_of_slot: int64 (>= K',) out: the shape row of each slot.
        shape_gpus: int64 (>= K',) out: N of each shape (shapes in order of first slot).
        sets: int64 (>= S, M - 1, >= N_max) out: candidate GPU sets (-1 padded).
        feasible: bool (>= S, M) out.

    Returns:
        S, the number of shapes (rows of the outputs that were written).
    """
    shape_class = np.empty(jobs.size, np.int64)
    num_shapes = _window_shapes(jobs, perf_class, num_gpus, sets.shape[2], shape_of_slot,
                                shape_class, shape_gpus)
    sets[:num_shapes] = -1
    feasible[:num_shapes] = False
    num_nodes = free.size // gpus_per_node
    node_sorted = np.empty((num_nodes, gpus_per_node), np.float64)
    node_le = np.empty((max_tiers, num_nodes), np.int64)
    num_free = 0
    for g in range(free.size):
        if free[g]:
            num_free += 1
    for c in range(sf.shape[0]):
        tables_of_c = False
        num_labels = -1  # of class c, read at its first shape
        for s in range(num_shapes):
            if shape_class[s] != c:
                continue
            if num_labels == -1:
                num_labels = labels[c].max() + 1
            n = shape_gpus[s]
            if n <= gpus_per_node and not tables_of_c:
                node_tables(free, sf[c], rank[c], num_tiers[c], gpus_per_node, node_sorted,
                            node_le)
                tables_of_c = True
            _shape_candidates(
                free, num_free, n, sf[c], rank[c], labels[c], num_labels,
                min(num_tiers[c], max_tiers), gpus_per_node, strict_total, best0, packed,
                random, node_sorted, node_le, sets[s], feasible[s],
            )
    return num_shapes


@njit(cache=True, nogil=True)
def _window_shapes(jobs, perf_class, num_gpus, max_width, shape_of_slot, shape_class, shape_gpus):  # type: ignore[no-untyped-def]  # noqa: E501
    """Group the window's jobs by (perf class, N), shapes in order of first slot; returns S."""
    num_shapes = 0
    for k in range(jobs.size):
        c = perf_class[jobs[k]]
        n = num_gpus[jobs[k]]
        found = -1
        for s in range(num_shapes):
            if shape_class[s] == c and shape_gpus[s] == n:
                found = s
                break
        if found == -1:
            if n > max_width:
                raise ValueError("a job is wider than the kernel's set buffer")
            found = num_shapes
            shape_class[found] = c
            shape_gpus[found] = n
            num_shapes += 1
        shape_of_slot[k] = found
    return num_shapes


@njit(cache=True, nogil=True)
def _shape_candidates(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    free, num_free, n, sf_c, rank_c, label_c, num_labels, num_tiers, gpus_per_node,
    strict_total, best0, packed, random, node_sorted, node_le, sets, feasible,
):
    """The M candidates of one shape (class c, N = ``n``, ``num_free`` free GPUs): sets
    (M - 1, >= N) and feasible (M,), all -1 / False on entry.

    The best-factor sets are PM-First on all free GPUs
    (:func:`palgym.policies.pal_kernel.pm_first_pick`): restricting the candidates to factors
    <= v_t removes whole (node, label) groups, all of them ordered after every GPU of a lower
    tier, so the set at any feasible tier is that one, feasible at tier t exactly when its
    worst rank is <= t.
    """
    worst_rank = pm_first_pick(free, n, rank_c, label_c, num_labels, gpus_per_node,
                               sets[best0])
    for t in range(num_tiers):
        if n <= gpus_per_node and within_node_pick(
            free, n, sf_c, node_le[t], node_sorted, gpus_per_node, sets[t]
        ):
            feasible[t] = True
        if 0 <= worst_rank <= t:
            feasible[best0 + t] = True
            sets[best0 + t, :n] = sets[best0, :n]
    if worst_rank > 0:  # not feasible at tier 0: the row was only a buffer
        sets[best0, :n] = -1
    feasible[packed] = _packed(free, n, gpus_per_node, strict_total, sets[packed])
    feasible[random] = num_free >= n
