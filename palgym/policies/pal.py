"""PAL allocation: walk the locality x variability matrix of the job's class.

For class c the entries are, for each distinct slowdown factor v (first-appearance order in GPU
id order), (v, WITHIN, cost v) and (v, ACROSS, cost v x lf), stably sorted by cost. Jobs of one
GPU or of more GPUs than a node has are placed like PM-First. Otherwise the first entry that
yields GPUs wins:

- (v, WITHIN): among nodes with >= N free GPUs of factor <= v (visited by that count descending),
  the N-subset inside one node minimising the max factor (first minimum, lowest GPU ids);
- (v, ACROSS): if >= N free GPUs have factor <= v, PM-First among them.

Source: PAL, SC24, Section IV-C and Algorithm 1; artifact ``placement/pal.py::_pal_placement``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.policies.pm_first import pm_first_allocation
from palgym.sim.config import PalNodeOrder
from palgym.sim.types import BoolArray, IntArray, Locality

NODE_ORDERS: tuple[str, ...] = tuple(order.value for order in PalNodeOrder)
"""How the WITHIN step may visit nodes with equally many candidates
(``SimConfig.pal_node_order``)."""


@dataclass(frozen=True)
class MatrixEntry:
    """One cell of PAL's matrix: slowdown tier ``value``, locality and cost."""

    value: float
    locality: Locality
    cost: float


def matrix_entries(slowdown: np.ndarray, locality_penalty: float) -> tuple[MatrixEntry, ...]:
    """The class's entries sorted by cost (stable; WITHIN before ACROSS of the same v).

    Args:
        slowdown: float64 (G,), the class's slowdown factors.
        locality_penalty: lf of the class.
    """
    _, first = np.unique(slowdown, return_index=True)
    entries: list[MatrixEntry] = []
    for value in slowdown[np.sort(first)].tolist():
        entries.append(MatrixEntry(value, Locality.WITHIN, value * 1.0))
        entries.append(MatrixEntry(value, Locality.ACROSS, value * locality_penalty))
    return tuple(sorted(entries, key=lambda entry: entry.cost))


def pal_allocation(
    free: BoolArray,
    num_gpus: int,
    slowdown: np.ndarray,
    tier: IntArray,
    node_of_gpu: IntArray,
    gpus_per_node: int,
    entries: tuple[MatrixEntry, ...],
    node_order: str = "ascending",
) -> IntArray | None:
    """Pick ``num_gpus`` free GPUs for one job of the class described by ``slowdown``.

    Args:
        free: bool (G,), free GPUs.
        num_gpus: N.
        slowdown, tier: float64 / int64 (G,), the class's factors and their tier labels.
        node_of_gpu: int64 (G,).
        gpus_per_node: G_n.
        entries: :func:`matrix_entries` of the class.
        node_order: ``"ascending"`` or ``"pandas-1.1"``: how nodes with equal candidate counts
            are visited in the WITHIN step (see :func:`pandas11_value_counts_order`).

    Returns:
        int64 (N,) ascending GPU ids, or None if fewer than N GPUs are free.
    """
    if num_gpus == 1 or num_gpus > gpus_per_node:
        return pm_first_allocation(free, num_gpus, slowdown, tier, node_of_gpu)
    for entry in entries:
        candidates = free & (slowdown <= entry.value)
        if entry.locality is Locality.WITHIN:
            picked = within_node_allocation(candidates, num_gpus, slowdown, node_of_gpu, node_order)
        else:
            picked = pm_first_allocation(candidates, num_gpus, slowdown, tier, node_of_gpu)
        if picked is not None:
            return picked
    return None


