"""The round-based simulator engine (PAL_MODEL section 3; PAL, SC24, Section V-A).

One engine, many drivers: the heuristic runner (:mod:`palgym.simulate`) and the Gymnasium env
drive it through the same calls::

    sim = Simulator(trace, profile, cluster, config)   # t = 0, arrivals with submit <= 0 admitted
    while not sim.done:
        sim.commit(target_job_of_gpu)                    # placement decided at boundary t
        sim.advance()                                    # account [t, t+R), t += R, complete, admit

Progress of a running job per round (artifact ``grpc_client_rm.get_metrics``, operation order
kept for bit-exactness; the locality penalty: :mod:`palgym.sim.locality`)::

    T_eff = (variability_penalty x locality_penalty) x T_it     # fixed while the set is kept
    iterations_done = (R / T_eff) + iterations_done
    variability_penalty = max perfvar[class, g] over the job's GPUs    # slowest GPU sets the pace

With ``config.dynamics`` active, ``perfvar`` is a dynamic truth and T_eff is recomputed when it
changes (:mod:`palgym.sim.truth`), taking effect from the next round.

A job completes at the first boundary where ``iterations_done >= total_iterations``; JCT = that
boundary - submit time. Same-time events follow one fixed order: progress, completions (GPUs
freed), arrivals (trace order, then background copies), then the placement at that boundary.

The engine owns the state (:class:`palgym.sim.state.SimState`) and admits arrivals
(:mod:`palgym.sim.admission`); the per-round work is a step backend's
(:mod:`palgym.sim.step_numpy` or :mod:`palgym.sim.step_numba`, chosen once by the ``backend``
argument), which updates the state's arrays in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from palgym.errors import ConfigError, InvalidActionError
from palgym.sim import state as slot
from palgym.sim.admission import Admission
from palgym.sim.backend import Backend, BackendName, resolve_backend, step_backend
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig
from palgym.sim.jobs import JobTable
from palgym.sim.locality import locality_penalty
from palgym.sim.metrics import EpisodeMetrics, JobRecords, compute_metrics
from palgym.sim.state import (
    KernelParams,
    SimState,
    job_blocks,
    job_columns,
    kernel_params,
    new_state,
)
from palgym.sim.trace_fit import check_trace_fits
from palgym.sim.truth import make_truth, rounds_one_by_one
from palgym.sim.types import FloatArray, IntArray, JobStatus
from palgym.sim.variability import VariabilityProfile
from palgym.sim.views import SimView, view_of
from palgym.sim.workload import Trace

T = TypeVar("T")
_RUNNING = np.int8(JobStatus.RUNNING)
_QUEUED = np.int8(JobStatus.QUEUED)


class Simulator:
    """Round-based GPU-cluster simulator with per-GPU variability.

    Args:
        trace: the measured jobs.
        profile: variability values; its first G GPUs are used.
        cluster: cluster shape (G = nodes x GPUs per node).
        config: simulation options.
        backend: the step backend, :class:`~palgym.sim.backend.Backend` or its name:
            ``"numba"`` (compiled kernels) or ``"numpy"`` (the reference); both give
            bit-identical results. None: numba if it is installed.
        dynamics_seed: seed of the dynamic truth (:mod:`palgym.sim.truth`; the profile is then
            its persistent character) when ``config.dynamics`` is active; None: its ``seed``.

    Raises:
        TraceFormatError: if a job needs more GPUs than the cluster has (never silently
            queued), has a time the float64 clock cannot resolve to a round, or the first job
            arrives after the round cap (:func:`palgym.sim.trace_fit.check_trace_fits`).
        ProfileError: if the profile covers fewer GPUs than the cluster.
        ConfigError: for an unknown backend, or ``"numba"`` without numba installed.

    Attributes:
        trace, cluster, config: as given.
        jobs: the :class:`JobTable` (its columns are the state's :class:`JobColumns`).
        backend: the :class:`~palgym.sim.backend.Backend` in use.
    """

    def __init__(
        self, trace: Trace, profile: VariabilityProfile, cluster: ClusterSpec, config: SimConfig,
        backend: BackendName | None = None,
        dynamics_seed: np.random.SeedSequence | int | None = None,
    ) -> None:
        check_trace_fits(trace, cluster, config)
        self.trace = trace
        self.cluster = cluster
        self.config = config
        self.backend: Backend = resolve_backend(backend)
        self._step = step_backend(self.backend)
        self.jobs = JobTable(trace)
        self._params: KernelParams = kernel_params(config, cluster, trace.num_jobs)
        perfvar = profile.take(cluster.num_gpus).perfvar
        self.truth = make_truth(config.dynamics, perfvar, cluster.node_of_gpu(), dynamics_seed)
        self._state: SimState = new_state(
            self.jobs, cluster, perfvar if self.truth is None else self.truth.process.truth)
        self._counters = self._state.counters  # the same arrays for the whole episode
        self._alloc = self._state.alloc
        self._floats = self._counters.floats
        self._ints = self._counters.ints
        self._max_rounds = config.max_rounds
        self._gpu_shape = self._alloc.job_of_gpu.shape
        self._bound = self._step.Bound(self._state, self._params)
        self._view: SimView | None = None
        self._job_rows = np.array([self.jobs.size], dtype=np.int64)  # read by the view
        self._arrivals = Admission(trace, config)
        self._admit()

    def __getstate__(self) -> dict[str, object]:
        """Pickle and deepcopy support: the backend module is named, not copied."""
        state = self.__dict__.copy()
        del state["_step"], state["_state"], state["_bound"]  # job columns are views: rebuilt
        state["_view"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._step = step_backend(self.backend)
        self._state = SimState(job_columns(self.jobs), self._alloc, self._counters,
                               job_blocks(self.jobs))
        self._bound = self._step.Bound(self._state, self._params)

    # ----------------------------------------------------------------- state, read-only
    @property
    def state(self) -> SimState:
        """The live state (arrays updated in place by every call; do not write to them)."""
        return self._state

    @property
    def params(self) -> KernelParams:
        """What the step backends read of the configuration."""
        return self._params

    @property
    def now_s(self) -> float:
        """The current round boundary t (s)."""
        return self._floats.item(slot.NOW_S)  # a Python float, as float() gives

    @now_s.setter
    def now_s(self, value: float) -> None:  # for invariant tests that move the clock back
        self._counters.floats[slot.NOW_S] = value

    @property
    def round_index(self) -> int:
        """Rounds advanced so far."""
        return self._ints.item(slot.ROUND_INDEX)

    @property
    def events_since_commit(self) -> bool:
        """A completion, admission or starvation promotion happened since the last commit (or
        that commit promoted a job): a static queue order may now decide differently."""
        return self._ints.item(slot.EVENTS_SINCE_COMMIT) != 0

    @property
    def job_of_gpu(self) -> IntArray:
        """int64 (G,), job index per GPU or FREE (-1); updated in place. Read-only for callers."""
        return self._alloc.job_of_gpu

    @property
    def node_of_gpu(self) -> IntArray:
        """int64 (G,), node index per GPU."""
        return self._alloc.node_of_gpu

    @node_of_gpu.setter
    def node_of_gpu(self, layout: IntArray) -> None:  # a non-contiguous layout, for tests
        self._alloc = self._alloc._replace(node_of_gpu=layout)
        self._state = self._state._replace(alloc=self._alloc)
        self._bound = self._step.Bound(self._state, self._params)
        self._view = None

    @property
    def perfvar(self) -> FloatArray:
        """float64 (C, G), variability value of each perf class on each GPU."""
        return self._alloc.perfvar

    def mark_event(self) -> None:
        """Flag an event from outside the engine (e.g. a policy's profile was refitted):
        :attr:`events_since_commit` is True until the next commit."""
        self._ints[slot.EVENTS_SINCE_COMMIT] = True

    def view(self) -> SimView:
        """The read-only, live view of the simulation (:class:`palgym.sim.views.SimView`)."""
        if self._view is None:
            self._view = view_of(self._state, self.cluster, self._job_rows,
                                 self._params.round_duration_s)
        return self._view

    # ----------------------------------------------------------------- queries
    @property
    def done(self) -> bool:
        """True once every measured job has completed."""
        return self._ints.item(slot.MEASURED_LEFT) == 0

    @property
    def truncated(self) -> bool:
        """True once ``config.max_rounds`` rounds have been simulated without finishing."""
        ints = self._ints
        return (ints.item(slot.MEASURED_LEFT) != 0
                and ints.item(slot.ROUND_INDEX) >= self._max_rounds)

    @property
    def ended(self) -> bool:
        """The episode has ended: :attr:`done` or :attr:`truncated`."""
        ints = self._ints
        return ints.item(slot.MEASURED_LEFT) == 0 or ints.item(slot.ROUND_INDEX) >= self._max_rounds

    def active_jobs(self) -> IntArray:
        """int64 (A,): indices of admitted, uncompleted jobs, in admission order."""
        status: np.ndarray = self.jobs.status[: self._counters.ints[slot.ADMITTED]]
        active: IntArray = ((status == _QUEUED) | (status == _RUNNING)).nonzero()[0]
        return active

    def running_jobs(self) -> IntArray:
        """int64 (R,): indices of running jobs, in admission order."""
        status: np.ndarray = self.jobs.status[: self._counters.ints[slot.ADMITTED]]
        running: IntArray = (status == _RUNNING).nonzero()[0]
        return running

    def has_future_arrivals(self) -> bool:
        """True if trace jobs (or background copies) are still to arrive."""
        return self._arrivals.has_future_arrivals()

    def close_arrivals(self) -> int:
        """Admit nothing more from now on (:meth:`palgym.sim.admission.Admission.close`): the
        trace jobs not yet admitted stay pending and never complete, so :attr:`done` stays
        False while any is left. For copies that plan on the jobs a scheduler knows now
        (:mod:`agents.selection.search`, ``arrivals="known"``), never for an episode's own
        engine.

        Returns:
            The measured jobs admitted so far (rows ``0..n-1``: the jobs known now).
        """
        self._arrivals.close()
        return min(self._counters.ints.item(slot.ADMITTED), self.jobs.num_measured)

    def locality_penalty_of(self, perf_class: int, num_gpus: int, gpus: IntArray) -> float:
        """Locality penalty of a job of ``perf_class`` needing ``num_gpus`` on GPU set ``gpus``
        (:func:`palgym.sim.locality.locality_penalty`)."""
        nodes = self.node_of_gpu[gpus]
        spans = bool(nodes.size) and bool(nodes.min() != nodes.max())
        return float(locality_penalty(self._params, perf_class, num_gpus, spans))

    # ----------------------------------------------------------------- the round
    def commit(self, target: IntArray | None) -> bool:
        """Make ``target`` the allocation for the round starting at ``now_s``.

        Jobs whose GPU set changes are stopped (a preemption if they were running) and, if they
        hold GPUs in ``target``, started on the new set with penalties recomputed. Jobs keeping
        exactly their set are untouched. Then waiting time is accounted (starvation option).

        Args:
            target: int64 (G,), job index per GPU or FREE; None keeps the current allocation.

        Returns:
            True if the allocation changed.

        Raises:
            InvalidActionError: if ``target`` has the wrong shape, names a job that is not
                admitted and uncompleted, or gives a job other than ``num_gpus`` GPUs (nothing
                is modified then).
        """
        if target is not None:
            target = np.asarray(target, dtype=np.int64)
            if target.shape != self._gpu_shape:
                raise InvalidActionError(f"target must have shape {self._gpu_shape}")
        truth = self.truth
        before = None if truth is None else self._alloc.job_of_gpu.copy()
        committed = self._bound.commit(target)
        if committed is slot.KEPT:
            return False
        if committed.rejection is not None:
            raise committed.rejection.error()
        if truth is not None and before is not None and committed.changed:
            truth.after_commit(self._state, before)
        return committed.changed

    def advance(self) -> IntArray:
        """Account the round [t, t+R), move to t+R, complete finished jobs, admit arrivals.

        Returns:
            int64 (F,): indices of the jobs that completed at the new boundary.
        """
        truth = self.truth
        before = None if truth is None else self._alloc.job_of_gpu.copy()
        finished = self._bound.advance()
        if truth is not None and before is not None:
            truth.after_round(self._state, before)
        if self._floats[slot.NOW_S] >= self._arrivals.next_arrival_s:
            self._admit()
        return finished

    def idle_rounds(self) -> int:
        """Repeat ``commit(None); advance()`` until a round has an event (a completion, an
        admission or a promotion: :attr:`events_since_commit`), every measured job has
        completed, or :attr:`truncated`, in one backend call; bit-identical to the calls.

        A driver with a static queue order faces the identical decision at the next boundary
        after a round without events (e.g. a sticky queue whose head job does not fit).

        Returns:
            The number of rounds run (0 if the episode had already ended).
        """
        if self.ended:
            return 0
        if self.truth is not None:  # the truth's hooks run between rounds: one by one
            return rounds_one_by_one(self)
        arrivals = self._arrivals
        rounds = self._bound.idle_rounds(arrivals.next_arrival_s)
        if self._counters.floats[slot.NOW_S] >= arrivals.next_arrival_s:
            self._admit()
        return rounds

    def compiled_rounds(self, run: Callable[[tuple[object, ...], Admission], tuple[T, int]]
                        ) -> T:
        """Rounds run by a compiled driver on the bound state, then the arrivals admitted as
        after :meth:`advance` (:mod:`palgym.driver`).

        Args:
            run: ``run(kernel_args, arrivals)`` advances the state with the compiled step
                functions (:attr:`palgym.sim.step_numba.Bound.kernel_args`), admitting only
                background copies drawn ahead (:meth:`Admission.background_ahead`), and stops
                at the first boundary where another arrival is due if not before; it returns
                its result and the number of copies it admitted.

        Returns:
            What ``run`` returned first.

        Raises:
            ConfigError: on the numpy backend, or with a dynamic truth (its hooks run between
                rounds).
        """
        args = self._bound.kernel_args
        if args is None or self.truth is not None:
            raise ConfigError("compiled rounds need the numba backend and a static truth")
        arrivals = self._arrivals
        result, copies = run(args, arrivals)
        if copies:
            arrivals.admitted_copies(self.jobs, copies)
            self._job_rows[0] = self.jobs.size  # the view's num_jobs
        if self._floats[slot.NOW_S] >= arrivals.next_arrival_s:
            self._admit()
        return result

    # ----------------------------------------------------------------- admission
    def _admit(self) -> None:
        """Admit what has arrived by ``now_s``; a table that grew is re-bound (new arrays)."""
        jobs = self.jobs
        if self._arrivals.admit(jobs, self._counters):
            self._job_rows[0] = jobs.size  # the view's num_jobs
            if jobs.status is not self._state.jobs.status:  # the table grew: new arrays
                self._state = self._state._replace(jobs=job_columns(jobs),
                                                   job_blocks=job_blocks(jobs))
                self._bound, self._view = self._step.Bound(self._state, self._params), None

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
        floats = self._counters.floats
        return float(floats[slot.ALLOCATED_GPU_ROUNDS]), float(floats[slot.EFFECTIVE_GPU_ROUNDS])

    def metrics(self) -> EpisodeMetrics:
        """Episode metrics so far, censored at the current time (see
        :func:`palgym.sim.metrics.compute_metrics`)."""
        allocated, effective = self.usage_gpu_rounds()
        return compute_metrics(
            self.records(), allocated, effective,
            int(self._counters.ints[slot.USAGE_ROUNDS]), self.cluster.num_gpus,
            end_time_s=self.now_s,
        )
