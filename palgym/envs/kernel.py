"""Compiled (numba) kernels of the env's per-decision work: candidates, their features, masks.

Every decision needs, for each distinct (perf class, GPU count) "shape" in the job window, the
2T + 1 deterministic candidate GPU sets of :mod:`palgym.envs.candidates` and their observation
features. The reference implementation does this with the placement policies' own numpy
functions; these kernels do the same walk in one compiled call per decision, reproducing the
policies' selection and tie-breaking rules exactly (``tests/test_env_kernel.py`` checks every
set and feature against the reference on random states, and the parity tests check whole
episodes).

Rules reproduced (Source: PAL, SC24, Section IV; PAL artifact ``placement/*.py``):

- within-node (PAL WITHIN): nodes with >= N candidates, visited by candidate count descending,
  ties ascending node id; the first node with the smallest N-th best factor wins; its first N
  candidates (ascending id) with factor <= that value are taken
  (:func:`palgym.policies.pal.within_node_allocation`, default node order);
- best-factor (PM-First): candidates sorted by (slowdown factor, ``|#same node and k-means
  label - N|``, GPU id), the first N taken (:func:`palgym.policies.pm_first.pm_first_allocation`);
- packed: :func:`palgym.policies.allocation.packed_allocation`.

The GPU layout is contiguous (GPU g on node g // G_n), as :class:`palgym.sim.cluster.ClusterSpec`
builds it. Without numba installed, :data:`AVAILABLE` is False and the env uses the reference.
"""

from __future__ import annotations

import numpy as np

from palgym._numba import AVAILABLE as AVAILABLE  # re-exported for the env
from palgym._numba import njit as njit  # re-exported for obs_kernel

NUM_FEATURES = 6
"""Candidate features the kernel fills (the seventh, keeps_gpus, is per job)."""
SLOWDOWN_MAX = 4.0
LOCALITY_MAX = 4.0


@njit(cache=True, nogil=True)
def _class_tables(free, sf_c, rank_c, num_tiers, gpus_per_node, node_sorted, node_le):  # type: ignore[no-untyped-def]
    """Per node: the free GPUs' factors ascending (float64 (N_n, G_n), inf padded) and the
    number of free GPUs with factor <= tier t (int64 (N_n, T))."""
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
                    node_le[node, t] += 1


