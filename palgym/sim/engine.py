"""The round-based simulator engine (PAL_MODEL section 3; PAL, SC24, Section V-A).

One engine, many drivers: the heuristic runner (:mod:`palgym.simulate`) and the Gymnasium env
drive it through the same calls::

    sim = Simulator(trace, profile, cluster, config)   # t = 0, arrivals with submit <= 0 admitted
    while not sim.done:
        sim.commit(target_job_of_gpu)                    # placement decided at boundary t
        sim.advance()                                    # account [t, t+R), t += R, complete, admit

Progress of a running job per round (artifact ``grpc_client_rm.get_metrics``, operation order
kept for bit-exactness)::

    T_eff = (variability_penalty x locality_penalty) x T_it     # fixed while the set is kept
    iterations_done = (R / T_eff) + iterations_done
    variability_penalty = max perfvar[class, g] over the job's GPUs    # slowest GPU sets the pace
    locality_penalty = lf (of the class) if the set spans nodes (or, by option, if the job is
                       larger than a node) else 1.0

A job completes at the first boundary where ``iterations_done >= total_iterations``; JCT =
that boundary - submit time. Same-time events follow one fixed order: progress, completions (GPUs
freed), arrivals (in trace order, then background copies), then the placement at that boundary.
"""

from __future__ import annotations

import math
import random
from types import ModuleType

import numpy as np

from palgym.errors import InvalidActionError, TraceFormatError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import LocalityRule, SimConfig
from palgym.sim.jobs import PROMOTED_PRIORITY, JobTable
from palgym.sim.metrics import EpisodeMetrics, JobRecords, compute_metrics
from palgym.sim.types import FREE, BoolArray, FloatArray, IntArray, JobStatus
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace

_RUNNING = np.int8(JobStatus.RUNNING)
_QUEUED = np.int8(JobStatus.QUEUED)


