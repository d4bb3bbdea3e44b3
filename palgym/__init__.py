"""palgym: a variability-aware GPU-cluster scheduling simulator and testbed.

Reproduces the world of "PAL: A Variability-Aware Policy for Scheduling ML Workloads in GPU
Clusters" (Jain et al., SC24): GPUs run each class of job at their own speed, and placement can
trade variability against locality. Quick start::

    from palgym import make_episode, run_episode, read_sia_trace
    episode = make_episode(read_sia_trace("trace.csv"))
    result = run_episode(episode, policy="pal", queue_order="fifo")
    print(result.metrics.avg_jct_s)

Your own policy: a placement (:class:`PlacementPolicy`: ``name``, ``sticky``, ``deterministic``,
``place(view, order, sampler)`` returning ``job_of_gpu``, int64 (G,), job index or
:data:`FREE`) or a queue order (:class:`QueueOrder`: ``name``, ``static``, ``order(view)``)
reads the simulation through a :class:`SimView` (its job columns: :class:`JobColumns`) and runs
with ``run_episode(episode, policy=obj, queue_order=obj)``; or drive the engine
(:func:`make_simulator`) round by round. Registered (:func:`register_placement`,
:func:`register_queue_order`, or ``MODULE:CLASS`` on the command line), your class runs by
name everywhere palgym's own do. docs/CUSTOM_POLICY.md "Writing your own policy".
"""

import warnings

from palgym import guards as guards  # hands guard names to run_episode
from palgym.bundled import bundled_profile
from palgym.driver import drive
from palgym.errors import (
    ConfigError,
    InvalidActionError,
    PalgymError,
    ProfileError,
    TraceFormatError,
)
from palgym.io import read_measurements, read_profile, read_sia_trace, write_profile
from palgym.policies import (
    CLAIRVOYANT,
    PAPER_PLACEMENT_NAMES,
    PLACEMENT_NAMES,
    QUEUE_ORDER_NAMES,
    Durations,
    PlacementPolicy,
    QueueOrder,
    Sampler,
    SlowdownFactors,
    make_placement,
    make_queue_order,
    make_sampler,
    register_placement,
    register_queue_order,
)
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import PRESETS, SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.jobs import JobColumns
from palgym.sim.metrics import EpisodeMetrics, JobRecords
from palgym.sim.types import FREE, JobStatus
from palgym.sim.variability import VariabilityProfile
from palgym.sim.views import SimView
from palgym.sim.workload import Trace
from palgym.simulate import (
    Episode,
    EpisodeResult,
    episode_sampler,
    final_metrics,
    make_episode,
    make_simulator,
    run_episode,
    slowdown_factors,
)

__version__ = "0.1.0"


PORTABLE_LAYOUT: dict[str, int] = {"max_tiers": 8, "max_gpus_per_node": 16}
"""The ``-v1`` ids' default layout arguments: ``palgym.envs.features.MAX_TIERS`` and
``MAX_GPUS_PER_NODE`` (written here so that ``import palgym`` loads no env module; a test
checks that they agree), the cluster-independent layout (docs/ENV.md)."""


def _register_envs() -> None:
    """Register the Gymnasium ids (string entry points: the env module loads on ``make``):
    ``-v0`` with the env's defaults, ``-v1`` with :data:`PORTABLE_LAYOUT`."""
    from gymnasium.envs.registration import register, registry

    # -v0 stays a supported id (the committed models' layout), not an outdated one: Gymnasium's
    # "out of date" note for it, printed when a newer version is registered, is silenced
    warnings.filterwarnings("ignore", message=r".*The environment palgym/\w+-v0 is out of date",
                            category=DeprecationWarning)
    for version, layout in (("v0", {}), ("v1", PORTABLE_LAYOUT)):
        for name, task in (("PALPlacement", "placement"), ("PALScheduling", "scheduling")):
            env_id = f"palgym/{name}-{version}"
            if env_id not in registry:
                register(env_id, entry_point="palgym.envs.cluster_env:ClusterEnv",
                         vector_entry_point="palgym.envs.vector:make_vector_env",
                         kwargs={"task": task, **layout}, disable_env_checker=False)
    if "palgym/PALSelector-v0" not in registry:
        register("palgym/PALSelector-v0", entry_point="palgym.envs.selector:SelectorEnv",
                 disable_env_checker=False)


_register_envs()

__all__ = [
    "CLAIRVOYANT", "FREE", "PAPER_PLACEMENT_NAMES", "PLACEMENT_NAMES", "PRESETS",
    "QUEUE_ORDER_NAMES", "ClusterSpec",
    "ConfigError", "Durations", "Episode", "EpisodeMetrics", "EpisodeResult",
    "InvalidActionError", "JobColumns", "JobRecords", "JobStatus", "PalgymError",
    "PlacementPolicy", "ProfileError", "QueueOrder", "Sampler", "SimConfig", "SimView",
    "Simulator", "SlowdownFactors", "Trace", "TraceFormatError", "VariabilityProfile",
    "bundled_profile", "drive", "episode_sampler", "final_metrics", "make_episode",
    "make_placement", "make_queue_order", "make_sampler", "make_simulator", "preset",
    "read_measurements", "read_profile", "read_sia_trace", "register_placement",
    "register_queue_order", "run_episode", "slowdown_factors", "write_profile",
]
