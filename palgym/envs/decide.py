"""One decision of the env as one value, from either backend.

A :class:`Decision` holds what the agent is offered at one decision point: the window's
placement candidates, the observation and the action mask. Two functions with the same
signature compute it:

- :func:`decide_numpy`, the reference: the placement policies' own numpy functions
  (:func:`palgym.envs.candidates.window_candidates`), the numpy observation builder and
  :func:`action_mask`;
- :func:`decide_numba`, the compiled path: one call of :func:`palgym.envs.obs_kernel.decision`.

Both give equal decisions (``tests/test_env_kernel.py``); the env picks one in its constructor
(``backend=``) and keeps the current decision in one cache slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from palgym.envs import kernel, obs_kernel
from palgym.envs.actions import ActionCodec
from palgym.envs.candidates import EpisodeTables, WindowCandidates, window_candidates
from palgym.envs.decisions import DecisionRound
from palgym.envs.features import LOG_HORIZON
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


def decide_numba(
    sim: Simulator,
    decision: DecisionRound,
    tables: EpisodeTables,
    factors: SlowdownFactors,
    builder: ObservationBuilder,
) -> Decision:
    """The current decision in one compiled call (:func:`palgym.envs.obs_kernel.decision`);
    equal to :func:`decide_numpy`. ``factors`` is unused (the tables hold them).

    The three keys are views of one fresh float32 buffer, made read-only once filled; the
    episode's kernel arguments are bundled once per tables (:attr:`EpisodeTables.kernel_args`).
    """
    del factors
    a, b, size = builder.offsets
    buffer = np.zeros(size, np.float32)
    mask = np.zeros(builder.num_actions, np.bool_)
    pending = decision.pending
    num_slots = builder.num_slots
    jobs = np.array(pending[:num_slots], dtype=np.int64)
    table = sim.jobs
    known = builder.durations_known  # the scheduler's total iterations (true when clairvoyant)
    total_iterations = (table.total_iterations if builder.clairvoyant or not known
                        else builder.durations.total_iterations(table))
    queued_frac, log_now = builder.round_constants(sim, decision)
    num_shapes = obs_kernel.decision(
        decision.free, jobs, sim.job_of_gpu,
        table.perf_class, table.num_gpus, table.iteration_time_s, total_iterations,
        table.iterations_done, table.submit_time_s, table.attained_service_s, table.status,
        *tables.kernel_args,
        sim.now_s, _RUNNING, decision.sticky, decision.task == "scheduling", LOG_HORIZON,
        min(len(pending) / num_slots, 1.0), queued_frac, log_now, known, buffer, mask,
    )
    size = jobs.size
    out = tables.buffers
    candidates = WindowCandidates(
        jobs, out.shape_of_slot[:size], out.shape_gpus[:num_shapes],
        out.sets[:num_shapes], out.feasible[:num_shapes], out.features[:num_shapes],
        out.keeps[:size],
    )
    buffer.setflags(write=False)  # (cheaper than assigning flags.writeable)
    observation = {"jobs": buffer[:a], "candidates": buffer[a:b], "cluster": buffer[b:]}
    gpus = builder.gpu_observation(sim, decision)
    if gpus is not None:  # observed_rates: per round, shared with the reference
        observation["gpus"] = gpus
    return Decision._make((candidates, observation, mask))  # (cheaper than Decision(...))


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
    return decide_numba
