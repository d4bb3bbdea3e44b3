"""The work-conserving scheduling task (``work_conserving=True``): only sensible moves.

A scheduling env (``task="scheduling"``) lets the agent end a round while jobs still fit, so
most of its actions leave GPUs idle for nothing. Learned schedulers learn when their action
space holds only sensible moves: work-conserving (never idle while a job fits) unless
reserving on purpose. With ``work_conserving=True`` the env's actions are
``Discrete(K * M + 2)`` (:class:`~palgym.envs.actions.ActionCodec` with ``reserve``):

- ``k * M + m``: place window slot k's job with candidate m (valid when the candidate is
  feasible; after RESERVE, only if EASY admits the job: :func:`palgym.envs.heuristics.admits`);
- ``K * M``, END_ROUND: valid only when no placement is valid (nothing in the window fits),
  or after RESERVE in this round;
- ``K * M + 1``, RESERVE: valid when the round's head job (the first job of the round's queue
  order still waiting, ``DecisionRound.pending[0]``, as EASY backfilling defines it) does not
  fit now and no reservation was made this round. It fixes EASY's reservation for the head
  (:func:`palgym.policies.backfill.reserve` on the round's allocation so far: the shadow time
  and the extra GPUs), places nothing, and from then on in the round only the placements EASY
  admits stay valid (each placed job is charged to the reservation), plus END_ROUND.

The observation is the scheduling task's with the round's reservation at the end of its
``cluster`` row (:data:`palgym.envs.observations.RESERVATION_FEATURES`: whether RESERVE was
taken this round, the shadow time from now, the extra GPUs / G).

Heuristics stay expressible, bit for bit (:func:`conserving_action`): ``NAME+backfill`` acts
as in the scheduling task (it never ends a round while a window job fits); ``NAME+easy`` takes
RESERVE at a blocked head, then the placements EASY admits, then END_ROUND (the reservation it
made is the one :func:`palgym.envs.heuristics.replayed_reservation` rebuilds, since only jobs
before the head are placed when it is made); plain ``NAME`` (which stops at a blocked head)
takes RESERVE, then END_ROUND.

Source of RESERVE's semantics: EASY backfilling, Lifka, "The ANL/IBM SP scheduling system",
JSSPP 1995; Mu'alem and Feitelson, "Utilization, predictability, workloads, and user runtime
estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001.
"""

from __future__ import annotations

import functools

import numpy as np

from palgym.envs.actions import ActionCodec
from palgym.envs.candidates import WindowCandidates
from palgym.envs.decide import Decision
from palgym.envs.decisions import DecisionRound
from palgym.envs.heuristics import admits, slot_action, window_action
from palgym.errors import ConfigError
from palgym.policies.backfill import reserve, split_name
from palgym.policies.durations import CLAIRVOYANT, EASY_INSTEAD, Durations
from palgym.policies.registry import CandidateKind
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.types import BoolArray

_split_name = functools.lru_cache(maxsize=256)(split_name)


def check_work_conserving(work_conserving: object, task: str, durations: Durations) -> bool:
    """``work_conserving`` if the env can have it.

    Raises:
        ConfigError: it is not a bool; it is True in the placement task (whose rounds place
            their whole fitting prefix, so no round idles while a job fits) or with
            ``duration_knowledge="unknown"`` (RESERVE's shadow time needs durations).
    """
    if not isinstance(work_conserving, bool):
        raise ConfigError(f"work_conserving must be a bool, got {work_conserving!r}")
    if work_conserving:
        if task != "scheduling":
            raise ConfigError(f"work_conserving=True needs task='scheduling' (the env has task="
                              f"{task!r}, whose rounds place their whole fitting prefix)")
        durations.require_known("work_conserving=True (RESERVE's EASY reservation)",
                                EASY_INSTEAD)
    return work_conserving


def can_reserve(decision: DecisionRound) -> bool:
    """RESERVE is valid: no reservation was made this round and the head job (the first
    pending one) does not fit now."""
    pending = decision.pending
    return decision.reservation is None and bool(pending) and not decision.fits(pending[0])


