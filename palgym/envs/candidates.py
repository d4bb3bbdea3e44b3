"""Placement candidates of one job: the GPU sets an agent chooses among.

For a job of class c needing N GPUs, on the currently free GPUs, with the class's slowdown tiers
v_0 < v_1 < ... (padded to ``max_tiers``), the candidates are, in this order (M = 2 T + 2):

- ``within[t]``: PAL's within-node rule restricted to GPUs with slowdown factor <= v_t;
- ``best[t]``: PM-First restricted to GPUs with slowdown factor <= v_t;
- ``packed``: the variability-blind Packed rule;
- ``random``: N free GPUs drawn uniformly (drawn only when chosen, so that the env consumes the
  placement RNG exactly like ``run_episode``).

PAL's choice is the first feasible entry of its cost order, (v, WITHIN) -> ``within[t]`` and
(v, ACROSS) -> ``best[t]`` (:func:`palgym.envs.heuristics.pal_choice`); PM-First is ``best`` at
the top tier. Source: PAL, SC24, Section IV.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from palgym.envs import kernel, obs_kernel
from palgym.envs.actions import ActionCodec
from palgym.envs.features import CANDIDATE, LOCALITY_MAX, SLOWDOWN_MAX
from palgym.envs.kernel_args import BufferArgs, CandidateIndex, TableArgs
from palgym.policies.allocation import packed_allocation
from palgym.policies.pal import within_node_allocation
from palgym.policies.pm_first import pm_first_allocation
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.config import LocalityRule
from palgym.sim.engine import Simulator
from palgym.sim.types import NUM_PERF_CLASSES, BoolArray, FloatArray, IntArray


@dataclass(frozen=True)
class JobCandidates:
    """The M candidates of one job: ``sets[m]`` is int64 (N,) GPU ids or None (infeasible).

    The Random candidate's set is always None here (drawn at decision time); ``random_feasible``
    tells whether it can be drawn. The Random candidate is the last one (the codec's order).
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
    codec: ActionCodec,
    packed_strict_total: bool = False,
) -> JobCandidates:
    """Compute the candidates of ``job`` on the free GPUs (see module docstring).

    Args:
        sim: the engine (read only).
        job: job index.
        free: bool (G,) free GPUs.
        factors: slowdown factors.
        codec: the action codec (T tiers per class, the candidates' order).
        packed_strict_total: the Packed candidate's strict-total variant (artifact
            Packed-Sticky quirk).
    """
    perf_class = int(sim.jobs.perf_class[job])
    num_gpus = int(sim.jobs.num_gpus[job])
    slowdown = factors.sf[perf_class]
    tier = factors.labels[perf_class]
    tiers = factors.tiers[perf_class]
    max_tiers = codec.max_tiers
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
    sets: list[IntArray | None] = [None] * codec.num_candidates
    for t in range(max_tiers):
        sets[codec.within(t)], sets[codec.best(t)] = within[t], best[t]
    sets[codec.PACKED] = packed_allocation(
        free, num_gpus, sim.cluster.gpus_per_node, packed_strict_total
    )
    return JobCandidates(job=job, sets=tuple(sets), random_feasible=int(free.sum()) >= num_gpus)


SlotRows = tuple[IntArray, np.ndarray]
"""Per-slot rows of the kernel's buffers: (``shape_of_slot``, ``keeps``)."""
ShapeRows = tuple[IntArray, IntArray, BoolArray, np.ndarray]
"""Per-shape rows of the kernel's buffers: (``shape_gpus``, ``sets``, ``feasible``,
``features``)."""


