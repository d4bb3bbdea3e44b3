"""palgym's own policies, registered once each (:mod:`palgym.policies.registry`): the
paper's six placements, the five queue orders and the three backfill modes, with their traits,
makers (options from ``SimConfig.policy_options``), compiled forms and env forms.

Imported by :mod:`palgym.policies`, so they are registered whenever any policy is.
"""

from __future__ import annotations

from palgym.policies.backfill import SUFFIXES, BackfillMode
from palgym.policies.compiled_forms import order_form, packed_form, random_form, ranked_form
from palgym.policies.ordering import FIFO, LAS, SRSF, SRTF, Tiresias
from palgym.policies.placement import PAL, Packed, PMFirst
from palgym.policies.random_placement import RandomPlacement
from palgym.policies.registry import (
    PLACEMENT_STREAM,
    REGISTRY,
    BackfillEntry,
    CandidateKind,
    PlacementEntry,
    PolicyContext,
    QueueOrderEntry,
)


def _pal(ctx: PolicyContext) -> PAL:
    return PAL(ctx.factors, ctx.config.locality_penalties, ctx.backfill,
               node_order=ctx.config.policy_options.pal_node_order)


def _pm_first(ctx: PolicyContext) -> PMFirst:
    return PMFirst(ctx.factors, ctx.backfill)


def _packed_sticky(ctx: PolicyContext) -> Packed:
    options = ctx.config.policy_options
    return Packed(sticky=True, backfill=ctx.backfill,
                  strict_total=options.packed_sticky_strict_total,
                  keep_victims_stopped=options.sticky_keep_victims_stopped)


def _packed_non_sticky(ctx: PolicyContext) -> Packed:
    return Packed(sticky=False, backfill=ctx.backfill)


def _random_sticky(ctx: PolicyContext) -> RandomPlacement:
    return RandomPlacement(sticky=True, backfill=ctx.backfill,
                           keep_victims_stopped=ctx.config.policy_options
                           .sticky_keep_victims_stopped)


def _random_non_sticky(ctx: PolicyContext) -> RandomPlacement:
    return RandomPlacement(sticky=False, backfill=ctx.backfill)


PLACEMENTS: tuple[PlacementEntry, ...] = (
    PlacementEntry("pal", _pal, sticky=False, class_reorder=True, backfills=True,
                   candidate=CandidateKind.PAL_MATRIX, compiled=ranked_form, kinds=(PAL,),
                   paper=True),
    PlacementEntry("pm-first", _pm_first, sticky=False, class_reorder=True, backfills=True,
                   candidate=CandidateKind.BEST_FACTOR, compiled=ranked_form, kinds=(PMFirst,),
                   paper=True),
    PlacementEntry("packed-sticky", _packed_sticky, sticky=True, backfills=True,
                   candidate=CandidateKind.PACKED, compiled=packed_form, kinds=(Packed,),
                   paper=True),
    PlacementEntry("packed-non-sticky", _packed_non_sticky, sticky=False, backfills=True,
                   candidate=CandidateKind.PACKED, compiled=packed_form, kinds=(Packed,),
                   paper=True),
    PlacementEntry("random-sticky", _random_sticky, sticky=True, streams=(PLACEMENT_STREAM,),
                   backfills=True, candidate=CandidateKind.RANDOM, compiled=random_form,
                   kinds=(RandomPlacement,), paper=True),
    PlacementEntry("random-non-sticky", _random_non_sticky, sticky=False,
                   streams=(PLACEMENT_STREAM,), backfills=True, candidate=CandidateKind.RANDOM,
                   compiled=random_form, kinds=(RandomPlacement,), paper=True),
)
"""The paper's six (PAL, SC24, Section IV), in the order of its tables."""

QUEUE_ORDERS: tuple[QueueOrderEntry, ...] = (
    QueueOrderEntry("fifo", lambda durations, options: FIFO(), compiled=order_form,
                    kinds=(FIFO,), paper=True),
    QueueOrderEntry("las", lambda durations, options: LAS(
        service=options.las_service), compiled=order_form, kinds=(LAS,),
        paper=True),
    QueueOrderEntry("srtf", lambda durations, options: SRTF(
        durations=durations, remaining=options.srtf_remaining),
        reads_durations=True, compiled=order_form, kinds=(SRTF,), paper=True),
    QueueOrderEntry("srsf", lambda durations, options: SRSF(
        durations=durations, remaining=options.srtf_remaining),
        reads_durations=True, compiled=order_form, kinds=(SRSF,)),
    QueueOrderEntry("tiresias", lambda durations, options: Tiresias(
        service=options.las_service,
        thresholds_gpu_s=options.tiresias_thresholds_gpu_s),
        compiled=order_form, kinds=(Tiresias,), paper=True),
)
"""FIFO, LAS, SRTF, SRSF and Tiresias (all but SRSF are the artifact's Blox orders)."""

BACKFILLS: tuple[BackfillEntry, ...] = tuple(
    BackfillEntry(mode.value, SUFFIXES.get(mode.value, ""),
                  reads_durations=mode is BackfillMode.EASY)
    for mode in BackfillMode
)
"""none, first-fit (``+backfill``), EASY (``+easy``, reads durations)."""


def register_all() -> None:
    """Register palgym's own policies (again: a no-op)."""
    entries: tuple[BackfillEntry | PlacementEntry | QueueOrderEntry, ...] = (
        *BACKFILLS, *PLACEMENTS, *QUEUE_ORDERS)
    for entry in entries:
        REGISTRY.add(entry)


register_all()
