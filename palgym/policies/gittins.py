"""A non-clairvoyant queue order that knows the service distribution, not the job: the
Gittins index of each job's attained GPU-seconds under a per-class prior fitted on training
traces (Tiresias' "2D-Gittins index").

A job's service is its GPU-seconds at the ideal speed, ``S = num_gpus x total_iterations x
T_it``. Given the samples of S of the job's perf class (from the training split), and the
GPU-seconds ``a`` the job has attained, its Gittins index is

    G(a) = sup_{D > 0} P(S - a <= D | S > a) / E[min(S - a, D) | S > a],

the best ratio of completion probability to expected service spent over a quantum D; the job
with the highest index runs first (Gittins' optimal order of the M/G/1 queue for mean
response time when only the distribution is known). Over the empirical residuals
``x_1 <= ... <= x_n`` of the samples above ``a``, with D at each ``x_k``:

    1 / G(a) = min_k (x_1 + ... + x_k + (n - k) x_k) / k,

and the order sorts ascending by this rank (GPU-seconds; a job with no sample above its
attained service gets rank ``a``, after every job the prior still expects to finish soon).

The order reads no job's own duration, so it is valid under ``duration_knowledge='unknown'``;
it is not one of the CLI's queue-order names (it needs a prior): build it in Python, e.g.
``GittinsOrder(ServicePrior.from_traces(training_traces))``; ``benchmarks/duration_headroom.py``
uses it beside LAS, SRTF and SRSF.

Source: J. C. Gittins, "Multi-armed Bandit Allocation Indices", Wiley 1989; S. Aalto,
U. Ayesta, R. Righter, "On the Gittins index in the M/G/1 queue", Queueing Systems 63, 2009
(the index and its optimality); Gu et al., "Tiresias", NSDI'19, Section 4.2 (2D-Gittins index
over attained GPU-time for GPU clusters).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from palgym.errors import ConfigError
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray, IntArray
from palgym.sim.views import SimView
from palgym.sim.workload import Trace


def gittins_rank(samples: FloatArray, attained: float) -> float:
    """1 / G(attained) over the empirical distribution ``samples`` (see the module docstring).

    Args:
        samples: float64 (n,), sorted ascending, the service samples (GPU-s).
        attained: the job's attained service (GPU-s), >= 0.

    Returns:
        The rank (GPU-s; smaller runs first); ``attained`` if no sample exceeds it.
    """
    residual = samples[np.searchsorted(samples, attained, side="right"):] - attained
    if residual.size == 0:
        return float(attained)
    k = np.arange(1, residual.size + 1, dtype=np.float64)
    spent = np.cumsum(residual) + (residual.size - k) * residual
    return float((spent / k).min())


@dataclass(frozen=True)
class ServicePrior:
    """Per-perf-class service samples (GPU-s) that :class:`GittinsOrder` ranks against.

    Attributes:
        samples: one float64 array per perf class (A..D), sorted ascending; a class without
            samples uses every class's samples.
        source: what the samples came from (for reports).
    """

    samples: tuple[FloatArray, ...]
    source: str = ""

    @classmethod
    def from_traces(cls, traces: Iterable[Trace]) -> ServicePrior:
        """The prior of the jobs of ``traces`` (e.g. a trace set's training split).

        Raises:
            ConfigError: if the traces hold no job.
        """
        traces = list(traces)
        service = np.concatenate([t.num_gpus * t.total_iterations * t.iteration_time_s
                                  for t in traces] or [np.empty(0)])
        classes = np.concatenate([t.perf_class for t in traces] or [np.empty(0, np.int64)])
        if service.size == 0:
            raise ConfigError("ServicePrior.from_traces: the traces hold no job")
        every = np.sort(service)
        per_class = tuple(np.sort(service[classes == c]) if (classes == c).any() else every
                          for c in range(NUM_PERF_CLASSES))
        return cls(per_class, ", ".join(t.name for t in traces))


@dataclass(frozen=True)
class GittinsOrder:
    """Queue order by the Gittins rank of attained GPU-seconds (module docstring)."""

    prior: ServicePrior
    name: str = "gittins"
    static: bool = False

    def order(self, sim: SimView) -> IntArray:
        """Active job indices by (priority, Gittins rank)."""
        active = sim.active()
        jobs = sim.jobs
        rank = np.array([gittins_rank(self.prior.samples[int(jobs.perf_class[j])],
                                      float(jobs.gpu_service_s[j])) for j in active],
                        dtype=np.float64)
        return active[np.lexsort((rank, jobs.priority[active]))]  # stable, priority first
