"""Heuristics as agents of the env.

A heuristic acts on the first job of the window (heuristics keep the queue's order) with its
own allocation rule, expressed as a candidate index of the action codec
(:class:`palgym.envs.actions.ActionCodec`). The rule is the placement's candidate kind, its env
form in the registry (:class:`palgym.policies.registry.CandidateKind`): PAL takes the first
feasible entry of its cost matrix, PM-First the best-factor candidate at the top tier, Packed
and Random their own candidates. A placement registered without one (a user's Python-only
class) is asked for its own choice (:mod:`palgym.envs.policy_agent`).

Backfilling heuristics (``NAME+backfill``, ``NAME+easy``; :mod:`palgym.policies.backfill`) are
agents of the scheduling task, non-sticky placements only: they take the first window slot
whose job fits (EASY: and does not delay the head's reservation, which they rebuild from the
round's decisions so far), else end the round. Jobs they pass over stay in the window, so they
reproduce the simulator's walk with depth K (``num_slots``) exactly. Sticky backfilling is not
expressible: a sticky round offers only its first slot and ends when that job cannot be placed.
"""

from __future__ import annotations

import functools

import numpy as np

from palgym.envs.actions import ActionCodec
from palgym.envs.arguments import check_choice
from palgym.envs.candidates import WindowCandidates
from palgym.envs.decisions import DecisionRound
from palgym.envs.policy_agent import check_generic
from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES, placement_name
from palgym.policies.backfill import DEFAULT_DEPTH, Reservation, reserve, split_name
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.pal import MatrixEntry, matrix_entries
from palgym.policies.registry import (
    CLASS_REORDER_PLACEMENT_NAMES,
    STICKY_PLACEMENT_NAMES,
    CandidateKind,
    PlacementEntry,
    placement_entry,
)
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.config import SimConfig
from palgym.sim.types import FREE, NUM_PERF_CLASSES, BoolArray, FloatArray, Locality

_split_name = functools.lru_cache(maxsize=256)(split_name)  # parsed once per name, not per step
STICKY_POLICIES = STICKY_PLACEMENT_NAMES
"""The sticky placements (a view of the registry)."""
CLASS_REORDER_POLICIES = CLASS_REORDER_PLACEMENT_NAMES
"""The placements whose env rounds class-reorder (a view of the registry)."""


def check_heuristic(
    name: str, sticky: bool, class_reorder: bool, task: str | None = None,
    num_slots: int | None = None,
) -> PlacementEntry:
    """Check that the env's ``sticky`` and ``class_reorder`` (and, for a backfilling name,
    ``task`` and ``num_slots``) match the named policy, and that the env can act as it.

    Args:
        name: a registered placement name (with a backfill suffix it takes), or
            ``MODULE:CLASS``.
        sticky, class_reorder, task, num_slots: the env's settings.

    Returns:
        The placement's registry entry (its env form: :attr:`PlacementEntry.candidate`).

    Raises:
        ConfigError: naming the mismatch (e.g. ``pal`` in a sticky env, ``pal+easy`` in the
            placement task), or what the env cannot express of a placement without a
            candidate kind (:func:`palgym.envs.policy_agent.check_generic`).
    """
    base = split_name(name)[0]
    if ":" not in base:  # a MODULE:CLASS is imported and registered by placement_name
        check_choice("heuristic", base, tuple(PLACEMENT_NAMES))
    base, mode = split_name(placement_name(name, f"heuristic {name!r}"))
    entry = placement_entry(base)
    if entry.candidate is None:
        check_generic(entry, mode)
    wants_sticky = entry.sticky
    if mode != "none":
        if wants_sticky:
            raise ConfigError(f"{name}: sticky backfilling is simulator-only (a sticky env "
                              "round offers only its first slot)")
        if task is not None and task != "scheduling":
            raise ConfigError(f"{name} needs task='scheduling' (the env has {task!r})")
        if num_slots is not None and num_slots != DEFAULT_DEPTH:
            raise ConfigError(f"{name} reproduces the simulator's backfill depth "
                              f"{DEFAULT_DEPTH}: make the env with num_slots={DEFAULT_DEPTH}")
    if wants_sticky != sticky:
        raise ConfigError(
            f"{name} is {'sticky' if wants_sticky else 'non-sticky'} but the env has "
            f"sticky={sticky}: make the env with sticky={wants_sticky}"
        )
    wants_reorder = entry.class_reorder
    if wants_reorder != class_reorder:
        raise ConfigError(
            f"{name} needs class_reorder={wants_reorder} (the env has {class_reorder}): "
            f"class_reorder is an argument of the env, make it with gym.make(ENV_ID, ..., "
            f"class_reorder={wants_reorder}) (evaluate.py: --env-kwargs "
            f"class_reorder:{str(wants_reorder).lower()})"
        )
    return entry


