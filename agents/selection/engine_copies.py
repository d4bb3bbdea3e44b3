"""Copies of a running episode that continue exactly as it would: what a selector that
simulates ahead (:mod:`agents.selection.search`) plays its rollouts on, leaving the real
run undisturbed.

``copy.deepcopy`` of the engine, its stall detector and the placements' random stream in one
call, sharing what an episode never writes (the trace, the cluster, the configuration, the
kernel parameters); the rollouts' rules are one deep copy of the episode's policies made at the
search's start. Under a belief that changes during the episode (``online``;
:class:`palgym.rule_selection.SharedBelief`), each rollout copies the belief with the engine in
the same call (its values, its fit, the placements made from it and its stragglers), and the
copy watches the rollout's rounds as the real one watches the episode's."""

from __future__ import annotations

import copy
from typing import Any

from palgym.policies.belief import BeliefMode
from palgym.rule_selection import SelectorContext
from palgym.sim.engine import Simulator


def copy_engine(sim: Simulator, *others: Any) -> tuple[Any, ...]:
    """``(sim copy, *copies of others)`` in one ``copy.deepcopy`` (objects they share stay
    shared), the copy continuing exactly as ``sim`` would.

    The trace, the cluster, the configuration and the kernel parameters are shared (never
    written during an episode); the job table, the allocation, the counters, the arrivals'
    cursor and random stream (background copies) and a dynamic truth are copied. ``others``
    are e.g. the stall detector and the placements' sampler.
    """
    shared = {id(value): value for value in (sim.trace, sim.cluster, sim.config, sim.params)}
    return tuple(copy.deepcopy((sim, *others), shared))


def copy_context(context: SelectorContext) -> tuple[Simulator, Any, Any, Any]:
    """``(engine, stall detector, sampler, shared belief)`` copied from ``context`` in one
    :func:`copy_engine` call (the belief None when it does not change). An ``oracle`` belief's
    values are a view of the engine's truth: the copy's are pointed at the copied engine's
    truth, so the copy refits as the engine it watches changes."""
    sim, stall, sampler, belief = copy_engine(context.sim, context.stall, context.sampler,
                                              context.belief)
    if belief is not None and belief.fit.belief.options.mode is BeliefMode.ORACLE:
        belief.fit.belief.values = sim.view().perfvar
    return sim, stall, sampler, belief