@dataclass(frozen=True)
class KernelBuffers:
    """Output buffers of the compiled kernel, reused every decision (see
    :func:`palgym.envs.kernel.window_candidates`); sized for K slots, M candidates and the
    trace's widest job."""

    shape_of_slot: IntArray
    shape_gpus: IntArray
    sets: IntArray
    feasible: BoolArray
    features: np.ndarray
    keeps: np.ndarray

    @classmethod
    def allocate(cls, codec: ActionCodec, widest: int) -> KernelBuffers:
        """Buffers for the codec's K slots and M candidates and jobs of <= ``widest`` GPUs."""
        num_slots, size = codec.num_slots, codec.num_candidates
        return cls(
            shape_of_slot=np.zeros(num_slots, np.int64),
            shape_gpus=np.zeros(num_slots, np.int64),
            sets=np.full((num_slots, size - 1, max(widest, 1)), -1, np.int64),
            feasible=np.zeros((num_slots, size), bool),
            features=np.zeros((num_slots, size, len(CANDIDATE)), np.float32),
            keeps=np.zeros((num_slots, size), np.float32),
        )

    def __getstate__(self) -> dict[str, object]:
        # without the views of ``prefixes``: a copy (deepcopy, pickle) would not keep them as
        # views of its buffers; the copy makes its own
        return {k: v for k, v in self.__dict__.items() if k != "prefixes"}

    @functools.cached_property
    def prefixes(self) -> tuple[tuple[SlotRows, ...], tuple[ShapeRows, ...]]:
        """The buffers' leading rows as views, made once: ``by_slots[n]`` is
        (``shape_of_slot[:n]``, ``keeps[:n]``) and ``by_shapes[s]`` is (``shape_gpus[:s]``,
        ``sets[:s]``, ``feasible[:s]``, ``features[:s]``), for n, s in [0, K]: what a decision
        of n window slots and s shapes hands out (:class:`WindowCandidates`), without slicing
        per decision."""
        rows = range(self.shape_of_slot.size + 1)
        by_slots = tuple((self.shape_of_slot[:n], self.keeps[:n]) for n in rows)
        by_shapes = tuple((self.shape_gpus[:s], self.sets[:s], self.feasible[:s],
                           self.features[:s]) for s in rows)
        return by_slots, by_shapes


@dataclass(frozen=True)
class EpisodeTables:
    """Per-episode constants of the compiled candidate kernel (:mod:`palgym.envs.kernel`).

    Attributes:
        sf: float64 (C, G) slowdown factors. rank: int64 (C, G) position of ``sf`` in the
        class's tiers. labels: int64 (C, G) k-means labels. tiers: float64 (C, T) ascending,
        padded with inf. num_tiers: int64 (C,). lf_by_class: float64 (C,) locality penalty.
        larger_rule: the penalty is paid by jobs larger than a node. gpus_per_node: G_n.
        codec: the action codec (K, T, M and the candidates' order). strict_total: Packed's
        strict-total quirk. buffers: the kernel's output buffers.
    """

    sf: FloatArray
    rank: IntArray
    labels: IntArray
    tiers: FloatArray
    num_tiers: IntArray
    lf_by_class: FloatArray
    larger_rule: bool
    gpus_per_node: int
    codec: ActionCodec
    strict_total: bool
    buffers: KernelBuffers

    @property
    def max_tiers(self) -> int:
        """T, tiers per class."""
        return self.codec.max_tiers

    @functools.cached_property
    def kernel_args(self) -> tuple[TableArgs, CandidateIndex, BufferArgs]:
        """The records of :func:`palgym.envs.obs_kernel.decision` these tables fill (the
        tables, the codec's candidate indices and M, the buffers); built once per tables (a
        refit builds new tables)."""
        codec, out = self.codec, self.buffers
        return (
            TableArgs(self.sf, self.rank, self.labels, self.tiers, self.num_tiers,
                      codec.max_tiers, self.gpus_per_node, self.strict_total, self.lf_by_class,
                      self.larger_rule),
            CandidateIndex(codec.best(0), codec.PACKED, codec.RANDOM, codec.num_candidates),
            BufferArgs(out.shape_of_slot, out.shape_gpus, out.sets, out.feasible, out.features,
                       out.keeps),
        )

    @classmethod
    def build(
        cls,
        sim: Simulator,
        factors: SlowdownFactors,
        codec: ActionCodec,
        strict_total: bool,
    ) -> EpisodeTables:
        """Tables for ``sim``'s episode with ``factors`` (at most T tiers a class) and the
        codec's window of K jobs."""
        config = sim.config
        max_tiers = codec.max_tiers
        tiers = np.full((NUM_PERF_CLASSES, max_tiers), np.inf)
        rank = np.zeros(factors.sf.shape, np.int64)
        for c, values in enumerate(factors.tiers):
            tiers[c, : values.size] = values
            rank[c] = np.searchsorted(values, factors.sf[c])
        by_class = config.locality_penalty_by_class
        lf = [by_class[c] if by_class is not None else config.locality_penalty
              for c in range(NUM_PERF_CLASSES)]
        return cls(
            sf=np.ascontiguousarray(factors.sf, np.float64), rank=rank,
            labels=np.ascontiguousarray(factors.labels, np.int64), tiers=tiers,
            num_tiers=np.array([t.size for t in factors.tiers], np.int64),
            lf_by_class=np.array(lf, np.float64),
            larger_rule=config.locality_rule is LocalityRule.LARGER_THAN_NODE,
            gpus_per_node=sim.cluster.gpus_per_node, codec=codec, strict_total=strict_total,
            buffers=KernelBuffers.allocate(codec, int(sim.jobs.num_gpus.max(initial=1))),
        )


