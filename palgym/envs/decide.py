"""One decision of the env as one value, from either backend.

A :class:`Decision` holds what the agent is offered at one decision point: the window's
placement candidates, the observation and the action mask. Two functions with the same
signature compute it:

- :func:`decide_numpy`, the reference: the placement policies' own numpy functions
  (:func:`palgym.envs.candidates.window_candidates`), the numpy observation builder and
  :func:`action_mask`;
- :class:`CompiledDecide` (:func:`decide_numba`), the compiled path: one call of
  :func:`palgym.envs.obs_kernel.decision`.

Both give equal decisions (``tests/test_env_kernel.py``); the env picks one in its constructor
(``backend=``) and keeps the current decision in one cache slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from palgym._numba import entry_point
from palgym.envs import kernel, obs_kernel
from palgym.envs.actions import ActionCodec
from palgym.envs.candidates import (
    EpisodeTables,
    ShapeRows,
    SlotRows,
    WindowCandidates,
    window_candidates,
)
from palgym.envs.decisions import DecisionRound
from palgym.envs.features import LOG_HORIZON
from palgym.envs.kernel_args import JobColumns, RoundArgs
from palgym.envs.observations import ObservationBuilder
from palgym.errors import ConfigError
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.engine import Simulator
from palgym.sim.types import BoolArray, JobStatus

BACKENDS: tuple[str, ...] = ("numba", "numpy")
"""Decision backends: ``"numba"`` (compiled, the default) and ``"numpy"`` (the reference)."""
_RUNNING = int(JobStatus.RUNNING)


class Decision(NamedTuple):
    """What the agent is offered at one decision point (immutable).

    The observation's arrays are read-only, so the same observation may be handed out any
    number of times; the candidates are views of the episode's kernel buffers, valid until the
    next decision is computed.

    Attributes:
        candidates: the window's placement candidates (GPU sets of slot k's candidate m; None
            after the episode's end).
        observation: ``jobs`` float32 (K * F_j,), ``candidates`` float32 (K * M * F_c,),
            ``cluster`` float32 (F_k,) (see :class:`palgym.envs.observations.ObservationBuilder`).
        mask: bool (K * M + 1,), the valid actions (never all False; the env hands out copies).
    """

    candidates: WindowCandidates | None
    observation: dict[str, np.ndarray]
    mask: BoolArray


def _read_only(observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    for array in observation.values():
        array.setflags(write=False)
    return observation


DecideFn = Callable[
    [Simulator, DecisionRound, EpisodeTables, SlowdownFactors, ObservationBuilder], Decision
]
"""The signature both backends share."""


def action_mask(decision: DecisionRound, feasible: BoolArray, codec: ActionCodec) -> BoolArray:
    """bool (K*M+1,): the valid actions, never all False.

    The selectable slots' feasible candidates (sticky rounds: slot 0 only), and "end round"
    when the round may end (:attr:`DecisionRound.can_end`) or nothing else is valid.

    Args:
        decision: the open round.
        feasible: bool (K', M), the candidate feasibility of every window slot.
        codec: the action codec.
    """
    mask = np.zeros(codec.n, dtype=np.bool_)
    if decision.sticky:
        feasible = feasible[:1]
    mask[: feasible.size] = feasible.ravel()  # action k * M + m is feasible[k, m]
    mask[codec.END_ROUND] = decision.can_end or not mask.any()
    return mask


def final_decision(builder: ObservationBuilder) -> Decision:
    """The decision after the episode's end: an all-zero observation, only "end round"."""
    mask = np.zeros(builder.codec.n, np.bool_)
    mask[builder.codec.END_ROUND] = True
    return Decision(None, _read_only(builder.empty()), mask)


def decide_numpy(
    sim: Simulator,
    decision: DecisionRound,
    tables: EpisodeTables,
    factors: SlowdownFactors,
    builder: ObservationBuilder,
) -> Decision:
    """The current decision with the policies' numpy functions (the reference).

    Args:
        sim: the engine (read only).
        decision: the open round.
        tables: the episode tables.
        factors: the episode's slowdown factors.
        builder: the observation builder.
    """
    window = decision.window(builder.num_slots)
    candidates = window_candidates(sim, window, decision.free, tables, factors, compiled=False)
    observation = _read_only(builder.build(sim, decision, candidates, tables))
    mask = action_mask(decision, candidates.slot_feasible(), builder.codec)
    return Decision(candidates, observation, mask)


class CompiledDecide:
    """The compiled backend (:func:`palgym.envs.obs_kernel.decision`, one call per decision);
    equal to :func:`decide_numpy`. Call it as a :data:`DecideFn` (``factors`` is unused: the
    tables hold them).

    The kernel's arguments that are constant during a round (the engine's columns, the
    episode tables, the round's constants) are gathered once per round and tables; a decision
    adds its window's jobs and two fresh buffers. The kernel is called through its compiled
    entry for the tables' argument types (:func:`palgym._numba.entry_point`, resolved once per
    tables: every argument's type is fixed by the engine, the tables and this class). The
    observation's three keys are views of one fresh float32 buffer, made read-only once filled;
    the candidates are the buffers' leading rows
    (:attr:`palgym.envs.candidates.KernelBuffers.prefixes`).
    """

    def __init__(self) -> None:
        self._round: DecisionRound | None = None
        self._tables: EpisodeTables | None = None
        self._args: tuple[object, ...] = ()
        self._shapes = ((0, 0, 0), 0, 1)  # the builder's offsets, K * M + 1 and K
        self._kernel_size = 0  # the buffer's part the kernel fills (all but the reservation's)
        self._prefixes: tuple[tuple[SlotRows, ...], tuple[ShapeRows, ...]] = ((), ())
        self._kernel: Callable[..., int] = obs_kernel.decision

    def __getstate__(self) -> dict[str, bool]:
        # the memo holds views of the engine's and the buffers' arrays, which a copy (deepcopy,
        # pickle) would not keep as views: a copy gathers its own at its first decision
        return {"fresh": True}

    def __setstate__(self, state: dict[str, bool]) -> None:
        self.__init__()  # type: ignore[misc]

    def _gather(
        self, sim: Simulator, decision: DecisionRound, tables: EpisodeTables,
        builder: ObservationBuilder,
    ) -> None:
        """The round's constant arguments (everything the kernel takes before ``jobs``)."""
        table = sim.jobs
        known = builder.durations_known  # the scheduler's total iterations (true if clairvoyant)
        total_iterations = (table.total_iterations if builder.clairvoyant or not known
                            else builder.durations.total_iterations(table))
        queued_frac, log_now = builder.round_constants(sim, decision)
        self._args = (
            decision.free, sim.job_of_gpu,
            JobColumns(table.perf_class, table.num_gpus, table.iteration_time_s,
                       total_iterations, table.iterations_done, table.submit_time_s,
                       table.attained_service_s, table.status),
            *tables.kernel_args,
            RoundArgs(sim.now_s, _RUNNING, decision.sticky, decision.task == "scheduling",
                      LOG_HORIZON, queued_frac, log_now, known),
        )
        self._shapes = builder.offsets, builder.num_actions, builder.num_slots
        self._kernel_size = builder.offsets[2] - builder.num_reservation
        if tables is not self._tables:  # the arguments' types are fixed for the tables' life
            self._prefixes = tables.buffers.prefixes
            self._kernel = entry_point(obs_kernel.decision, (
                *self._args, np.zeros(0, np.int64), 0.0,
                np.zeros(builder.offsets[2], np.float32), np.zeros(builder.num_actions, np.bool_),
            ))
        self._round, self._tables = decision, tables

    def __call__(
        self,
        sim: Simulator,
        decision: DecisionRound,
        tables: EpisodeTables,
        factors: SlowdownFactors,
        builder: ObservationBuilder,
    ) -> Decision:
        """The current decision (the :data:`DecideFn` signature)."""
        if decision is not self._round or tables is not self._tables:
            self._gather(sim, decision, tables, builder)
        (a, b, size), num_actions, num_slots = self._shapes
        buffer = np.zeros(size, np.float32)
        mask = np.zeros(num_actions, np.bool_)
        pending = decision.pending
        jobs = np.array(pending[:num_slots], dtype=np.int64)
        filled = self._kernel_size
        num_shapes = self._kernel(  # the reservation's entries (work-conserving) follow its part
            *self._args, jobs, min(len(pending) / num_slots, 1.0),
            buffer if filled == size else buffer[:filled], mask
        )
        if filled != size:
            buffer[filled:] = builder.reservation_features(decision, decision.free.size)
        by_slots, by_shapes = self._prefixes
        shape_of_slot, keeps = by_slots[jobs.size]
        shape_gpus, sets, feasible, features = by_shapes[num_shapes]
        candidates = WindowCandidates(jobs, shape_of_slot, shape_gpus, sets, feasible, features,
                                      keeps)
        buffer.setflags(write=False)  # (cheaper than assigning flags.writeable)
        observation = {"jobs": buffer[:a], "candidates": buffer[a:b], "cluster": buffer[b:]}
        gpus = builder.gpu_observation(sim, decision)
        if gpus is not None:  # observed_rates: per round, shared with the reference
            observation["gpus"] = gpus
        return Decision._make((candidates, observation, mask))  # (cheaper than Decision(...))


def decide_numba(
    sim: Simulator,
    decision: DecisionRound,
    tables: EpisodeTables,
    factors: SlowdownFactors,
    builder: ObservationBuilder,
) -> Decision:
    """The current decision in one compiled call (a fresh :class:`CompiledDecide`; an env
    keeps one for its life); equal to :func:`decide_numpy`."""
    return CompiledDecide()(sim, decision, tables, factors, builder)


def choose_backend(backend: str, pal_node_order: str) -> DecideFn:
    """The decision function of ``backend`` (``"numba"`` | ``"numpy"``).

    Raises:
        ConfigError: an unknown backend; ``"numba"`` without numba installed, or with a
            within-node order the compiled kernel does not reproduce (only ``"ascending"``).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if backend == "numpy":
        return decide_numpy
    if not kernel.AVAILABLE:
        raise ConfigError('backend="numba" needs numba installed: pass backend="numpy"')
    if pal_node_order != "ascending":
        raise ConfigError(
            f'backend="numba" reproduces pal_node_order="ascending" only (the preset has '
            f'{pal_node_order!r}): pass backend="numpy"'
        )
    return CompiledDecide()