def conserving_mask(decision: DecisionRound, mask: BoolArray, codec: ActionCodec) -> BoolArray:
    """bool (K*M+2,): the work-conserving env's valid actions (the module docstring).

    Args:
        decision: the open round.
        mask: bool (K*M+1,), the scheduling task's mask of the open decision (its
            placements: the feasible candidates of the selectable slots).
        codec: the env's codec (with ``reserve``).
    """
    valid = np.zeros(codec.n, np.bool_)
    end, size = codec.END_ROUND, codec.num_candidates
    valid[:end] = mask[:end]
    reservation = decision.reservation
    if reservation is not None:
        for slot, job in enumerate(decision.window(codec.num_slots)):
            if not admits(decision, reservation, job):
                valid[slot * size: (slot + 1) * size] = False
    valid[end] = reservation is not None or not valid[:end].any()
    valid[codec.RESERVE] = can_reserve(decision)
    return valid


def conserving_decision(decision: Decision, round_: DecisionRound | None,
                        codec: ActionCodec) -> Decision:
    """``decision`` with the work-conserving mask (:func:`conserving_mask`); after the
    episode's end (``round_`` None) only END_ROUND is valid."""
    if round_ is None:
        mask = np.zeros(codec.n, np.bool_)
        mask[codec.END_ROUND] = True
    else:
        mask = conserving_mask(round_, decision.mask, codec)
    return decision._replace(mask=mask)


def make_reservation(decision: DecisionRound, durations: Durations = CLAIRVOYANT) -> None:
    """Apply RESERVE: EASY's reservation for the head on the round's allocation so far
    (:func:`palgym.policies.backfill.reserve`), kept in ``decision.reservation``.

    Raises:
        ValueError: RESERVE is not valid now (:func:`can_reserve`; a caller's bug).
    """
    if not can_reserve(decision):
        raise ValueError("RESERVE is valid only with a blocked head and no reservation made")
    decision.reservation = reserve(decision.sim.view(), decision.pending[0], decision.target,
                                   durations)


def conserving_action(  # noqa: PLR0913 - window_action's arguments
    name: str,
    kind: CandidateKind,
    decision: DecisionRound,
    candidates: WindowCandidates,
    factors: SlowdownFactors,
    orders: tuple[tuple[int, ...], ...],
    codec: ActionCodec,
    durations: Durations = CLAIRVOYANT,
) -> int:
    """The named heuristic's action in a work-conserving env (the module docstring):
    before a reservation, first-fit and a fitting head act as in the scheduling task
    (:func:`palgym.envs.heuristics.window_action`), a blocked head makes EASY and plain
    names RESERVE; after it, EASY (and first-fit) take the first window slot EASY admits,
    plain names end the round. Arguments as :func:`window_action`'s (``codec`` with
    ``reserve``)."""
    mode = _split_name(name)[1]
    reservation = decision.reservation
    if reservation is None:
        if mode != "first-fit" and can_reserve(decision):
            return codec.RESERVE
        return window_action(name, kind, decision, candidates, factors, orders, codec,
                             durations)
    if mode != "none":
        for slot, job in enumerate(decision.window(codec.num_slots)):
            if admits(decision, reservation, job):
                return slot_action(slot, kind, decision, candidates, factors, orders, codec)
    return codec.END_ROUND


def conserving_generic(action: int, decision: DecisionRound, codec: ActionCodec,
                       name: str) -> int:
    """A placement's own action (:class:`palgym.envs.policy_agent.PolicyAgent`) in a
    work-conserving env: its "end round" at a blocked head becomes RESERVE (then "end round",
    as plain names do).

    Raises:
        ConfigError: the placement leaves the head job waiting though it fits (a deferral the
            work-conserving env does not offer), naming it.
    """
    if action != codec.END_ROUND or decision.reservation is not None:
        return action
    if can_reserve(decision):
        return codec.RESERVE
    head = decision.pending[0] if decision.pending else -1
    raise ConfigError(f"placement {name!r} leaves job {head} waiting though it fits: a "
                      "work-conserving env (work_conserving=True) never idles while a job "
                      "fits; make the env with work_conserving=False")