def heuristic_slot(
    name: str, decision: DecisionRound, num_slots: int, durations: Durations = CLAIRVOYANT
) -> int | None:
    """Window slot whose job the named heuristic places next (None: it ends the round).

    Without backfilling slot 0 if its job fits; first-fit: the first slot whose job fits;
    EASY: slot 0 if it fits, else the first slot whose job fits and does not delay the head
    (slot 0's job) by :func:`replayed_reservation`.

    Args:
        name: placement name, with or without a backfill suffix.
        decision: the open round (non-sticky for a backfilling name).
        num_slots: K.
        durations: what EASY's reservation knows of job durations.
    """
    pending = decision.pending
    if not pending:
        return None
    if decision.fits(pending[0]):
        return 0
    mode = _split_name(name)[1]
    if mode == "none":
        return None
    window = pending[:num_slots]
    reservation = replayed_reservation(decision, durations) if mode == "easy" else None
    for slot in range(1, len(window)):
        if admits(decision, reservation, window[slot]):
            return slot
    return None


def admits(decision: DecisionRound, reservation: Reservation | None, job: int) -> bool:
    """EASY's admission of a backfilled job: it fits the free GPUs now and does not delay the
    head's ``reservation`` (:meth:`Reservation.allows`; None: first-fit, fitting suffices)."""
    return decision.fits(job) and (reservation is None
                                   or reservation.allows(decision.sim.view(), job))


def replayed_reservation(
    decision: DecisionRound, durations: Durations = CLAIRVOYANT
) -> Reservation:
    """The head's EASY reservation as the simulator's walk made it: from the jobs placed
    before the head (in the round's order), then charged with those placed after it.

    The head is the first pending job (it does not fit; jobs before it in the round's order
    are all placed). Non-sticky rounds only.
    """
    head = decision.pending[0]
    rank = {job: position for position, job in enumerate(decision.start)}
    head_rank = rank[head]
    later = [job for job in decision.placed if rank[job] > head_rank]
    before = decision.target.copy()
    if later:
        before[np.isin(before, later)] = FREE
    reservation = reserve(decision.sim.view(), head, before, durations)
    for job in later:
        reservation.charge(decision.sim.view(), job)
    return reservation


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
    kind: CandidateKind,
    feasible: BoolArray,
    num_gpus: int,
    num_tiers: int,
    pal_order: tuple[int, ...],
    gpus_per_node: int,
    codec: ActionCodec,
) -> int | None:
    """Candidate index a placement of candidate kind ``kind`` takes for a job (None: it does
    not fit).

    Args:
        kind: the placement's env form (:attr:`PlacementEntry.candidate`).
        feasible: bool (M,), the job's candidate feasibility.
        num_gpus: N.
        num_tiers: T_c, the number of the job class's slowdown tiers.
        pal_order: PAL's cost order for the job's class
            (:func:`pal_order`).
        gpus_per_node: G_n.
        codec: the action codec.

    Raises:
        ConfigError: ``kind`` is not a :class:`CandidateKind` (naming it and the kinds).
    """
    if kind is CandidateKind.PAL_MATRIX:
        return pal_choice(feasible, num_gpus, num_tiers, pal_order, gpus_per_node, codec)
    if kind is CandidateKind.BEST_FACTOR:
        return codec.best(num_tiers - 1)
    if kind is CandidateKind.PACKED:
        return codec.PACKED
    if kind is CandidateKind.RANDOM:
        return codec.RANDOM
    raise ConfigError(f"candidate kind must be one of {[k.value for k in CandidateKind]}, "
                      f"got {kind!r}")


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


def window_action(
    name: str,
    kind: CandidateKind,
    decision: DecisionRound,
    candidates: WindowCandidates,
    factors: SlowdownFactors,
    orders: tuple[tuple[int, ...], ...],
    codec: ActionCodec,
    durations: Durations = CLAIRVOYANT,
) -> int:
    """The action the named heuristic takes in the open round: its slot
    (:func:`heuristic_slot`) with its candidate (:func:`heuristic_candidate`), or "end round".

    Args:
        name: placement name, with or without a backfill suffix.
        kind: its candidate kind (:func:`check_heuristic`'s entry).
        decision: the open round.
        candidates: the window's candidates.
        factors: the slowdown factors the candidates were built from.
        orders: PAL's cost orders of those factors (:func:`pal_orders`).
        codec: the action codec.
        durations: what EASY's reservation knows of job durations.
    """
    slot = heuristic_slot(name, decision, codec.num_slots, durations)
    if slot is None:
        return codec.END_ROUND
    return slot_action(slot, kind, decision, candidates, factors, orders, codec)


def slot_action(
    slot: int,
    kind: CandidateKind,
    decision: DecisionRound,
    candidates: WindowCandidates,
    factors: SlowdownFactors,
    orders: tuple[tuple[int, ...], ...],
    codec: ActionCodec,
) -> int:
    """The action placing window slot ``slot``'s job with the candidate of ``kind``
    (:func:`heuristic_candidate`; "end round" when it has none); arguments as
    :func:`window_action`'s."""
    job = decision.pending[slot]
    sim = decision.sim
    jobs = sim.jobs
    perf_class = jobs.perf_class.item(job)
    choice = heuristic_candidate(
        kind, candidates.feasible[candidates.shape_of_slot.item(slot)],
        jobs.num_gpus.item(job), factors.tiers[perf_class].size, orders[perf_class],
        sim.cluster.gpus_per_node, codec,
    )
    return codec.END_ROUND if choice is None else codec.encode(slot, choice)
