"""Random small traces and profiles for property tests (seeded numpy generators only)."""

from __future__ import annotations

import numpy as np

from palgym.sim.cluster import ClusterSpec
from palgym.sim.types import NUM_PERF_CLASSES
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import MODEL_ITERATION_TIME_S, Trace


def random_trace(
    rng: np.random.Generator,
    num_jobs: int,
    cluster: ClusterSpec,
    *,
    max_submit_s: float = 7200.0,
    max_duration_s: float = 5000.0,
    sizes: tuple[int, ...] | None = None,
    name: str = "random",
) -> Trace:
    """A small random trace for property tests (not a realistic workload).

    Sizes are drawn uniformly from ``sizes`` (default: 1, 2, 3, 4, 8, G_n and G, those that fit
    the cluster), submit times are
    whole seconds in ``[0, max_submit_s]`` (ties happen), models are the six known ones and the
    ideal run time ``total_iterations x T_it`` is uniform in ``[10, max_duration_s]`` s.

    Args:
        rng: the generator to draw from.
        num_jobs: J >= 1.
        cluster: every job fits it.
        max_submit_s: latest submit time.
        max_duration_s: longest ideal run time.
        sizes: the GPU counts to draw from (each must fit the cluster).
        name: trace id.

    Returns:
        The trace (validated, sorted by submit time).
    """
    if sizes is None:
        default = {1, 2, 3, 4, 8, cluster.gpus_per_node, cluster.num_gpus}
        sizes = tuple(sorted(size for size in default if size <= cluster.num_gpus))
    models = sorted(MODEL_ITERATION_TIME_S)
    picked = rng.choice(len(models), size=num_jobs)
    iteration_time_s = np.array([MODEL_ITERATION_TIME_S[models[i]] for i in picked])
    duration_s = rng.uniform(10.0, max_duration_s, size=num_jobs)
    return Trace.from_columns(
        name,
        job_id=np.arange(num_jobs),
        submit_time_s=np.floor(rng.uniform(0.0, max_submit_s, size=num_jobs)),
        num_gpus=rng.choice(sizes, size=num_jobs),
        total_iterations=np.ceil(duration_s / iteration_time_s),
        iteration_time_s=iteration_time_s,
        model=[models[i] for i in picked],
    )


def random_profile(
    rng: np.random.Generator, num_gpus: int, name: str = "random-profile"
) -> VariabilityProfile:
    """A random variability profile: a core around 1.0 (some GPUs faster than the median) plus
    a 10% tail of slow GPUs (1.2x to 3x), per class independently.

    Args:
        rng: the generator to draw from.
        num_gpus: G.
        name: profile id.

    Returns:
        The profile, perfvar float64 (4, G), every value in [0.85, 3].
    """
    shape = (NUM_PERF_CLASSES, num_gpus)
    core = np.clip(rng.normal(1.0, 0.05, size=shape), 0.85, 1.15)
    slow = rng.uniform(1.2, 3.0, size=shape)
    return VariabilityProfile(name, np.where(rng.random(shape) < 0.1, slow, core))

