"""The locality-penalty rule: which jobs pay it, and how much (PAL, SC24, Section IV-C).

A job pays its perf class's locality penalty lf if its GPU set spans more than one node or, under
:attr:`~palgym.sim.config.LocalityRule.LARGER_THAN_NODE`, if it needs more GPUs than a node has
(wherever it is placed); otherwise its locality penalty is 1.0. The per-class values are
:attr:`palgym.sim.config.SimConfig.locality_penalties`, carried in
:attr:`palgym.sim.state.KernelParams.locality_penalty_by_class`.

:func:`locality_penalty` is the rule for one job; :mod:`palgym.sim.step_numba` compiles this same
function for its kernels, and the engine calls it for
:meth:`~palgym.sim.engine.Simulator.locality_penalty_of`. :func:`locality_penalties` is the
same rule over many jobs, for :mod:`palgym.sim.step_numpy` (tested against the scalar rule).
"""

from __future__ import annotations

import numpy as np

from palgym.sim.state import KernelParams
from palgym.sim.types import BoolArray, FloatArray, IntArray


def locality_penalty(
    params: KernelParams, perf_class: int, num_gpus: int, spans_nodes: bool
) -> float:
    """Locality penalty of one job.

    Args:
        params: the episode's parameters (rule, G_n, penalty per class).
        perf_class: the job's perf class (0..C-1).
        num_gpus: GPUs the job needs.
        spans_nodes: its GPU set spans more than one node.

    Returns:
        lf of the class if the job pays the penalty, else 1.0.

    Source: PAL, SC24, Section IV-C; PAL artifact ``simulator.py`` progress model.
    """
    pays = num_gpus > params.gpus_per_node if params.larger_than_node_rule else spans_nodes
    if pays:
        return params.locality_penalty_by_class[perf_class]  # type: ignore[no-any-return]
    return 1.0


def locality_penalties(
    params: KernelParams, perf_class: IntArray, num_gpus: IntArray, spans_nodes: BoolArray
) -> FloatArray:
    """:func:`locality_penalty` of many jobs: float64 (S,) from int64 (S,) ``perf_class`` and
    ``num_gpus`` and bool (S,) ``spans_nodes``."""
    if params.larger_than_node_rule:
        pays = num_gpus > params.gpus_per_node
    else:
        pays = spans_nodes
    return np.where(pays, params.locality_penalty_by_class[perf_class], 1.0)