@dataclass(slots=True)
class WindowCandidates:
    """The candidates of every job of the window, grouped by shape (perf class, N).

    Attributes:
        jobs: int64 (K',) window jobs, slot order.
        shape_of_slot: int64 (K',) the shape row of each slot.
        shape_gpus: int64 (S,) N of each shape.
        sets: int64 (S, M - 1, N_max) candidate GPU sets (ascending ids; -1 padded; the Random
            candidate is drawn when taken).
        feasible: bool (S, M).
        features: float32 (S, M, F_c) the set features of every candidate
            (:class:`palgym.envs.features.CandidateFeatures`; ``keeps_gpus`` is 0 here).
        keeps: float32 (K', M) the ``keeps_gpus`` feature of every slot's candidates.
    """

    jobs: IntArray
    shape_of_slot: IntArray
    shape_gpus: IntArray
    sets: IntArray
    feasible: BoolArray
    features: np.ndarray
    keeps: np.ndarray

    def gpus(self, slot: int, candidate: int) -> IntArray:
        """int64 (N,): the GPU set of a deterministic candidate (must be feasible)."""
        shape = self.shape_of_slot.item(slot)
        return self.sets[shape, candidate, : self.shape_gpus.item(shape)].copy()

    def slot_feasible(self) -> BoolArray:
        """bool (K', M): the feasibility of every slot's candidates."""
        return self.feasible[self.shape_of_slot]


def window_candidates(
    sim: Simulator,
    window: list[int],
    free: BoolArray,
    tables: EpisodeTables,
    factors: SlowdownFactors,
    compiled: bool,
) -> WindowCandidates:
    """The candidates of the window's jobs on the free GPUs.

    Args:
        sim: the engine (read only).
        window: the window's jobs, slot order.
        free: bool (G,) free GPUs of the round's tentative allocation.
        tables: the episode tables.
        factors: the slowdown factors (the reference path's input).
        compiled: use the compiled kernel (else the policies' numpy functions).
    """
    jobs = np.asarray(window, dtype=np.int64)
    table = sim.jobs
    if compiled:
        out = tables.buffers
        codec = tables.codec
        num_shapes = kernel.window_candidates(
            free, jobs, table.perf_class, table.num_gpus, tables.sf, tables.rank, tables.labels,
            tables.tiers, tables.num_tiers, codec.max_tiers, tables.gpus_per_node,
            tables.strict_total, codec.best(0), codec.PACKED, codec.RANDOM,
            out.shape_of_slot, out.shape_gpus, out.sets, out.feasible,
        )
        obs_kernel.candidate_features(
            jobs, table.perf_class, tables.sf, tables.tiers, tables.gpus_per_node,
            tables.lf_by_class, tables.larger_rule, codec.best(0), codec.PACKED, codec.RANDOM,
            out.shape_of_slot, out.shape_gpus, num_shapes, out.sets, out.feasible, out.features,
        )
        shape_of_slot = out.shape_of_slot[: jobs.size]
        shape_gpus = out.shape_gpus[:num_shapes]
        sets = out.sets[:num_shapes]
        feasible = out.feasible[:num_shapes]
        obs_kernel.keeps_gpus(sim.job_of_gpu, jobs, shape_of_slot, shape_gpus, sets, feasible,
                          out.keeps)
        return WindowCandidates(jobs, shape_of_slot, shape_gpus, sets, feasible,
                                out.features[:num_shapes], out.keeps[: jobs.size])
    shape_of_slot, shape_gpus = _shapes(table.perf_class[jobs], table.num_gpus[jobs])
    sets, feasible, features = _reference_candidates(
        sim, jobs, shape_of_slot, shape_gpus, free, tables, factors
    )
    keeps = _reference_keeps(sim, jobs, shape_of_slot, shape_gpus, sets, feasible)
    return WindowCandidates(jobs, shape_of_slot, shape_gpus, sets, feasible, features, keeps)