class Simulator:
    """Round-based GPU-cluster simulator with per-GPU variability.

    Args:
        trace: the measured jobs.
        profile: variability values; its first G GPUs are used.
        cluster: cluster shape (G = nodes x GPUs per node).
        config: simulation options.
        compiled: run commit and advance as single calls of :mod:`palgym.sim.kernels`
            (bit-identical results); False: the numpy reference; None: compiled if numba is.

    Raises:
        TraceFormatError: if a job needs more GPUs than the cluster has (never silently queued).
        ProfileError: if the profile covers fewer GPUs than the cluster.

    Attributes:
        now_s: current round boundary t (s).
        round_index: rounds advanced so far.
        job_of_gpu: int64 (G,), job index per GPU or FREE (-1). Read-only for callers.
        jobs: the :class:`JobTable`.
    """

    def __init__(
        self, trace: Trace, profile: VariabilityProfile, cluster: ClusterSpec, config: SimConfig,
        compiled: bool | None = None,
    ) -> None:
        too_big = np.flatnonzero(trace.num_gpus > cluster.num_gpus)
        if too_big.size:
            job = int(too_big[0])
            raise TraceFormatError(
                f"job {int(trace.job_id[job])} needs {int(trace.num_gpus[job])} GPUs but the "
                f"cluster {cluster} has {cluster.num_gpus}; it could never run",
                path=trace.source or trace.name, line=trace.line_of(job), field="num_gpus",
            )
        self.trace = trace
        self.cluster = cluster
        self.config = config
        self.perfvar: FloatArray = profile.take(cluster.num_gpus).perfvar
        self.node_of_gpu: IntArray = cluster.node_of_gpu()
        self.jobs = JobTable(trace)
        self.job_of_gpu: IntArray = np.full(cluster.num_gpus, FREE, dtype=np.int64)
        self.now_s = 0.0
        self.round_index = 0
        self.events_since_commit = True
        self._next_arrival = 0
        self._admitted = 0
        self._measured_left = trace.num_jobs
        self._background = random.Random(config.background_seed)
        self._next_background_s = math.inf
        self._background_count = 0
        self._usage = np.zeros(2)  # allocated, effective GPU-rounds
        self._usage_rounds = 0
        self._counting_usage = False
        self._compiled = compiled is not False and (compiled or _load_kernels().AVAILABLE)
        self._kernel_args = _load_kernels().config_args(config, cluster) if self._compiled else ()
        if config.background_jobs_per_hour > 0:
            self._next_background_s = self._background_gap(float(trace.submit_time_s[-1]))
        self._admit()

    # ----------------------------------------------------------------- queries
    @property
    def done(self) -> bool:
        """True once every measured job has completed."""
        return self._measured_left == 0

    @property
    def truncated(self) -> bool:
        """True once ``config.max_rounds`` rounds have been simulated without finishing."""
        return not self.done and self.round_index >= self.config.max_rounds

    def active_jobs(self) -> IntArray:
        """int64 (A,): indices of admitted, uncompleted jobs, in admission order."""
        status = self.jobs.status[: self._admitted]
        return ((status == _QUEUED) | (status == _RUNNING)).nonzero()[0]

    def running_jobs(self) -> IntArray:
        """int64 (R,): indices of running jobs, in admission order."""
        return (self.jobs.status[: self._admitted] == _RUNNING).nonzero()[0]

    def has_future_arrivals(self) -> bool:
        """True if trace jobs (or background copies) are still to arrive."""
        return self._next_arrival < self.trace.num_jobs or math.isfinite(self._next_background_s)

    # ----------------------------------------------------------------- commit
    def commit(self, target: IntArray | None) -> bool:
        """Make ``target`` the allocation for the round starting at ``now_s``.

        Jobs whose GPU set changes are stopped (a preemption if they were running) and, if they
        hold GPUs in ``target``, started on the new set with penalties recomputed. Jobs keeping
        exactly their set are untouched.

        Args:
            target: int64 (G,), job index per GPU or FREE; None keeps the current allocation.

        Returns:
            True if the allocation changed.

        Raises:
            InvalidActionError: if ``target`` has the wrong shape, names a job that is not
                admitted and uncompleted, or gives a job other than ``num_gpus`` GPUs.
        """
        if self._compiled:
            return (_kernels or _load_kernels()).commit_step(self, target)  # type: ignore[no-any-return]
        was_running = self.jobs.status[: self._admitted] == _RUNNING
        changed = False
        if target is not None:
            changed = self._apply(np.asarray(target, dtype=np.int64))
        self.events_since_commit = False
        if self.config.starvation_threshold_s is not None:
            self._account_waiting(was_running)
        return changed

    def _apply(self, target: IntArray) -> bool:
        """Stop and start the jobs whose GPU sets change (vectorised over jobs)."""
        if target.shape != self.job_of_gpu.shape:
            raise InvalidActionError(f"target must have shape {self.job_of_gpu.shape}")
        differs = self.job_of_gpu != target
        if not differs.any():
            return False
        bad = target[differs]
        bad = bad[(bad != FREE) & ((bad < 0) | (bad >= self._admitted))]
        if bad.size:
            raise InvalidActionError(
                f"target names unknown or unadmitted job index {int(bad.min())}"
            )
        # a job-indexed table (last entry for FREE) instead of np.unique / np.isin
        mark = np.zeros(self._admitted + 1, dtype=bool)
        mark[self.job_of_gpu[differs]] = True
        mark[target[differs]] = True
        mark[-1] = False
        touched = np.flatnonzero(mark)
        jobs = self.jobs
        # the touched jobs' GPUs in target, grouped by job (ascending), GPUs ascending
        gpus = np.flatnonzero(mark[target])
        owners = target[gpus]
        order = np.argsort(owners, kind="stable")
        gpus, owners = gpus[order], owners[order]
        first = np.flatnonzero(np.concatenate(([owners.size > 0], owners[1:] != owners[:-1])))
        started = owners[first]
        counts = np.diff(np.append(first, owners.size))
        held = np.zeros(touched.size, np.int64)
        held[np.searchsorted(touched, started)] = counts
        status = jobs.status[touched]
        bad_status = (status != _RUNNING) & (status != _QUEUED)
        bad_count = (held != 0) & (held != jobs.num_gpus[touched])
        if (bad_status | bad_count).any():
            i = int(np.argmax(bad_status | bad_count))
            job = int(touched[i])
            if bad_status[i]:
                raise InvalidActionError(f"job index {job} is not active (status {status[i]})")
            raise InvalidActionError(
                f"job index {job} needs {jobs.num_gpus[job]} GPUs, target gives {held[i]}"
            )
        jobs.num_preemptions[touched[status == _RUNNING]] += 1
        stopped = touched[held == 0]
        jobs.status[stopped] = _QUEUED
        jobs.iteration_time_effective_s[stopped] = np.inf
        if started.size:
            self._start(started, gpus, first)
        self.job_of_gpu = target.copy()
        return True

    def _start(self, started: IntArray, gpus: IntArray, first: IntArray) -> None:
        """Start jobs ``started`` (int64 (S,) ascending) on ``gpus`` (int64 (sum N,), grouped
        by job; group s begins at ``first[s]``): penalties, effective iteration time, status.

        Source: PAL artifact ``simulator.py`` progress model, ``T_eff = (vp * lp) * T_it``.
        """
        jobs = self.jobs
        perf_class = jobs.perf_class[started]
        owner_class = np.repeat(perf_class, np.diff(np.append(first, gpus.size)))
        variability = np.maximum.reduceat(self.perfvar[owner_class, gpus], first)
        config = self.config
        num_gpus = jobs.num_gpus[started]
        if config.locality_rule is LocalityRule.LARGER_THAN_NODE:
            pays = num_gpus > self.cluster.gpus_per_node
        else:
            nodes = self.node_of_gpu[gpus]
            pays = np.maximum.reduceat(nodes, first) != np.minimum.reduceat(nodes, first)
        by_class = config.locality_penalty_by_class
        penalty = (np.asarray(by_class, dtype=np.float64)[perf_class] if by_class is not None
                   else config.locality_penalty)
        locality = np.where(pays, penalty, 1.0)
        jobs.variability_penalty[started] = variability
        jobs.locality_penalty[started] = locality
        jobs.iteration_time_effective_s[started] = (variability * locality) * (
            jobs.iteration_time_s[started]
        )
        jobs.status[started] = _RUNNING
        jobs.restart_left_s[started] = config.restart_cost_s
        never = started[np.isnan(jobs.first_start_time_s[started])]
        jobs.first_start_time_s[never] = self.now_s

    def locality_penalty_of(self, perf_class: int, num_gpus: int, gpus: IntArray) -> float:
        """Locality penalty of a job of ``perf_class`` needing ``num_gpus`` on GPU set ``gpus``."""
        config = self.config
        if config.locality_rule is LocalityRule.LARGER_THAN_NODE:
            pays = num_gpus > self.cluster.gpus_per_node
        else:
            nodes = self.node_of_gpu[gpus]
            pays = bool(nodes.min() != nodes.max())
        if not pays:
            return 1.0
        by_class = config.locality_penalty_by_class
        return float(by_class[perf_class]) if by_class is not None else config.locality_penalty

    def _account_waiting(self, was_running: BoolArray) -> None:
        jobs = self.jobs
        status = jobs.status[: self._admitted]
        waiting = (status == _QUEUED) & ~was_running
        jobs.waiting_s[: self._admitted][waiting] += self.config.round_duration_s
        jobs.waiting_s[: self._admitted][~waiting] = 0.0
        threshold = self.config.starvation_threshold_s
        assert threshold is not None
        promote = waiting & (jobs.waiting_s[: self._admitted] >= threshold)
        promote &= jobs.priority[: self._admitted] != PROMOTED_PRIORITY
        if promote.any():
            jobs.priority[: self._admitted][promote] = PROMOTED_PRIORITY
            self.events_since_commit = True

    # ----------------------------------------------------------------- advance
    def advance(self) -> IntArray:
        """Account the round [t, t+R), move to t+R, complete finished jobs, admit arrivals.

        Returns:
            int64 (F,): indices of the jobs that completed at the new boundary.
        """
        if self._compiled:
            return (_kernels or _load_kernels()).advance_step(self)  # type: ignore[no-any-return]
        jobs = self.jobs
        duration = self.config.round_duration_s
        running = self.running_jobs()
        if running.size:
            self._progress(running, duration)
            if self._counting_usage:
                gpus = jobs.num_gpus[running]
                self._usage[0] += gpus.sum()
                self._usage[1] += (
                    gpus / (jobs.variability_penalty[running] * jobs.locality_penalty[running])
                ).sum()
        if self._counting_usage:
            self._usage_rounds += 1
        self.now_s += duration
        self.round_index += 1
        finished = running[jobs.iterations_done[running] >= jobs.total_iterations[running]]
        if finished.size:
            self._complete(finished)
        self._admit()
        return finished

    def _progress(self, running: IntArray, duration: float) -> None:
        jobs = self.jobs
        if self.config.restart_cost_s > 0:
            lost = np.minimum(jobs.restart_left_s[running], duration)
            jobs.restart_left_s[running] -= lost
            useful = duration - lost
        else:
            useful = duration  # type: ignore[assignment]
        jobs.iterations_done[running] = (
            useful / jobs.iteration_time_effective_s[running] + jobs.iterations_done[running]
        )
        jobs.attained_service_s[running] += duration
        jobs.gpu_service_s[running] += duration * jobs.num_gpus[running]

    def _complete(self, finished: IntArray) -> None:
        jobs = self.jobs
        jobs.status[finished] = JobStatus.COMPLETED
        jobs.completion_time_s[finished] = self.now_s
        jobs.iteration_time_effective_s[finished] = np.inf
        done = np.zeros(self.jobs.size + 1, dtype=bool)  # last entry: FREE
        done[finished] = True
        self.job_of_gpu[done[self.job_of_gpu]] = FREE
        self._measured_left -= int(np.count_nonzero(finished < jobs.num_measured))
        self.events_since_commit = True

    def _admit(self) -> None:
        jobs = self.jobs
        trace_size = self.trace.num_jobs
        start = self._next_arrival
        while self._next_arrival < trace_size and (
            jobs.submit_time_s[self._next_arrival] <= self.now_s
        ):
            self._next_arrival += 1
        if self._next_arrival > start:
            jobs.status[start : self._next_arrival] = _QUEUED
            self._admitted = self._next_arrival
            self._counting_usage = True
            self.events_since_commit = True
        while self._next_background_s <= self.now_s:
            self._add_background_job()

    def _add_background_job(self) -> None:
        jobs = self.jobs
        number = self._background_count
        row = number % self.trace.num_jobs
        index = jobs.append_copy(
            row, int(self.trace.job_id.max()) + 1 + number, self._next_background_s
        )
        jobs.status[index] = _QUEUED
        self._admitted = index + 1
        self._background_count += 1
        self._next_background_s = self._background_gap(self._next_background_s)
        self.events_since_commit = True

    def _background_gap(self, last_arrival_s: float) -> float:
        """Next background arrival: last + ceil(-ln(1 - U) / rate x 3600) s, U ~ Random(seed).

        Source: Blox ``workload/utils.py::poisson_next_arrival_time`` as run by the PAL artifact.
        """
        uniform = self._background.random()
        rate = self.config.background_jobs_per_hour
        return last_arrival_s + math.ceil(-math.log(1.0 - uniform) / rate * 3600)

    # ----------------------------------------------------------------- results
    def records(self) -> JobRecords:
        """Per-job records of the measured (trace) jobs, in trace order."""
        jobs = self.jobs
        measured = slice(0, jobs.num_measured)
        return JobRecords(
            job_id=jobs.job_id[measured].copy(),
            submit_time_s=jobs.submit_time_s[measured].copy(),
            first_start_time_s=jobs.first_start_time_s[measured].copy(),
            completion_time_s=jobs.completion_time_s[measured].copy(),
            num_gpus=jobs.num_gpus[measured].copy(),
            perf_class=jobs.perf_class[measured].copy(),
            num_preemptions=jobs.num_preemptions[measured].copy(),
        )

    def usage_gpu_rounds(self) -> tuple[float, float]:
        """(allocated, effective) GPU-rounds counted so far (see :meth:`metrics`)."""
        return float(self._usage[0]), float(self._usage[1])

    def metrics(self) -> EpisodeMetrics:
        """Episode metrics so far (see :func:`palgym.sim.metrics.compute_metrics`)."""
        return compute_metrics(
            self.records(),
            float(self._usage[0]),
            float(self._usage[1]),
            self._usage_rounds,
            self.cluster.num_gpus,
        )


_kernels: ModuleType | None = None


def _load_kernels() -> ModuleType:
    """:mod:`palgym.sim.kernels`, imported on first use, not with palgym (numba is slow)."""
    global _kernels
    from palgym.sim import kernels

    _kernels = kernels
    return kernels
