"""Heuristics as agents of the env.

A heuristic acts on the first job of the window (heuristics keep the queue's order) with its
own allocation rule, expressed as a candidate index of the action codec
(:class:`palgym.envs.actions.ActionCodec`): PAL takes the first feasible entry of its cost
matrix, PM-First the best-factor candidate at the top tier, Packed and Random their own
candidates.
"""

from __future__ import annotations

from palgym.envs.actions import ActionCodec
from palgym.envs.arguments import check_choice
from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES
from palgym.policies.pal import MatrixEntry, matrix_entries
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.config import SimConfig
from palgym.sim.types import NUM_PERF_CLASSES, BoolArray, FloatArray, Locality

STICKY_POLICIES = frozenset({"packed-sticky", "random-sticky"})
CLASS_REORDER_POLICIES = frozenset({"pal", "pm-first"})


def check_heuristic(name: str, sticky: bool, class_reorder: bool) -> None:
    """Check that the env's ``sticky`` and ``class_reorder`` match the named policy.

    Raises:
        ConfigError: naming the mismatch (e.g. ``pal`` in a sticky env).
    """
    check_choice("heuristic", name, PLACEMENT_NAMES)
    wants_sticky = name in STICKY_POLICIES
    if wants_sticky != sticky:
        raise ConfigError(
            f"{name} is {'sticky' if wants_sticky else 'non-sticky'} but the env has "
            f"sticky={sticky}: make the env with sticky={wants_sticky}"
        )
    wants_reorder = name in CLASS_REORDER_POLICIES
    if wants_reorder != class_reorder:
        raise ConfigError(
            f"{name} needs class_reorder={wants_reorder} (the env has {class_reorder})"
        )


def pal_order(
    tiers: FloatArray, entries: tuple[MatrixEntry, ...], codec: ActionCodec
) -> tuple[int, ...]:
    """PAL's cost order of a class as candidate indices: (v_t, WITHIN) -> ``codec.within(t)``
    and (v_t, ACROSS) -> ``codec.best(t)``.

    Args:
        tiers: float64 (T_c,), the class's ascending slowdown tiers.
        entries: PAL's cost order for the class (:func:`palgym.policies.pal.matrix_entries`).
        codec: the action codec.
    """
    values = tiers.tolist()
    return tuple(
        (codec.best if entry.locality is Locality.ACROSS else codec.within)(
            values.index(entry.value)
        )
        for entry in entries
    )


def pal_choice(
    feasible: BoolArray,
    num_gpus: int,
    num_tiers: int,
    order: tuple[int, ...],
    gpus_per_node: int,
    codec: ActionCodec,
) -> int | None:
    """Candidate index PAL takes for a job: the first feasible entry of its cost order.

    (v_t, WITHIN) is feasible exactly when ``within[t]`` is, and (v_t, ACROSS) exactly when
    ``best[t]`` is (both need N free GPUs with factor <= v_t, within one node for WITHIN).
    Single-GPU jobs and jobs larger than a node take PM-First at the top tier.

    Args:
        feasible: bool (M,), the job's candidate feasibility.
        num_gpus: N.
        num_tiers: T_c, the number of the class's slowdown tiers.
        order: the class's cost order as candidate indices (:func:`pal_order`).
        gpus_per_node: G_n.
        codec: the action codec.

    Returns:
        The candidate index, or None if the job does not fit.

    Source: PAL, SC24, Section IV-C (Algorithm 1).
    """
    if num_gpus == 1 or num_gpus > gpus_per_node:
        top = codec.best(num_tiers - 1)
        return top if feasible[top] else None
    for index in order:
        if feasible[index]:
            return index
    return None


def heuristic_candidate(
    name: str,
    feasible: BoolArray,
    num_gpus: int,
    num_tiers: int,
    pal_order: tuple[int, ...],
    gpus_per_node: int,
    codec: ActionCodec,
) -> int | None:
    """Candidate index the named placement takes for a job (None: it does not fit).

    Args:
        name: placement name.
        feasible: bool (M,), the job's candidate feasibility.
        num_gpus: N.
        num_tiers: T_c, the number of the job class's slowdown tiers.
        pal_order: PAL's cost order for the job's class
            (:func:`pal_order`).
        gpus_per_node: G_n.
        codec: the action codec.
    """
    if name == "pal":
        return pal_choice(feasible, num_gpus, num_tiers, pal_order, gpus_per_node, codec)
    if name == "pm-first":
        return codec.best(num_tiers - 1)
    if name.startswith("packed"):
        return codec.PACKED
    return codec.RANDOM


def pal_orders(
    factors: SlowdownFactors, config: SimConfig, codec: ActionCodec
) -> tuple[tuple[int, ...], ...]:
    """PAL's cost order of every perf class as candidate indices
    (:func:`pal_order` of :func:`palgym.policies.pal.matrix_entries`),
    with the class's locality penalty."""
    by_class = config.locality_penalty_by_class
    penalty = [config.locality_penalty] * NUM_PERF_CLASSES if by_class is None else by_class
    return tuple(
        pal_order(factors.tiers[c], matrix_entries(factors.sf[c], penalty[c]), codec)
        for c in range(NUM_PERF_CLASSES)
    )