def within_node_allocation(
    candidates: BoolArray,
    num_gpus: int,
    slowdown: np.ndarray,
    node_of_gpu: IntArray,
    node_order: str,
) -> IntArray | None:
    """PAL's WITHIN step: N candidate GPUs inside one node minimising the max slowdown factor.

    Nodes with >= N candidates are visited by candidate count descending (ties: ascending node
    id, or the pandas-1.1 order); the first node with the smallest N-th best factor wins, and
    its first N GPUs (ascending id) with factor <= that value are taken.

    Returns:
        int64 (N,) ascending GPU ids, or None if no node has N candidates.

    Raises:
        ConfigError: ``node_order`` is not one of :data:`NODE_ORDERS`.
    """
    if node_order not in NODE_ORDERS:
        raise ConfigError(f"node_order must be one of {list(NODE_ORDERS)}, got {node_order!r}")
    index = np.flatnonzero(candidates)
    nodes = node_of_gpu[index]
    counts = np.bincount(nodes)
    if counts.size == 0 or counts.max() < num_gpus:
        return None
    if node_order == "pandas-1.1":
        ordered = [node for node, count in pandas11_value_counts_order(nodes) if count >= num_gpus]
    else:
        eligible = np.flatnonzero(counts >= num_gpus)
        ordered = eligible[np.argsort(-counts[eligible], kind="stable")].tolist()
    best: tuple[float, IntArray] | None = None
    for node in ordered:
        gpus = index[nodes == node]
        factors = slowdown[gpus]
        worst = float(np.partition(factors, num_gpus - 1)[num_gpus - 1])
        if best is None or worst < best[0]:
            best = (worst, gpus[factors <= worst][:num_gpus])
    return None if best is None else best[1]


def pandas11_value_counts_order(keys: IntArray) -> list[tuple[int, int]]:
    """``Series(keys).value_counts()`` order under pandas 1.1 (the artifact's pinned version).

    pandas 1.1 counts with a khash int64 table (hash ``k>>33 ^ k ^ k<<11``, double hashing with
    step ``((h>>3 ^ h<<3) | 1) & mask``, pre-sized to ``len(keys)`` buckets rounded up to a power
    of two, at least 4, grown x2 when 77% full), reads keys in bucket order, then sorts
    descending as the reverse of a stable ascending argsort (pandas GH35922, fixed in 1.2).

    Args:
        keys: int64 (n,), small non-negative keys (node ids) in appearance order.

    Returns:
        ``(key, count)`` pairs in that order.
    """
    table = _KhashInt64(len(keys))
    counts: dict[int, int] = {}
    for key in keys.tolist():
        if key not in counts:
            table.put(key)
            counts[key] = 0
        counts[key] += 1
    bucket_order = table.keys_in_bucket_order()
    values = np.array([counts[k] for k in bucket_order], dtype=np.int64)
    ascending = np.argsort(values, kind="stable")[::-1]
    return [(bucket_order[i], int(values[i])) for i in ascending.tolist()]


class _KhashInt64:
    """Minimal model of pandas 1.1's khash int64 set: insertion, growth and bucket order."""

    def __init__(self, size_hint: int) -> None:
        self.slots: list[int | None] = []
        self.occupied = 0
        self._resize(max(size_hint, 1), [])

    @staticmethod
    def _hash(key: int) -> int:
        return ((key >> 33) ^ key ^ (key << 11)) & 0xFFFFFFFF

    def _resize(self, wanted: int, existing: list[int]) -> None:
        buckets = 1 << max(wanted - 1, 0).bit_length()
        buckets = max(buckets, 4)
        self.slots = [None] * buckets
        self.upper_bound = int(buckets * 0.77 + 0.5)
        self.occupied = 0
        for key in existing:
            self._insert(key)

    def _insert(self, key: int) -> None:
        mask = len(self.slots) - 1
        hashed = self._hash(key)
        slot = hashed & mask
        step = (((hashed >> 3) ^ (hashed << 3)) | 1) & mask
        while self.slots[slot] is not None:
            slot = (slot + step) & mask
        self.slots[slot] = key
        self.occupied += 1

    def put(self, key: int) -> None:
        if self.occupied >= self.upper_bound:
            self._resize(len(self.slots) + 1, self.keys_in_bucket_order())
        self._insert(key)

    def keys_in_bucket_order(self) -> list[int]:
        return [k for k in self.slots if k is not None]
