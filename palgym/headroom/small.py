"""The small-instance suite: generated episodes small enough for exact optima.

Each instance is a ``default``-preset episode (no restart cost, no background jobs, a static
truth: the world :mod:`palgym.headroom.exact` models exactly) on 2 x 4 to 4 x 4 GPUs with 6 to
14 jobs. Its GPUs are distinct columns of the bundled single-run profile (the PAL artifact's
draw from the Longhorn runs, outlier runs included, so that placement matters), drawn without
replacement; jobs are Sia-Philly-like: the six models, 1, 2 or 4 GPUs (8 on clusters of at
least 3 nodes), ideal run times of 0.8 to 5 rounds, arrivals uniform over the first J / 2
rounds (J jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.bundled import bundled_profile
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig, preset
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import MODEL_ITERATION_TIME_S, Trace
from palgym.simulate import Episode, make_episode

CLUSTERS: tuple[tuple[int, int], ...] = ((2, 4), (3, 4), (4, 4))
"""The clusters (nodes, GPUs per node) of the suite."""
JOBS: tuple[int, int] = (6, 14)
"""The fewest and most jobs of an instance."""
ROUND_S = 360.0


@dataclass(frozen=True)
class SmallInstance:
    """One generated instance.

    Attributes:
        name: ``small-<seed>``.
        seed: the generator's seed (everything follows from it).
        cluster: its cluster.
        trace: its jobs.
        gpu_columns: int64 (G,), the bundled single-run profile's GPUs it uses.
    """

    name: str
    seed: int
    cluster: ClusterSpec
    trace: Trace
    gpu_columns: np.ndarray

    @property
    def config(self) -> SimConfig:
        """The ``default`` preset."""
        return preset("default")

    def profile(self) -> VariabilityProfile:
        """The instance's profile: the chosen columns of the bundled single-run profile."""
        full = bundled_profile("single-run", 1024)
        return VariabilityProfile(f"{self.name}-single-run", full.perfvar[:, self.gpu_columns])

    def episode(self) -> Episode:
        """The instance as an episode (seed 0; nothing in it draws from the seed)."""
        return make_episode(self.trace, cluster=self.cluster, config=self.config,
                            profile=self.profile(), seed=0)


def small_instance(seed: int) -> SmallInstance:
    """The instance of ``seed`` (module docstring): cluster, jobs and GPUs drawn from
    ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    nodes, per_node = CLUSTERS[int(rng.integers(len(CLUSTERS)))]
    cluster = ClusterSpec(nodes, per_node)
    num_jobs = int(rng.integers(JOBS[0], JOBS[1] + 1))
    sizes = np.array([1, 2, 4] + ([8] if nodes >= 3 else []))
    weights = np.array([0.45, 0.25, 0.2] + ([0.1] if nodes >= 3 else []))
    num_gpus = rng.choice(sizes, size=num_jobs, p=weights / weights.sum())
    models = sorted(MODEL_ITERATION_TIME_S)
    picked = rng.choice(len(models), size=num_jobs)
    iteration_time_s = np.array([MODEL_ITERATION_TIME_S[models[i]] for i in picked])
    ideal_s = rng.uniform(0.8, 5.0, size=num_jobs) * ROUND_S
    submit_s = np.floor(rng.uniform(0.0, 0.5 * num_jobs * ROUND_S, size=num_jobs))
    trace = Trace.from_columns(
        f"small-{seed}", job_id=np.arange(num_jobs), submit_time_s=submit_s,
        num_gpus=num_gpus, total_iterations=np.ceil(ideal_s / iteration_time_s),
        iteration_time_s=iteration_time_s, model=[models[i] for i in picked])
    columns = np.sort(rng.choice(1024, size=cluster.num_gpus, replace=False))
    return SmallInstance(f"small-{seed}", seed, cluster, trace, columns)