def _shapes(perf_class: IntArray, num_gpus: IntArray) -> tuple[IntArray, IntArray]:
    """Shape row of every slot and N of every shape, shapes in order of first slot."""
    index: dict[tuple[int, int], int] = {}
    shape_of_slot = [
        index.setdefault(shape, len(index))
        for shape in zip(perf_class.tolist(), num_gpus.tolist(), strict=True)
    ]
    return (np.array(shape_of_slot, dtype=np.int64),
            np.array([n for _, n in index], dtype=np.int64))


def _reference_candidates(
    sim: Simulator,
    jobs: IntArray,
    shape_of_slot: IntArray,
    shape_gpus: IntArray,
    free: BoolArray,
    tables: EpisodeTables,
    factors: SlowdownFactors,
) -> tuple[IntArray, BoolArray, np.ndarray]:
    """:func:`kernel.window_candidates` computed with the policies' numpy functions."""
    num_shapes = shape_gpus.size
    codec = tables.codec
    size = codec.num_candidates
    widest = max(1, int(shape_gpus.max())) if num_shapes else 1
    sets = np.full((num_shapes, size - 1, widest), -1, np.int64)
    feasible = np.zeros((num_shapes, size), bool)
    features = np.zeros((num_shapes, size, len(CANDIDATE)), np.float32)
    first_slot = np.zeros(num_shapes, np.int64)
    first_slot[shape_of_slot[::-1]] = np.arange(shape_of_slot.size)[::-1]
    for s in range(num_shapes):
        job = int(jobs[first_slot[s]])
        cands = job_candidates(sim, job, free, factors, codec, tables.strict_total)
        feasible[s] = cands.feasible()
        perf_class = int(sim.jobs.perf_class[job])
        num_gpus = int(shape_gpus[s])
        slowdown = factors.sf[perf_class]
        for m, gpus in enumerate(cands.sets):
            if gpus is None:
                continue
            sets[s, m, :num_gpus] = gpus
            factor = slowdown[gpus]
            worst = float(factor.max())
            nodes = sim.node_of_gpu[gpus]
            locality = sim.locality_penalty_of(perf_class, num_gpus, gpus)
            row = features[s, m]
            row[CANDIDATE.feasible] = 1.0
            row[CANDIDATE.max_slowdown] = min(worst / SLOWDOWN_MAX, 1.0)
            row[CANDIDATE.spans_nodes] = float(nodes[0] != nodes[-1])
            row[CANDIDATE.locality_penalty] = min((locality - 1.0) / (LOCALITY_MAX - 1.0), 1.0)
            row[CANDIDATE.predicted_speed] = min(0.5 / (worst * locality), 1.0)
            row[CANDIDATE.best_tier_frac] = (
                np.count_nonzero(factor <= tables.tiers[perf_class, 0]) / num_gpus
            )
        features[s, codec.RANDOM, CANDIDATE.feasible] = float(cands.random_feasible)
    return sets, feasible, features


def _reference_keeps(
    sim: Simulator,
    jobs: IntArray,
    shape_of_slot: IntArray,
    shape_gpus: IntArray,
    sets: IntArray,
    feasible: BoolArray,
) -> np.ndarray:
    """:func:`kernel.keeps_gpus` in numpy."""
    keeps = np.zeros((jobs.size, feasible.shape[1]), np.float32)
    for slot, job in enumerate(jobs.tolist()):
        held = np.flatnonzero(sim.job_of_gpu == job)
        shape = int(shape_of_slot[slot])
        for m in range(sets.shape[1]):
            if feasible[shape, m]:
                keeps[slot, m] = np.array_equal(held, sets[shape, m, : int(shape_gpus[shape])])
    return keeps
