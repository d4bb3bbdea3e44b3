"""Observation builder: a fixed-shape, float32, [0, 1]-bounded ``Dict`` of 1-D ``Box`` es.

Every key is flat (SB3's ``MultiInputPolicy`` expects 1-D vectors); ``logical_shapes`` gives the
shape to reshape to:

- ``jobs`` (K x F_j,) = (K, F_j): one row per window slot (see :data:`JOB_FEATURES`).
- ``candidates`` (K x M x F_c,) = (K, M, F_c): one row per placement candidate; candidate
  (k, m) is the action ``k * M + m`` (see :data:`CANDIDATE_FEATURES`).
- ``cluster`` (F_k,): free GPUs per (slowdown tier x class), a histogram of free GPUs per node,
  queue and time summaries (see :meth:`ObservationBuilder.cluster_feature_names`).

Shapes depend on K (slots), T (tiers), M = 2T + 2 and G_n (GPUs per node) only, never on the
trace. Times are log-scaled against a horizon of :data:`TIME_HORIZON_S` and clipped.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from palgym.envs.candidates import JobCandidates
from palgym.envs.decisions import DecisionRound
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.engine import Simulator
from palgym.sim.types import NUM_PERF_CLASSES, PERF_CLASS_NAMES, JobStatus

TIME_HORIZON_S: float = 365 * 24 * 3600.0
"""Time that maps to 1.0 on the log scale (a year: even 30-day jobs stay inside the box)."""
SLOWDOWN_MAX: float = 4.0
LOCALITY_MAX: float = 4.0

JOB_FEATURES: tuple[str, ...] = (
    "present", "selectable", "num_gpus_frac",
    *(f"class_{c}" for c in PERF_CLASS_NAMES),
    "log_remaining_ideal_time", "log_waiting_time", "log_attained_service", "was_running",
)
CANDIDATE_FEATURES: tuple[str, ...] = (
    "feasible", "max_slowdown", "spans_nodes", "locality_penalty", "predicted_speed",
    "best_tier_frac", "keeps_gpus",
)
_LOG_HORIZON = float(np.log1p(TIME_HORIZON_S))


def _log_time(seconds: np.ndarray | float) -> np.ndarray:
    return np.clip(np.log1p(np.maximum(seconds, 0.0)) / _LOG_HORIZON, 0.0, 1.0)


class ObservationBuilder:
    """Builds observations for a cluster of ``gpus_per_node`` GPUs per node.

    Args:
        num_slots: K.
        max_tiers: T.
        gpus_per_node: G_n.
    """

    def __init__(self, num_slots: int, max_tiers: int, gpus_per_node: int) -> None:
        self.num_slots = num_slots
        self.max_tiers = max_tiers
        self.num_candidates = 2 * max_tiers + 2
        self.gpus_per_node = gpus_per_node
        self.logical_shapes: dict[str, tuple[int, ...]] = {
            "jobs": (num_slots, len(JOB_FEATURES)),
            "candidates": (num_slots, self.num_candidates, len(CANDIDATE_FEATURES)),
            "cluster": (len(self.cluster_feature_names()),),
        }
        self.space = spaces.Dict({
            key: spaces.Box(0.0, 1.0, (int(np.prod(shape)),), np.float32)
            for key, shape in self.logical_shapes.items()
        })

    def cluster_feature_names(self) -> tuple[str, ...]:
        """Names of the ``cluster`` vector's entries."""
        tiers = tuple(
            f"free_tier{t}_class{c}" for c in PERF_CLASS_NAMES for t in range(self.max_tiers)
        )
        histogram = tuple(f"nodes_with_{n}_free" for n in range(self.gpus_per_node + 1))
        return (*tiers, *histogram, "free_frac", "pending_frac", "queued_frac", "log_time")

    def feature_names(self) -> dict[str, tuple[str, ...]]:
        """Name of every entry of every (flat) key, e.g. ``slot3.log_waiting_time`` or
        ``slot0.cand5.feasible``."""
        jobs = tuple(f"slot{k}.{f}" for k in range(self.num_slots) for f in JOB_FEATURES)
        candidates = tuple(
            f"slot{k}.cand{m}.{f}"
            for k in range(self.num_slots)
            for m in range(self.num_candidates)
            for f in CANDIDATE_FEATURES
        )
        return {"jobs": jobs, "candidates": candidates, "cluster": self.cluster_feature_names()}

    def empty(self) -> dict[str, np.ndarray]:
        """An all-zero observation (e.g. after the episode ended)."""
        return {
            key: np.zeros(space.shape or (), np.float32)
            for key, space in self.space.spaces.items()
        }

    def build(
        self,
        sim: Simulator,
        decision: DecisionRound,
        candidates: list[JobCandidates],
        factors: SlowdownFactors,
    ) -> dict[str, np.ndarray]:
        """The observation of the current decision (fresh arrays every call)."""
        obs = self.empty()
        per_slot = obs["candidates"].reshape(self.logical_shapes["candidates"])
        if candidates:
            window = np.array([c.job for c in candidates], dtype=np.int64)
            job_rows = obs["jobs"].reshape(self.logical_shapes["jobs"])
            job_rows[: window.size] = self._job_rows(sim, decision, window)
            rows_of: dict[int, np.ndarray] = {}
            for slot, cands in enumerate(candidates):
                key = id(cands.sets)
                if key not in rows_of:
                    rows_of[key] = self._candidate_rows(sim, cands, factors)
                rows = rows_of[key]
                per_slot[slot] = rows
                if cands.sets and sim.jobs.status[cands.job] == JobStatus.RUNNING:
                    per_slot[slot, :, -1] = self._keeps_gpus(sim, cands)
        obs["cluster"][:] = self._cluster_row(sim, decision, factors)
        return obs

    def _job_rows(self, sim: Simulator, decision: DecisionRound, window: np.ndarray) -> np.ndarray:
        jobs = sim.jobs
        rows = np.zeros((window.size, len(JOB_FEATURES)), np.float64)
        rows[:, 0] = 1.0
        rows[:, 1] = [decision.selectable(slot) for slot in range(window.size)]
        rows[:, 2] = np.minimum(jobs.num_gpus[window] / sim.cluster.num_gpus, 1.0)
        rows[np.arange(window.size), 3 + jobs.perf_class[window]] = 1.0
        remaining = jobs.iteration_time_s[window] * np.maximum(
            jobs.total_iterations[window] - jobs.iterations_done[window], 0.0
        )
        rows[:, 7] = _log_time(remaining)
        rows[:, 8] = _log_time(sim.now_s - jobs.submit_time_s[window])
        rows[:, 9] = _log_time(jobs.attained_service_s[window])
        rows[:, 10] = jobs.status[window] == JobStatus.RUNNING
        return rows

    def _keeps_gpus(self, sim: Simulator, cands: JobCandidates) -> np.ndarray:
        held = np.flatnonzero(sim.job_of_gpu == cands.job)
        return np.array(
            [s is not None and np.array_equal(held, s) for s in cands.sets], dtype=np.float32
        )

    def _candidate_rows(
        self, sim: Simulator, cands: JobCandidates, factors: SlowdownFactors
    ) -> np.ndarray:
        """Features of every candidate set; ``keeps_gpus`` is filled in by the caller."""
        rows = np.zeros((self.num_candidates, len(CANDIDATE_FEATURES)), np.float32)
        perf_class = int(sim.jobs.perf_class[cands.job])
        slowdown = factors.sf[perf_class]
        best_tier = float(factors.tiers[perf_class][0])
        num_gpus = int(sim.jobs.num_gpus[cands.job])
        for m, gpus in enumerate(cands.sets):
            if gpus is None:
                continue
            factor = slowdown[gpus]
            worst = float(factor.max())
            nodes = sim.node_of_gpu[gpus]
            spans = bool(nodes[0] != nodes[-1])
            locality = sim.locality_penalty_of(perf_class, num_gpus, gpus)
            rows[m, :6] = (
                1.0, min(worst / SLOWDOWN_MAX, 1.0), float(spans),
                min((locality - 1.0) / (LOCALITY_MAX - 1.0), 1.0),
                min(0.5 / (worst * locality), 1.0),
                np.count_nonzero(factor <= best_tier) / num_gpus,
            )
        rows[-1, 0] = float(cands.random_feasible)
        return rows

    def _cluster_row(
        self, sim: Simulator, decision: DecisionRound, factors: SlowdownFactors
    ) -> np.ndarray:
        num_gpus = sim.cluster.num_gpus
        free = decision.free
        tiers = np.zeros((NUM_PERF_CLASSES, self.max_tiers))
        for c in range(NUM_PERF_CLASSES):
            rank = np.searchsorted(factors.tiers[c], factors.sf[c][free])
            counts = np.bincount(rank, minlength=self.max_tiers)[: self.max_tiers]
            tiers[c] = counts / num_gpus
        per_node = free.reshape(-1, sim.cluster.gpus_per_node).sum(axis=1)
        histogram = np.bincount(per_node, minlength=self.gpus_per_node + 1) / per_node.size
        queued = sim.active_jobs().size
        return np.concatenate([
            tiers.ravel(), histogram,
            [free.mean(), min(len(decision.pending) / self.num_slots, 1.0),
             min(queued / (4.0 * self.num_slots), 1.0), _log_time(sim.now_s)],
        ]).astype(np.float32)
