"""Queue orders: FIFO, LAS, SRTF, SRSF, Tiresias. All sort ascending and are stable (ties keep
admission order), and every key starts with the job's priority (999, or 1 once promoted for
starvation; see ``SimConfig.starvation_threshold_s``). Their options are their own fields
(:func:`palgym.policies.make_queue_order` fills them from a configuration's policy options).

Source: Blox ``schedulers/{fifo,las,srtf,tiresias}.py`` as run by the PAL artifact; Tiresias:
Gu et al., "Tiresias", NSDI'19, Section 4 (discretised two-dimensional LAS); SRSF (shortest
remaining service first, remaining time x GPUs): the same paper, Sections 2.2 and 6 (its
clairvoyant reference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palgym.policies.durations import CLAIRVOYANT, Durations, remaining_time_s
from palgym.sim.config import AttainedService, RemainingTime
from palgym.sim.types import FloatArray, IntArray
from palgym.sim.views import SimView


def _sorted(active: IntArray, priority: IntArray, *keys: FloatArray) -> IntArray:
    # np.lexsort is stable; its LAST key is the primary one.
    return active[np.lexsort((*reversed(keys), priority))]


def _attained(sim: SimView, active: IntArray, service: AttainedService) -> FloatArray:
    jobs = sim.jobs
    if service is AttainedService.WALL_CLOCK:
        return jobs.attained_service_s[active]
    return jobs.gpu_service_s[active]


@dataclass(frozen=True)
class FIFO:
    """First in, first out: key = submit time."""

    name: str = "fifo"
    static: bool = True

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, submit_time_s)."""
        active = sim.active()
        jobs = sim.jobs
        return _sorted(active, jobs.priority[active], jobs.submit_time_s[active])


@dataclass(frozen=True)
class LAS:
    """Least attained service first: key = wall-clock seconds run (artifact) or GPU-seconds.

    Attributes:
        service: what counts as attained service (``SimConfig.las_service``).
    """

    name: str = "las"
    static: bool = False
    service: AttainedService = AttainedService.GPU_TIME

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, attained service)."""
        active = sim.active()
        return _sorted(active, sim.jobs.priority[active], _attained(sim, active, self.service))


@dataclass(frozen=True)
class SRTF:
    """Shortest remaining time first, by the scheduler's remaining time
    (:func:`palgym.policies.durations.remaining_time_s`).

    Nominal (artifact): ``T_it x total_iterations - attained_service_s``, ignoring penalties and
    actual progress. Ideal (default): ``T_it x (total_iterations - iterations_done)``. Under
    ``noisy`` duration knowledge the user estimate of ``total_iterations`` replaces it.

    Attributes:
        durations: what the order knows of job durations.
        remaining: nominal or ideal remaining time (``SimConfig.srtf_remaining``).

    Raises:
        ConfigError: if ``durations`` withholds durations (``duration_knowledge='unknown'``).
    """

    name: str = "srtf"
    static: bool = False
    durations: Durations = CLAIRVOYANT
    remaining: RemainingTime = RemainingTime.IDEAL

    def __post_init__(self) -> None:
        self.durations.require_known(f"queue order {self.name!r}")

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, key), the key of :meth:`key`."""
        active = sim.active()
        return _sorted(active, sim.jobs.priority[active], self.key(sim, active))

    def key(self, sim: SimView, active: IntArray) -> FloatArray:
        """float64 (A,): the remaining time (s) of ``active``."""
        return remaining_time_s(sim, active, self.durations, self.remaining)


@dataclass(frozen=True)
class SRSF(SRTF):
    """Shortest remaining service first: key = the scheduler's remaining time (as in
    :class:`SRTF`, with its options) x the job's GPU count, i.e. the GPU-seconds it still
    needs. Between a 1-GPU job with 100 s left and a 4-GPU job with 30 s left, SRTF runs the
    4-GPU job first (30 < 100) and SRSF the 1-GPU job (100 < 120 GPU-s).

    Raises:
        ConfigError: if ``durations`` withholds durations (``duration_knowledge='unknown'``).

    Source: Gu et al., "Tiresias", NSDI'19, Sections 2.2 and 6 (SRSF, the clairvoyant
    two-dimensional order).
    """

    name: str = "srsf"

    def key(self, sim: SimView, active: IntArray) -> FloatArray:
        """float64 (A,): the remaining GPU-seconds of ``active``."""
        return super().key(sim, active) * sim.jobs.num_gpus[active]


@dataclass(frozen=True)
class Tiresias:
    """Tiresias.

    With wall-clock attained service (pal-artifact) it equals LAS, as in the artifact. Otherwise
    it is the discretised 2D-LAS of the Tiresias paper: a job's queue is the number of
    ``thresholds_gpu_s`` its attained GPU-seconds have reached; lower queues first, FIFO (submit
    time) within a queue.

    Attributes:
        service: what counts as attained service (``SimConfig.las_service``).
        thresholds_gpu_s: the 2D-LAS queue thresholds, GPU-seconds ascending
            (``SimConfig.tiresias_thresholds_gpu_s``).
    """

    name: str = "tiresias"
    static: bool = False
    service: AttainedService = AttainedService.GPU_TIME
    thresholds_gpu_s: tuple[float, ...] = (3600.0 * 4,)

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, queue, submit time) or LAS in artifact mode."""
        active = sim.active()
        jobs = sim.jobs
        if self.service is AttainedService.WALL_CLOCK:
            return _sorted(active, jobs.priority[active], jobs.attained_service_s[active])
        thresholds = np.asarray(self.thresholds_gpu_s, dtype=np.float64)
        queue = np.searchsorted(thresholds, jobs.gpu_service_s[active], side="right")
        return _sorted(
            active, jobs.priority[active], queue.astype(np.float64), jobs.submit_time_s[active]
        )