@njit(cache=True, nogil=True)
def _within_node(free, num_gpus, sf_c, tier_value, t, node_sorted, node_le, gpus_per_node, out):  # type: ignore[no-untyped-def]
    """PAL's WITHIN rule at tier ``t`` (candidates: free GPUs with factor <= ``tier_value``).

    Nodes are visited by candidate count descending, ties ascending id, and the first with the
    smallest N-th best factor wins: the minimum of (N-th factor, -count, node id). Writes the
    node's first N candidates with factor <= that value to ``out``; returns feasible.
    """
    best_node = -1
    best_worst = 0.0
    best_count = 0
    for node in range(node_le.shape[0]):
        count = node_le[node, t]
        if count < num_gpus:
            continue
        worst = node_sorted[node, num_gpus - 1]
        if (best_node == -1 or worst < best_worst
                or (worst == best_worst and count > best_count)):
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
def _best_factor(free, num_gpus, rank_c, label_c, gpus_per_node, out):  # type: ignore[no-untyped-def]
    """PM-First on all free GPUs; writes N ascending GPU ids to ``out``; returns the rank of the
    worst chosen factor (-1: fewer than N free).

    Restricting the candidates to factors <= v_t removes whole (node, label) groups, all of
    them ordered after every GPU of a lower tier, so the set at any feasible tier is this one
    and it is feasible at tier t exactly when the returned rank is <= t.
    """
    num_gpus_total = free.size
    total = 0
    for g in range(num_gpus_total):
        if free[g]:
            total += 1
    if total < num_gpus:
        return -1
    num_labels = label_c.max() + 1
    groups = np.zeros((num_gpus_total // gpus_per_node, num_labels), np.int64)
    for g in range(num_gpus_total):
        if free[g]:
            groups[g // gpus_per_node, label_c[g]] += 1
    # the N smallest keys, kept sorted by insertion (N and G are small: no sort calls)
    chosen = np.empty(num_gpus, np.int64)
    k = 0
    for g in range(num_gpus_total):
        if free[g]:
            score = abs(groups[g // gpus_per_node, label_c[g]] - num_gpus)
            key = (rank_c[g] * (num_gpus_total + 1) + score) * num_gpus_total + g
            k = _keep_smallest(chosen, k, key)
    for i in range(num_gpus):  # the chosen GPU ids, ascending
        _keep_smallest(out, i, chosen[i] % num_gpus_total)
    return chosen[num_gpus - 1] // num_gpus_total // (num_gpus_total + 1)


@njit(cache=True, nogil=True)
def _keep_smallest(values, count, value):  # type: ignore[no-untyped-def]
    """Insert ``value`` into ascending ``values[:count]`` keeping at most ``values.size`` of the
    smallest (insertion sort step); returns the new count."""
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
def _features(gpus, num_gpus, sf_c, best_tier, gpus_per_node, lf, larger_rule, row):  # type: ignore[no-untyped-def]
    """Features 0..5 of one candidate set (:data:`palgym.envs.observations.CANDIDATE_FEATURES`)."""
    worst = 0.0
    on_best = 0
    for i in range(num_gpus):
        value = sf_c[gpus[i]]
        worst = max(worst, value)
        if value <= best_tier:
            on_best += 1
    spans = gpus[0] // gpus_per_node != gpus[num_gpus - 1] // gpus_per_node
    pays = num_gpus > gpus_per_node if larger_rule else spans
    locality = lf if pays else 1.0
    row[0] = 1.0
    row[1] = min(worst / SLOWDOWN_MAX, 1.0)
    row[2] = 1.0 if spans else 0.0
    row[3] = min((locality - 1.0) / (LOCALITY_MAX - 1.0), 1.0)
    row[4] = min(0.5 / (worst * locality), 1.0)
    row[5] = on_best / num_gpus


@njit(cache=True, nogil=True)
def window_candidates(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    free, jobs, perf_class, num_gpus, sf, rank, labels, tiers, num_tiers, max_tiers,
    gpus_per_node, strict_total, lf_by_class, larger_rule,
    shape_of_slot, shape_gpus, sets, feasible, features,
):
    """Candidates and features of every shape of the window on the free GPUs.

    Args:
        free: bool (G,).
        jobs: int64 (K',) window jobs; perf_class, num_gpus: the job table's columns.
        sf: float64 (C, G) slowdown factors; rank: int64 (C, G) index of sf in the class's
            tiers; labels: int64 (C, G) k-means labels; tiers: float64 (C, T) ascending, padded
            with inf; num_tiers: int64 (C,).
        max_tiers: T. gpus_per_node: G_n. strict_total: Packed's strict-total quirk.
        lf_by_class: float64 (C,) locality penalty. larger_rule: the penalty is paid by jobs
            larger than a node (else by sets spanning nodes).
        shape_of_slot: int64 (>= K',) out: the shape row of each slot.
        shape_gpus: int64 (>= K',) out: N of each shape (shapes in order of first slot).
        sets: int64 (>= S, 2T + 1, >= N_max) out: candidate GPU sets (-1 padded).
        feasible: bool (>= S, 2T + 2) out. features: float32 (>= S, 2T + 2, 6) out.

    Returns:
        S, the number of shapes (rows of the outputs that were written).
    """
    shape_class = np.empty(jobs.size, np.int64)
    num_shapes = _window_shapes(jobs, perf_class, num_gpus, sets.shape[2], shape_of_slot,
                                shape_class, shape_gpus)
    sets[:num_shapes] = -1
    feasible[:num_shapes] = False
    features[:num_shapes] = 0.0
    num_nodes = free.size // gpus_per_node
    node_sorted = np.empty((num_nodes, gpus_per_node), np.float64)
    node_le = np.empty((num_nodes, max_tiers), np.int64)
    for c in range(sf.shape[0]):
        tables_of_c = False
        for s in range(num_shapes):
            if shape_class[s] != c:
                continue
            n = shape_gpus[s]
            if n <= gpus_per_node and not tables_of_c:
                _class_tables(free, sf[c], rank[c], num_tiers[c], gpus_per_node, node_sorted,
                              node_le)
                tables_of_c = True
            _shape_candidates(
                free, n, sf[c], rank[c], labels[c], tiers[c], min(num_tiers[c], max_tiers),
                max_tiers, gpus_per_node, strict_total, lf_by_class[c], larger_rule,
                node_sorted, node_le, sets[s], feasible[s], features[s],
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
    free, n, sf_c, rank_c, label_c, tiers_c, num_tiers, max_tiers, gpus_per_node,
    strict_total, lf, larger_rule, node_sorted, node_le, sets, feasible, features,
):
    """The 2T + 2 candidates of one shape (class c, N = ``n``): sets (2T + 1, >= N),
    feasible (2T + 2,) and features (2T + 2, 6), all zero / -1 on entry."""
    worst_rank = _best_factor(free, n, rank_c, label_c, gpus_per_node, sets[max_tiers])
    for t in range(num_tiers):
        if n <= gpus_per_node and _within_node(
            free, n, sf_c, tiers_c[t], t, node_sorted, node_le, gpus_per_node, sets[t]
        ):
            feasible[t] = True
        if 0 <= worst_rank <= t:
            feasible[max_tiers + t] = True
            sets[max_tiers + t, :n] = sets[max_tiers, :n]
    if worst_rank > 0:  # not feasible at tier 0: the row was only a buffer
        sets[max_tiers, :n] = -1
    feasible[2 * max_tiers] = _packed(free, n, gpus_per_node, strict_total, sets[2 * max_tiers])
    num_free = 0
    for g in range(free.size):
        if free[g]:
            num_free += 1
    random_index = 2 * max_tiers + 1
    feasible[random_index] = num_free >= n
    for m in range(random_index):
        if feasible[m]:
            _features(sets[m], n, sf_c, tiers_c[0], gpus_per_node, lf, larger_rule, features[m])
    features[random_index, 0] = 1.0 if num_free >= n else 0.0
