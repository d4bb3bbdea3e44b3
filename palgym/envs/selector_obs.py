"""The selector env's observation: a compact summary of the scheduling env's decision and,
per rule of the field, what that rule would do now.

Built in numpy from the base env's observation (``jobs``, ``candidates``, ``cluster``; their
layouts: :mod:`palgym.envs.features`) and the rules' actions, so every feature is one the
base env already computes (same normalisation: times on the log scale of
:data:`~palgym.envs.features.TIME_HORIZON_S`, GPU counts / G). The shapes depend on the number
of rules H only, never on the cluster, the window K or the tiers T:

- ``state`` (F_s,): :data:`STATE_FEATURES`;
- ``rules`` (H x F_r,) = (H, F_r): one row per rule, :data:`RULE_FEATURES`.

Every feature is documented in docs/ENV.md "The selector env".
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from palgym.envs.actions import ActionCodec
from palgym.envs.features import CANDIDATE, CLASS_COLUMNS, JOB
from palgym.sim.types import PERF_CLASS_NAMES, IntArray

STATE_FEATURES: tuple[str, ...] = (
    "free_frac", "pending_frac", "queued_frac", "log_time",
    *(f"free_best_class{c}" for c in PERF_CLASS_NAMES),
    "nodes_all_free_frac", "nodes_none_free_frac",
    "window_frac", "window_fits_frac",
    "head_num_gpus_frac", *(f"head_class_{c}" for c in PERF_CLASS_NAMES),
    "head_log_remaining_ideal_time", "head_log_waiting_time", "head_fits",
)
"""The ``state`` entries: the base ``cluster`` summary without its tier and node-size axes
(free GPUs, pending and queued jobs, time; free GPUs on each class's best tier; the share of
nodes wholly free and wholly busy), the window (share of the K slots holding a job, share of
those whose job fits now) and the head job (slot 0: GPU share, class, remaining time, waiting
time, whether it fits now)."""

RULE_FEATURES: tuple[str, ...] = (
    "ends_round", "num_gpus_frac", "log_remaining_ideal_time", "log_waiting_time",
    "was_running", "queue_position", "max_slowdown", "predicted_speed", "spans_nodes",
    "best_tier_frac", "keeps_gpus", "agree_frac",
)
"""A rule's row: whether its action ends the round; else its job's ``jobs`` features (GPU
share, remaining and waiting time, ran last round, window slot / K) and its candidate's
``candidates`` features (slowdown, predicted speed, spans nodes, best-tier share, keeps the
job's GPUs); and the share of the other rules whose action has the same effect (the same job
on the same GPU set, or "end round"; 1 with one rule)."""

_JOB_COLUMNS = (JOB.num_gpus_frac, JOB.log_remaining_ideal_time, JOB.log_waiting_time,
                JOB.was_running, JOB.queue_position)
_CANDIDATE_COLUMNS = (CANDIDATE.max_slowdown, CANDIDATE.predicted_speed, CANDIDATE.spans_nodes,
                      CANDIDATE.best_tier_frac, CANDIDATE.keeps_gpus)


class SelectorObservation:
    """Builds the selector's observation from the base env's.

    Args:
        codec: the base env's action codec (K slots, M candidates).
        cluster_names: the base ``cluster`` key's entry names
            (``ClusterEnv.feature_names["cluster"]``).
        rules: the field's rule names (H of them).

    Attributes:
        space: ``Dict(state=Box(0, 1, (F_s,)), rules=Box(0, 1, (H * F_r,)))``, float32.
        logical_shapes: ``{"state": (F_s,), "rules": (H, F_r)}``.
    """

    def __init__(self, codec: ActionCodec, cluster_names: tuple[str, ...],
                 rules: tuple[str, ...]) -> None:
        self.codec = codec
        self.rules = rules
        column = {name: i for i, name in enumerate(cluster_names)}
        nodes = [name for name in cluster_names if name.startswith("nodes_with_")]
        self._summary = np.array(
            [column[n] for n in ("free_frac", "pending_frac", "queued_frac", "log_time")]
            + [column[f"free_tier0_class{c}"] for c in PERF_CLASS_NAMES], np.int64)
        self._all_free, self._none_free = column[nodes[-1]], column[nodes[0]]
        self.logical_shapes: dict[str, tuple[int, ...]] = {
            "state": (len(STATE_FEATURES),), "rules": (len(rules), len(RULE_FEATURES))}
        self.space = spaces.Dict({
            key: spaces.Box(0.0, 1.0, (int(np.prod(shape)),), np.float32)
            for key, shape in self.logical_shapes.items()})

    def feature_names(self) -> dict[str, tuple[str, ...]]:
        """The name of every entry: ``state`` as :data:`STATE_FEATURES`, ``rules`` as
        ``RULE.FEATURE`` (e.g. ``pal+easy.ends_round``)."""
        return {"state": STATE_FEATURES,
                "rules": tuple(f"{r}.{f}" for r in self.rules for f in RULE_FEATURES)}

    def build(self, base: dict[str, np.ndarray], actions: IntArray, groups: IntArray
              ) -> dict[str, np.ndarray]:
        """The observation of a decision.

        Args:
            base: the base env's observation (flat float32 ``jobs`` (K * F_j,),
                ``candidates`` (K * M * F_c,), ``cluster`` (F_k,)).
            actions: int64 (H,), each rule's base action now (``END_ROUND`` or k * M + m).
            groups: int64 (H,), equal for rules whose actions have the same effect.

        Returns:
            ``{"state": float32 (F_s,), "rules": float32 (H * F_r,)}``, in [0, 1].
        """
        codec = self.codec
        jobs = base["jobs"].reshape(codec.num_slots, -1)
        candidates = base["candidates"].reshape(codec.num_slots, codec.num_candidates, -1)
        fits = candidates[:, :, CANDIDATE.feasible].max(axis=1) > 0.5
        present = jobs[:, JOB.present] > 0.5
        return {"state": self._state(base["cluster"], jobs, present, fits),
                "rules": self._rules(jobs, candidates, actions, groups).ravel()}

    def _state(self, cluster: np.ndarray, jobs: np.ndarray, present: np.ndarray,
               fits: np.ndarray) -> np.ndarray:
        num_present = int(np.count_nonzero(present))
        head = jobs[0]
        window = [num_present / present.size,
                  np.count_nonzero(fits & present) / num_present if num_present else 0.0]
        head_row = [head[JOB.num_gpus_frac], *head[list(CLASS_COLUMNS)],
                    head[JOB.log_remaining_ideal_time], head[JOB.log_waiting_time],
                    float(fits[0] and present[0])]
        return np.array([*cluster[self._summary], cluster[self._all_free],
                         cluster[self._none_free], *window, *head_row], np.float32)

    def _rules(self, jobs: np.ndarray, candidates: np.ndarray, actions: IntArray,
               groups: IntArray) -> np.ndarray:
        codec = self.codec
        rows = np.zeros((actions.size, len(RULE_FEATURES)), np.float32)
        ends = actions == codec.END_ROUND
        places = ~ends
        slots = actions[places] // codec.num_candidates
        chosen = actions[places] % codec.num_candidates
        rows[ends, 0] = 1.0
        rows[places, 1:6] = jobs[slots][:, list(_JOB_COLUMNS)]
        rows[places, 6:11] = candidates[slots, chosen][:, list(_CANDIDATE_COLUMNS)]
        same = (groups[:, None] == groups[None, :]).sum(axis=1) - 1
        rows[:, -1] = same / (actions.size - 1) if actions.size > 1 else 1.0
        return rows
