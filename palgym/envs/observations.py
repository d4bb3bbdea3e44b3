"""Observation builder: a fixed-shape, float32, [0, 1]-bounded ``Dict`` of 1-D ``Box`` es.

Every key is flat (SB3's ``MultiInputPolicy`` expects 1-D vectors); ``logical_shapes`` gives the
shape to reshape to:

- ``jobs`` (K x F_j,) = (K, F_j): one row per window slot
  (:class:`~palgym.envs.features.JobFeatures`).
- ``candidates`` (K x M x F_c,) = (K, M, F_c): one row per placement candidate; candidate
  (k, m) is the action ``codec.encode(k, m)``
  (:class:`~palgym.envs.features.CandidateFeatures`).
- ``cluster`` (F_k,): free GPUs per (slowdown tier x class), a histogram of free GPUs per node
  (n = 0 .. G_n, or 0 .. ``max_gpus_per_node`` padded with zeros), queue and time summaries
  (see :meth:`ObservationBuilder.cluster_feature_names`); in a work-conserving env
  (``work_conserving=True``) then the round's EASY reservation
  (:data:`RESERVATION_FEATURES`).
- ``gpus`` (G x F_g,) = (G, F_g), only with ``observed_rates``: one row per GPU, the belief and
  the observed rates (:class:`~palgym.envs.features.GpuFeatures`, :mod:`palgym.envs.observed`).

Shapes depend on K (slots), T (tiers), M = 2T + 2 and G_n (GPUs per node, or
``max_gpus_per_node`` when given) only (``gpus``: on G too), never on the trace. Times are
log-scaled against a horizon of :data:`~palgym.envs.features.TIME_HORIZON_S` and clipped.
This module is the numpy (reference) builder; the compiled one is
:func:`palgym.envs.obs_kernel.decision`. Every feature is documented in ``docs/ENV.md``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from palgym.envs.actions import ActionCodec
from palgym.envs.candidates import EpisodeTables, WindowCandidates
from palgym.envs.decisions import DecisionRound
from palgym.envs.features import (
    CANDIDATE,
    CANDIDATE_FEATURES,
    GPU_FEATURES,
    JOB,
    JOB_FEATURES,
    LOG_HORIZON,
    TIME_HORIZON_S,
    log_time,
)
from palgym.envs.observed import ObservedRates, gpu_rows
from palgym.errors import ConfigError
from palgym.policies.durations import (
    CLAIRVOYANT,
    DurationKnowledge,
    Durations,
    remaining_time_s,
)
from palgym.sim.config import RemainingTime
from palgym.sim.engine import Simulator
from palgym.sim.types import NUM_PERF_CLASSES, PERF_CLASS_NAMES, JobStatus

__all__ = ["CANDIDATE_FEATURES", "JOB_FEATURES", "RESERVATION_FEATURES", "TIME_HORIZON_S",
           "ObservationBuilder"]

RESERVATION_FEATURES: tuple[str, ...] = ("reserved", "log_reserve_shadow_time",
                                         "reserve_extra_frac")
"""The ``cluster`` row's last entries in a work-conserving env (:mod:`palgym.envs.conserving`),
all 0 while the round has no reservation: 1 once RESERVE was taken this round; the
reservation's shadow time (seconds from now until the head job's GPUs are free,
:class:`palgym.policies.backfill.Reservation` ``shadow_s``) on the log scale of the other times
(:func:`palgym.envs.features.log_time`; 1 for a shadow time of inf); its extra GPUs (those free
at the shadow time beyond the head's need, less those taken since by backfilled jobs that
outlast it) / G."""


def check_node_room(gpus_per_node: int, max_gpus_per_node: int | None) -> int:
    """The node histogram's largest n: ``max_gpus_per_node`` if it holds G_n, else G_n when
    None.

    Raises:
        ConfigError: ``max_gpus_per_node`` is not an int >= 1, or is below G_n (naming both).
    """
    if max_gpus_per_node is None:
        return gpus_per_node
    if (isinstance(max_gpus_per_node, bool) or not isinstance(max_gpus_per_node, int)
            or max_gpus_per_node < 1):
        raise ConfigError(f"max_gpus_per_node must be an int >= 1 or None, got "
                          f"{max_gpus_per_node!r}")
    if gpus_per_node > max_gpus_per_node:
        raise ConfigError(
            f"the cluster has {gpus_per_node} GPUs per node, more than max_gpus_per_node="
            f"{max_gpus_per_node} (the observation's nodes_with_{{n}}_free entries go up to "
            f"n = {max_gpus_per_node}): use max_gpus_per_node >= {gpus_per_node}, a layout of "
            "its own (docs/ENV.md \"Cluster-independent layout\")")
    return max_gpus_per_node


def _log_time(seconds: np.ndarray | float) -> np.ndarray:
    return np.clip(np.log1p(np.maximum(seconds, 0.0)) / LOG_HORIZON, 0.0, 1.0)


class ObservationBuilder:
    """Builds observations for a cluster of ``gpus_per_node`` GPUs per node.

    Args:
        codec: the action codec (K slots, T tiers, M candidates).
        gpus_per_node: G_n.
        num_gpus: G, to add the ``gpus`` key (``observed_rates``); None: no ``gpus`` key.
        max_gpus_per_node: the node histogram's largest n (``nodes_with_{n}_free``, n = 0 ..
            it), >= G_n, the entries past G_n zero; None: G_n (the ``-v0`` layout).
        reservation: end the ``cluster`` row with :data:`RESERVATION_FEATURES` (a
            work-conserving env).

    Raises:
        ConfigError: ``max_gpus_per_node`` is not an int >= 1 or is below G_n.

    Attributes:
        durations: what the scheduler knows of job durations in the current episode (set at
            each reset): ``log_remaining_ideal_time`` is the true remaining work when
            clairvoyant, the user estimate's when noisy, and 0 when unknown.
        durations_known, clairvoyant: ``durations.known`` and whether the scheduler's total
            iterations are the job table's own column, read once per episode (an enum
            member's lookup costs about a microsecond, every decision otherwise).
        rates: the current episode's observed rates (``gpus`` key; set at each reset).
        believed: float64 (C, G), the current episode's belief values (``gpus`` key).
    """

    def __init__(self, codec: ActionCodec, gpus_per_node: int,
                 num_gpus: int | None = None, max_gpus_per_node: int | None = None,
                 reservation: bool = False) -> None:
        self.durations = CLAIRVOYANT
        self.rates: ObservedRates | None = None
        self.believed = np.ones((NUM_PERF_CLASSES, num_gpus or 0))
        self._gpus_round: DecisionRound | None = None
        self._gpus = np.zeros(0, np.float32)
        num_slots = codec.num_slots
        self.codec = codec
        self.num_slots = num_slots
        self.num_actions = codec.n
        self.max_tiers = codec.max_tiers
        self.num_candidates = codec.num_candidates
        self.gpus_per_node = gpus_per_node
        self.node_bins = check_node_room(gpus_per_node, max_gpus_per_node) + 1
        """Entries of the node histogram: ``max_gpus_per_node`` (or G_n) + 1."""
        self.reservation = reservation
        self.num_reservation = len(RESERVATION_FEATURES) if reservation else 0
        """The ``cluster`` row's trailing reservation entries (0 without ``reservation``)."""
        self.logical_shapes: dict[str, tuple[int, ...]] = {
            "jobs": (num_slots, len(JOB_FEATURES)),
            "candidates": (num_slots, self.num_candidates, len(CANDIDATE_FEATURES)),
            "cluster": (len(self.cluster_feature_names()),),
        }
        if num_gpus is not None:
            self.logical_shapes["gpus"] = (num_gpus, len(GPU_FEATURES))
        self._rows_round: DecisionRound | None = None
        self._positions = (np.arange(num_slots) / num_slots).astype(np.float32)
        self._row_of: dict[int, int] = {}
        self._rows = np.zeros((0, len(JOB_FEATURES)), np.float32)
        self._constants_round: DecisionRound | None = None
        self._constants = (0.0, 0.0)
        sizes = [int(np.prod(self.logical_shapes[key])) for key in ("jobs", "candidates",
                                                                    "cluster")]
        self.offsets = (sizes[0], sizes[0] + sizes[1], sum(sizes))
        """End of ``jobs``, end of ``candidates`` and total size of those three keys in one
        flat buffer (``gpus`` is its own array: :meth:`gpu_observation`); the last
        :attr:`num_reservation` entries are the reservation's."""
        self.space = spaces.Dict({
            key: spaces.Box(0.0, 1.0, (int(np.prod(shape)),), np.float32)
            for key, shape in self.logical_shapes.items()
        })

    @property
    def durations(self) -> Durations:
        """What the scheduler knows of job durations (see the class docstring)."""
        return self._durations

    @durations.setter
    def durations(self, durations: Durations) -> None:
        self._durations = durations
        self.durations_known = durations.known
        self.clairvoyant = durations.knowledge is DurationKnowledge.CLAIRVOYANT

    def cluster_feature_names(self) -> tuple[str, ...]:
        """Names of the ``cluster`` vector's entries."""
        tiers = tuple(
            f"free_tier{t}_class{c}" for c in PERF_CLASS_NAMES for t in range(self.max_tiers)
        )
        histogram = tuple(f"nodes_with_{n}_free" for n in range(self.node_bins))
        return (*tiers, *histogram, "free_frac", "pending_frac", "queued_frac", "log_time",
                *(RESERVATION_FEATURES if self.reservation else ()))

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
        names = {"jobs": jobs, "candidates": candidates, "cluster": self.cluster_feature_names()}
        if "gpus" in self.logical_shapes:
            names["gpus"] = tuple(f"gpu{g}.{f}" for g in range(self.logical_shapes["gpus"][0])
                                  for f in GPU_FEATURES)
        return names

    def gpu_observation(self, sim: Simulator, decision: DecisionRound) -> np.ndarray | None:
        """The flat, read-only float32 (G x F_g,) ``gpus`` key of the open round (computed
        once per round: :func:`palgym.envs.observed.gpu_rows`), or None without the key."""
        if self.rates is None:
            return None
        if self._gpus_round is not decision:
            self._gpus_round = decision
            self._gpus = gpu_rows(self.believed, self.rates, sim.round_index).ravel()
        gpus = self._gpus.copy()  # each step's observation its own array, as the other keys
        gpus.setflags(write=False)
        return gpus

    def empty(self) -> dict[str, np.ndarray]:
        """An all-zero observation (e.g. after the episode ended)."""
        return {
            key: np.zeros(space.shape or (), np.float32)
            for key, space in self.space.spaces.items()
        }

    def round_constants(self, sim: Simulator, decision: DecisionRound) -> tuple[float, float]:
        """queued / 4K and log time, the cluster row's last two entries: constant during a
        round, computed once per round."""
        if self._constants_round is not decision:
            queued = min(decision.num_active / (4.0 * self.num_slots), 1.0)
            self._constants_round = decision
            self._constants = (queued, log_time(sim.now_s))
        return self._constants

    def round_features(self, sim: Simulator, decision: DecisionRound) -> tuple[float, ...]:
        """pending / K, queued / 4K and log time: the cluster row's last three entries."""
        return (min(len(decision.pending) / self.num_slots, 1.0),
                *self.round_constants(sim, decision))

    def reservation_features(self, decision: DecisionRound, num_gpus: int) -> tuple[float, ...]:
        """The cluster row's :data:`RESERVATION_FEATURES` of the open round (all 0 without a
        reservation; () without ``reservation``), in float64, the same in both builders.

        Args:
            decision: the open round.
            num_gpus: G.
        """
        if not self.reservation:
            return ()
        reservation = decision.reservation
        if reservation is None:
            return (0.0, 0.0, 0.0)
        return (1.0, log_time(reservation.shadow_s), min(reservation.extra / num_gpus, 1.0))

    def build(
        self,
        sim: Simulator,
        decision: DecisionRound,
        candidates: WindowCandidates,
        tables: EpisodeTables,
    ) -> dict[str, np.ndarray]:
        """The observation of the current decision in numpy (the reference of the compiled
        :func:`palgym.envs.obs_kernel.decision`; fresh arrays every call).

        Args:
            sim: the engine (read only).
            decision: the open round.
            candidates: the window's candidates.
            tables: the episode tables.
        """
        obs = self.empty()
        num_window = candidates.jobs.size
        if num_window:
            job_rows = obs["jobs"].reshape(self.logical_shapes["jobs"])
            job_rows[:num_window] = self._job_rows(sim, decision, candidates.jobs)
            job_rows[:num_window, JOB.queue_position] = self._positions[:num_window]
            if decision.sticky:
                job_rows[1:num_window, JOB.selectable] = 0.0
            per_slot = obs["candidates"].reshape(self.logical_shapes["candidates"])
            per_slot[:num_window] = candidates.features[candidates.shape_of_slot]
            per_slot[:num_window, :, CANDIDATE.keeps_gpus] = candidates.keeps
        obs["cluster"][:] = self._cluster_row(sim, decision, tables)
        gpus = self.gpu_observation(sim, decision)
        if gpus is not None:
            obs["gpus"][:] = gpus
        return obs

    def _job_rows(self, sim: Simulator, decision: DecisionRound, window: np.ndarray) -> np.ndarray:
        """Rows of the window's jobs. A job's row is constant during a round (the engine only
        moves at round ends), so rows are computed once per job per round."""
        if self._rows_round is not decision:
            self._rows_round = decision
            self._row_of = {}
            self._rows = np.zeros((0, len(JOB_FEATURES)), np.float32)
        row_of = self._row_of
        window_list = window.tolist()
        missing = [job for job in window_list if job not in row_of]
        if missing:
            fresh = self._new_job_rows(sim, np.asarray(missing, dtype=np.int64))
            base = len(row_of)
            row_of.update((job, base + i) for i, job in enumerate(missing))
            self._rows = np.concatenate([self._rows, fresh])
        return self._rows[[row_of[job] for job in window_list]]

    def _new_job_rows(self, sim: Simulator, window: np.ndarray) -> np.ndarray:
        jobs = sim.jobs
        rows = np.zeros((window.size, len(JOB_FEATURES)), np.float32)
        rows[:, JOB.present] = 1.0
        rows[:, JOB.selectable] = 1.0  # the caller clears it for sticky slots > 0
        rows[:, JOB.num_gpus_frac] = np.minimum(jobs.num_gpus[window] / sim.cluster.num_gpus, 1.0)
        rows[np.arange(window.size), JOB.class_A + jobs.perf_class[window]] = 1.0
        if self.durations.known:  # unknown: the column stays 0
            remaining = remaining_time_s(sim.view(), window, self.durations, RemainingTime.IDEAL)
            rows[:, JOB.log_remaining_ideal_time] = _log_time(remaining)
        rows[:, JOB.log_waiting_time] = _log_time(sim.now_s - jobs.submit_time_s[window])
        rows[:, JOB.log_attained_service] = _log_time(jobs.attained_service_s[window])
        rows[:, JOB.was_running] = jobs.status[window] == JobStatus.RUNNING
        return rows

    def _cluster_row(
        self, sim: Simulator, decision: DecisionRound, tables: EpisodeTables
    ) -> np.ndarray:
        free = decision.free
        num_gpus = free.size
        row = np.empty(self.logical_shapes["cluster"][0], np.float32)
        tiers = np.zeros((NUM_PERF_CLASSES, self.max_tiers))
        for c in range(NUM_PERF_CLASSES):
            tiers[c] = np.bincount(tables.rank[c][free], minlength=self.max_tiers)
        per_node = free.reshape(-1, self.gpus_per_node).sum(axis=1)
        histogram = np.bincount(per_node, minlength=self.node_bins)
        row[: tiers.size] = (tiers / num_gpus).ravel()
        row[tiers.size : tiers.size + histogram.size] = histogram / per_node.size
        end = row.size - self.num_reservation
        row[end - 4] = np.count_nonzero(free) / num_gpus
        row[end - 3 : end] = self.round_features(sim, decision)
        row[end:] = self.reservation_features(decision, num_gpus)
        return row
