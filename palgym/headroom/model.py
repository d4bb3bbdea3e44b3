"""The CP-SAT model of :mod:`palgym.headroom.exact` (OR-Tools, imported when a model is built).

Variables, for job j, GPU g and round t with ``a_j <= t < H_j`` (admission and horizon,
:mod:`palgym.headroom.exact`):

- ``y[j, g, t]`` (Boolean): j holds g in round t. A GPU holds at most one job; a job holds
  exactly N_j GPUs or none (gang scheduling); any job may move or stop at any boundary (no
  restart cost in this world, so preemption and migration are free).
- ``mode[j, t, l, s]`` (Boolean): j runs in round t at *level* l (the l-th smallest distinct
  ``perfvar[c_j]`` value: no GPU it holds is slower) and with (s = 1) or without the locality
  penalty; a mode without it holds one node (``node[j, t, n]``). Progress in the round is
  linear in the modes, ``rate(l, s) = R / ((v_l x lp_s) x T_it)`` in units of ``1 / SCALE`` of
  the job's work: the slowest GPU sets the pace, as in the engine.
- ``done[j, t]`` (Boolean, non-decreasing in t): j has completed by the end of round t, which
  needs the progress credited through t to reach its work; a done job holds no GPU.
- Objective: ``sum_j sum_t (1 - done[j, t])``, the sum of completion boundaries.

Redundant constraints tighten the relaxation: no job is done before its earliest boundary
(:mod:`palgym.headroom.bound`), a done job ran at least its fewest rounds, and a round's
running jobs hold at most G GPUs.

Progress is integer: ``floor`` of the true rate with a relative margin of :data:`MARGIN`
(``rounding="floor"``, the *restricted* model: every solution is a real schedule that completes
each job no later than the model says) or ``ceil`` (``"ceil"``, the *relaxed* model: its
optimum is a lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from palgym.errors import PalgymError
from palgym.headroom.bound import admit_rounds, fastest_iteration_time_s, min_rounds
from palgym.headroom.schedule import record_allocations
from palgym.sim.config import LocalityRule
from palgym.sim.types import FREE, IntArray
from palgym.simulate import Episode

SCALE = 1_000_000
"""Progress units per job's work in the model."""
MARGIN = 1e-9
"""Relative margin of the integer rates against the engine's floating-point progress."""


