"""The observation's feature layouts, declared once for both decision backends.

:class:`JobFeatures` (one row per window slot), :class:`CandidateFeatures` (one row per
placement candidate) and :class:`GpuFeatures` (one row per GPU, the optional ``gpus`` key of
``observed_rates=True``) are the tables: their fields are the features, in column order. The
instances :data:`JOB` and :data:`CANDIDATE` hold each feature's column index, so a builder
writes ``rows[:, JOB.log_waiting_time]`` (numpy) or ``out[k, JOB.log_waiting_time]`` (numba:
a global named tuple is a compile-time constant there) and the feature count is
``len(JOB)``. Adding a feature is one field here plus its computation in each backend
(:mod:`palgym.envs.observations` / :mod:`palgym.envs.candidates` in numpy,
:mod:`palgym.envs.obs_kernel`, the only numba module that reads these tables; a ``gpus``
feature: :func:`palgym.envs.observed.gpu_rows`, one numpy computation per round serving both
backends, since those rows change only at round boundaries) and its row in ``docs/ENV.md``,
where every feature's meaning, unit, normalisation and horizon is documented (a test checks
that the docs list exactly these names).

The normalisation constants live here too: every feature is scaled and clipped to [0, 1].
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from palgym.sim.types import NUM_PERF_CLASSES

TIME_HORIZON_S: float = 365 * 24 * 3600.0
"""Time (s) that maps to 1.0 on the log scale (a year: even 30-day jobs stay inside the box)."""
LOG_HORIZON: float = float(np.log1p(TIME_HORIZON_S))
"""log1p(TIME_HORIZON_S): a time t maps to clip(log1p(t) / LOG_HORIZON, 0, 1)."""
SLOWDOWN_MAX: float = 4.0
"""Slowdown factor that maps to 1.0 (``max_slowdown`` = min(factor / SLOWDOWN_MAX, 1))."""
LOCALITY_MAX: float = 4.0
"""Locality penalty that maps to 1.0 (``locality_penalty`` = min((lf - 1) / (max - 1), 1))."""
OBSERVED_AGE_ROUNDS: int = 100
"""Rounds since an observation that map to 1.0 (``observed_age`` = min(age / 100, 1))."""
MAX_TIERS: int = 8
"""The cluster-independent layout's slowdown tiers per class (``max_tiers``, the default of the
``-v1`` env ids): the silhouette rule fits at most 6 tiers a class
(:data:`palgym.policies.slowdown.MAX_SILHOUETTE_CLUSTERS`), the artifact's outliers rule 2 +
the class's 3-sigma outliers; a profile with fewer tiers leaves the rest of the candidates and
of the ``free_tier{t}_class{c}`` entries zero and masked (docs/ENV.md)."""
MAX_GPUS_PER_NODE: int = 16
"""The cluster-independent layout's room for GPUs per node (``max_gpus_per_node``, the default
of the ``-v1`` env ids): ``nodes_with_{n}_free`` for n = 0 .. 16 whatever the cluster's G_n
(16-GPU servers are the largest common ones); entries past the cluster's G_n are zero."""


class JobFeatures(NamedTuple):
    """Columns of the ``jobs`` rows (K, F_j): one row per window slot (docs/ENV.md)."""

    present: int
    selectable: int
    num_gpus_frac: int
    class_A: int  # noqa: N815 - the perf class names are A..D
    class_B: int  # noqa: N815
    class_C: int  # noqa: N815
    class_D: int  # noqa: N815
    log_remaining_ideal_time: int
    log_waiting_time: int
    log_attained_service: int
    was_running: int
    queue_position: int


class CandidateFeatures(NamedTuple):
    """Columns of the ``candidates`` rows (K, M, F_c): one row per candidate (docs/ENV.md).

    Every feature but :attr:`keeps_gpus` is a property of the GPU set alone, shared by the
    window's slots of the same (perf class, N) shape; ``keeps_gpus`` depends on the slot's job.
    """

    feasible: int
    max_slowdown: int
    spans_nodes: int
    locality_penalty: int
    predicted_speed: int
    best_tier_frac: int
    keeps_gpus: int


class GpuFeatures(NamedTuple):
    """Columns of the optional ``gpus`` rows (G, F_g): one row per GPU (docs/ENV.md)."""

    believed_A: int  # noqa: N815 - the perf class names are A..D
    believed_B: int  # noqa: N815
    believed_C: int  # noqa: N815
    believed_D: int  # noqa: N815
    observed_slowdown: int
    observed_age: int


JOB = JobFeatures(*range(len(JobFeatures._fields)))
"""Column index of every job feature."""
CANDIDATE = CandidateFeatures(*range(len(CandidateFeatures._fields)))
"""Column index of every candidate feature."""
JOB_FEATURES: tuple[str, ...] = JobFeatures._fields
"""Names of the job features, column order (F_j = len(JOB_FEATURES))."""
CANDIDATE_FEATURES: tuple[str, ...] = CandidateFeatures._fields
"""Names of the candidate features, column order (F_c = len(CANDIDATE_FEATURES))."""
GPU = GpuFeatures(*range(len(GpuFeatures._fields)))
"""Column index of every GPU feature."""
GPU_FEATURES: tuple[str, ...] = GpuFeatures._fields
"""Names of the GPU features, column order (F_g = len(GPU_FEATURES))."""
CLASS_COLUMNS: tuple[int, ...] = (JOB.class_A, JOB.class_B, JOB.class_C, JOB.class_D)
"""Column of the perf-class one-hot of class c = 0..3 (contiguous, from ``JOB.class_A``)."""

assert len(CLASS_COLUMNS) == NUM_PERF_CLASSES
assert CLASS_COLUMNS == tuple(range(JOB.class_A, JOB.class_A + NUM_PERF_CLASSES))
assert (GPU.believed_A, GPU.believed_D) == (0, NUM_PERF_CLASSES - 1)  # believed_c is column c


def log_time(seconds: float) -> float:
    """clip(log1p(max(t, 0)) / LOG_HORIZON, 0, 1): a time (s) on the log scale."""
    return min(max(math.log1p(max(seconds, 0.0)) / LOG_HORIZON, 0.0), 1.0)
