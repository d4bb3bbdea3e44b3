"""The named records the env's compiled decision takes (:func:`palgym.envs.obs_kernel.decision`).

Plain ``NamedTuple`` s of arrays and scalars (numba takes them in nopython mode and reads
their fields by name), so a kernel argument is added by name in one record instead of at one
position of a long argument list. The records and who builds them:

- :class:`JobColumns`: the job table's columns the decision reads (``CompiledDecide``, once
  per round; ``total_iterations`` is the scheduler's view of the work);
- :class:`TableArgs`: the episode's candidate tables (:class:`~palgym.envs.candidates.
  EpisodeTables`, once per tables);
- :class:`CandidateIndex`: the codec's candidate indices and M (once per tables);
- :class:`BufferArgs`: the kernel's output buffers (once per tables);
- :class:`RoundArgs`: the round's constants (once per round).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class JobColumns(NamedTuple):
    """The job table's columns (each (J,)) the decision reads."""

    perf_class: np.ndarray
    num_gpus: np.ndarray
    iteration_time_s: np.ndarray
    total_iterations: np.ndarray
    """The scheduler's view (:meth:`palgym.policies.durations.Durations.total_iterations`)."""
    iterations_done: np.ndarray
    submit_time_s: np.ndarray
    attained_service_s: np.ndarray
    status: np.ndarray


class TableArgs(NamedTuple):
    """The episode tables (:class:`palgym.envs.candidates.EpisodeTables`) and T."""

    sf: np.ndarray
    rank: np.ndarray
    labels: np.ndarray
    tiers: np.ndarray
    num_tiers: np.ndarray
    max_tiers: int
    gpus_per_node: int
    strict_total: bool
    lf_by_class: np.ndarray
    larger_rule: bool


class CandidateIndex(NamedTuple):
    """The codec's candidate indices (:class:`palgym.envs.actions.ActionCodec`) and M."""

    best0: int
    packed: int
    random: int
    num_candidates: int


class BufferArgs(NamedTuple):
    """The kernel's output buffers (:class:`palgym.envs.candidates.KernelBuffers`)."""

    shape_of_slot: np.ndarray
    shape_gpus: np.ndarray
    sets: np.ndarray
    feasible: np.ndarray
    features: np.ndarray
    keeps: np.ndarray


class RoundArgs(NamedTuple):
    """The round's constants."""

    now_s: float
    running: int
    """The RUNNING status code."""
    sticky: bool
    """Only slot 0 is selectable."""
    scheduling: bool
    """The task is scheduling."""
    log_horizon: float
    """log1p of the time horizon."""
    queued_frac: float
    log_now: float
    remaining_known: bool
    """False when durations are unknown (the remaining-time column is 0)."""