def _rates(episode: Episode, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """int64 (J, G) per-round progress units on each GPU, without and with the locality
    penalty (``rounding``: ``"floor"`` restricted, ``"ceil"`` relaxed)."""
    trace, config = episode.trace, episode.config
    perfvar = episode.profile.perfvar
    r = float(config.round_duration_s)
    lf = np.array(config.locality_penalties)[trace.perf_class]
    v = perfvar[trace.perf_class]  # (J, G)
    t_it = trace.iteration_time_s[:, None]
    work = trace.total_iterations[:, None]
    rate_near = r / ((v * 1.0) * t_it) / work * SCALE
    rate_far = r / ((v * lf[:, None]) * t_it) / work * SCALE
    if rounding == "floor":
        return (np.floor(rate_near * (1 - MARGIN)).astype(np.int64),
                np.floor(rate_far * (1 - MARGIN)).astype(np.int64))
    return (np.ceil(rate_near * (1 + MARGIN)).astype(np.int64),
            np.ceil(rate_far * (1 + MARGIN)).astype(np.int64))


@dataclass(frozen=True)
class _JobModes:
    """One job's modes: each GPU's level, the locality kinds it may run under (False: no
    penalty, True: the penalty) and the progress units per round of each (level, kind)."""

    level: np.ndarray
    kinds: tuple[bool, ...]
    rate: dict[tuple[int, bool], int]


def _job_modes(episode: Episode, j: int, near: np.ndarray, far: np.ndarray) -> _JobModes:
    trace, per_node = episode.trace, episode.cluster.gpus_per_node
    larger_rule = episode.config.locality_rule is LocalityRule.LARGER_THAN_NODE
    n = int(trace.num_gpus[j])
    values, level = np.unique(episode.profile.perfvar[int(trace.perf_class[j])],
                              return_inverse=True)
    counts = np.bincount(level, minlength=values.size).cumsum()
    usable = [lv for lv in range(values.size) if counts[lv] >= n]  # n GPUs at or below it
    if n > per_node:
        kinds: tuple[bool, ...] = (True,)
    elif larger_rule:
        kinds = (False,)
    else:
        kinds = (False, True)
    rate = {}
    for lv in usable:
        g_at = int(np.flatnonzero(level == lv)[0])
        for far_mode in kinds:
            rate[lv, far_mode] = int((far if far_mode else near)[j, g_at])
    return _JobModes(level, kinds, rate)


class _Builder:
    """Builds :func:`build_model`'s model one job and round at a time."""

    def __init__(self, episode: Episode, horizon: np.ndarray, rounding: str,
                 hint: IntArray | None) -> None:
        from ortools.sat.python import cp_model

        self.episode, self.horizon = episode, horizon
        trace, cluster = episode.trace, episode.cluster
        r = float(episode.config.round_duration_s)
        self.admit = admit_rounds(trace.submit_time_s, r)
        self.earliest = self.admit + min_rounds(trace.total_iterations,
                                                fastest_iteration_time_s(episode), r)
        self.near, self.far = _rates(episode, rounding)
        self.node_of = np.arange(cluster.num_gpus) // cluster.gpus_per_node
        self.model = cp_model.CpModel()
        self.y: dict[tuple[int, int, int], Any] = {}
        self.done: dict[tuple[int, int], Any] = {}
        self.on_gpu: dict[tuple[int, int], list[Any]] = {}
        self.runs_at: dict[int, list[Any]] = {}
        self.objective: list[Any] = []
        self.hinted: dict[int, np.ndarray] | None = None
        self.hint_done = np.zeros(0, np.int64)
        if hint is not None:
            free = np.full(cluster.num_gpus, FREE, np.int64)
            self.hinted = {t: hint[t] if t < hint.shape[0] else free
                           for t in range(int(horizon.max()))}
            completion = record_allocations(episode, hint).result.records.completion_time_s
            self.hint_done = np.rint(completion / r).astype(np.int64) - 1

    def job(self, j: int) -> None:
        """Job j's rounds, its completion and its objective terms."""
        modes = _job_modes(self.episode, j, self.near, self.far)
        cumulative: list[Any] = []
        running: list[Any] = []
        previous_done = None
        for t in range(int(self.admit[j]), int(self.horizon[j])):
            run, progress = self._round(j, t, modes)
            running.append(run)
            cumulative.append(progress)
            d = self._done(j, t, running, cumulative)
            if previous_done is not None:
                self.model.add_implication(previous_done, d)
                self.model.add(run <= 1 - previous_done)
            previous_done = d
        if previous_done is None:
            raise PalgymError(f"exact model: job {j} has no round before its horizon")
        self.model.add(previous_done == 1)

    def _done(self, j: int, t: int, running: list[Any], cumulative: list[Any]) -> Any:
        model = self.model
        d = model.new_bool_var(f"done_{j}_{t}")
        self.done[j, t] = d
        if self.hinted is not None:
            model.add_hint(d, int(t >= self.hint_done[j]))
        if t < self.earliest[j] - 1:  # no job completes before its earliest boundary
            model.add(d == 0)
        else:  # done by t: at least k_j rounds of running (redundant, for the relaxation)
            model.add(sum(running) >= int(self.earliest[j] - self.admit[j]) * d)
        model.add(sum(cumulative) >= SCALE * d)
        self.objective.append(~d)
        return d

    def _round(self, j: int, t: int, modes: _JobModes) -> tuple[Any, Any]:
        """Job j's variables of round t: its GPUs, its mode, its node; returns (run,
        progress) as linear expressions."""
        model, gpus = self.model, self.episode.cluster.num_gpus
        n = int(self.episode.trace.num_gpus[j])
        held = np.zeros(0, np.int64)
        if self.hinted is not None and t <= self.hint_done[j]:
            held = np.flatnonzero(self.hinted[t] == j)
        ys = []
        for g in range(gpus):
            var = model.new_bool_var(f"y_{j}_{g}_{t}")
            self.y[j, g, t] = var
            ys.append(var)
            self.on_gpu.setdefault((g, t), []).append(var)
            if self.hinted is not None:
                model.add_hint(var, int(g in held))
        mode = {key: model.new_bool_var(f"m_{j}_{t}_{key[0]}_{int(key[1])}")
                for key in modes.rate}
        hint_key = self._hint_key(held, modes)
        if self.hinted is not None:
            for key, var in mode.items():
                model.add_hint(var, int(key == hint_key))
        run = sum(mode.values())
        model.add(run <= 1)
        self.runs_at.setdefault(t, []).append(n * run)
        model.add(sum(ys) == n * run)
        for g in range(gpus):  # GPU g only under a mode whose level admits it
            model.add(ys[g] <= sum(v for (lv, _), v in mode.items() if lv >= modes.level[g]))
        if len(modes.kinds) == 2:  # no penalty: one node
            self._one_node(j, t, ys, mode, held, hint_key)
        progress = sum(modes.rate[key] * v for key, v in mode.items())
        return run, progress

    def _hint_key(self, held: np.ndarray, modes: _JobModes) -> tuple[int, bool] | None:
        if not held.size:
            return None
        spans = bool(self.node_of[held].min() != self.node_of[held].max())
        key = (int(modes.level[held].max()), spans or modes.kinds == (True,))
        return key if key in modes.rate else (key[0], True)

    def _one_node(self, j: int, t: int, ys: list[Any], mode: dict[tuple[int, bool], Any],
                  held: np.ndarray, hint_key: tuple[int, bool] | None) -> None:
        model = self.model
        nodes = [model.new_bool_var(f"n_{j}_{t}_{k}")
                 for k in range(self.episode.cluster.num_nodes)]
        if self.hinted is not None:
            near_node = (int(self.node_of[held][0])
                         if hint_key is not None and hint_key[1] is False else -1)
            for k, var in enumerate(nodes):
                model.add_hint(var, int(k == near_node))
        model.add(sum(nodes) == sum(v for (_, f), v in mode.items() if not f))
        far_run = sum(v for (_, f), v in mode.items() if f)
        for g, var in enumerate(ys):
            model.add(var <= nodes[int(self.node_of[g])] + far_run)

    def finish(self) -> None:
        """The GPU and capacity constraints across jobs, and the objective."""
        for vars_ in self.on_gpu.values():
            if len(vars_) > 1:
                self.model.add_at_most_one(vars_)
        gpus = self.episode.cluster.num_gpus
        for terms in self.runs_at.values():  # per-round capacity (redundant, for the relaxation)
            self.model.add(sum(terms) <= gpus)
        self.model.minimize(sum(self.objective))


def build_model(episode: Episode, horizon: np.ndarray, rounding: str,
                hint: IntArray | None = None) -> tuple[Any, dict[str, Any]]:
    """The CP-SAT model (module docstring) and its variables.

    A job's pace in a round is one of its *modes*: a level l (the l-th smallest distinct
    ``perfvar[c_j]`` value, the largest its GPUs may have) and whether it pays the locality
    penalty. ``mode[j, t, l, s]`` (Boolean) picks one while j runs; a GPU above the level is
    not j's; a mode that pays no penalty holds one node (``node[j, t, n]``). Progress is then
    linear in the modes: ``sum rate(l, s) x mode``. Redundant constraints tighten the
    relaxation: no job is done before its earliest boundary, a done job ran at least its
    fewest rounds, and a round's running jobs hold at most G GPUs.

    Args:
        episode: the episode.
        horizon: int64 (J,), the per-job horizons :func:`horizons`.
        rounding: ``"floor"`` (restricted model) or ``"ceil"`` (relaxed).
        hint: int64 (R, G) allocations (a job index per GPU or FREE, round by round) whose
            play hints every variable.

    Returns:
        ``(model, variables)``: a ``cp_model.CpModel`` and a dict with ``y`` ({(j, g, t):
        var}), ``done`` ({(j, t): var}), ``admit`` (int64 (J,)) and ``horizon``.
    """
    builder = _Builder(episode, horizon, rounding, hint)
    for j in range(episode.trace.num_jobs):
        builder.job(j)
    builder.finish()
    return builder.model, {"y": builder.y, "done": builder.done, "admit": builder.admit,
                           "horizon": horizon}


def allocations_of(solver: Any, episode: Episode, variables: dict[str, Any]) -> IntArray:
    """int64 (R, G): the solution's allocation of every round up to the largest horizon."""
    y = variables["y"]
    horizon = variables["horizon"]
    rounds = int(np.max(horizon))
    dense = np.full((rounds + 1, episode.cluster.num_gpus), FREE, np.int64)
    for (j, g, t), var in y.items():
        if solver.value(var):
            dense[t, g] = j
    return dense
