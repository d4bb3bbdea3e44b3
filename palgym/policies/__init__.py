"""Queue orders and placement policies, by the names used in CLIs and result tables.

Every name is registered once (:mod:`palgym.policies.registry`; palgym's own in
:mod:`palgym.policies.catalog`, a user's class with :func:`register_placement` /
:func:`register_queue_order` or as ``MODULE:CLASS``), and every list of names here is a live
view of the registry. palgym's placements: ``pal``, ``pm-first``, ``packed-sticky``,
``packed-non-sticky``, ``random-sticky``, ``random-non-sticky`` (the paper's six,
:data:`PAPER_PLACEMENT_NAMES`), each also with backfilling as ``NAME+backfill`` (first-fit) or
``NAME+easy`` (EASY; :mod:`palgym.policies.backfill`). Queue orders: ``fifo``, ``las``,
``srtf``, ``srsf``, ``tiresias`` (``srtf`` and ``srsf`` need job durations:
:data:`DURATION_ORDER_NAMES`).
"""

from __future__ import annotations

from palgym.errors import ConfigError
from palgym.policies import catalog as catalog  # registers palgym's own policies
from palgym.policies.backfill import (
    DEFAULT_DEPTH,
    Backfill,
    BackfillMode,
    split_name,
)
from palgym.policies.base import NumpySampler, PlacementPolicy, QueueOrder, Sampler, make_sampler
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.loader import (
    placement_name,
    queue_order_name,
    register_placement,
    register_queue_order,
    unregister,
)
from palgym.policies.ordering import FIFO, LAS, SRSF, SRTF, Tiresias
from palgym.policies.placement import PAL, Packed, PMFirst, RandomPlacement
from palgym.policies.registry import (
    BACKFILL_MODES,
    BACKFILL_PLACEMENT_NAMES,
    DURATION_ORDER_NAMES,
    PAPER_PLACEMENT_NAMES,
    PLACEMENT_NAMES,
    QUEUE_ORDER_NAMES,
    PolicyContext,
    backfill_entry,
    placement_entry,
    queue_order_entry,
)
from palgym.policies.slowdown import ClusterCountRule, SlowdownFactors
from palgym.sim.config import PolicyOptions, SimConfig


def is_placement_name(name: str) -> bool:
    """True for a registered placement name, with or without a backfill suffix it takes."""
    base, mode = split_name(name)
    return base in PLACEMENT_NAMES and (mode == "none" or name in BACKFILL_PLACEMENT_NAMES)


def policy_options(config: SimConfig | PolicyOptions) -> PolicyOptions:
    """The policy options of ``config`` (a configuration or the options themselves).

    Raises:
        ConfigError: if ``config`` is neither (e.g. None: there is no implicit default; pass
            ``preset("default")`` or ``PolicyOptions()`` for the defaults).
    """
    if isinstance(config, SimConfig):
        return config.policy_options
    if isinstance(config, PolicyOptions):
        return config
    raise ConfigError(f"config must be a SimConfig or PolicyOptions, not {config!r}: pass the "
                      "episode's configuration (PolicyOptions() for the default options)")


def make_queue_order(
    name: str, durations: Durations, config: SimConfig | PolicyOptions,
) -> QueueOrder:
    """The queue order called ``name``, knowing job durations as ``durations`` does.

    Args:
        name: one of :data:`QUEUE_ORDER_NAMES`, or ``MODULE:CLASS`` (a user's class,
            imported and registered: :func:`palgym.policies.loader.queue_order_name`).
        durations: what the order knows of job durations (SRTF's remaining times;
            :data:`CLAIRVOYANT`: the true work).
        config: where the order's options come from (``las_service``, ``srtf_remaining``,
            ``tiresias_thresholds_gpu_s``): the episode's configuration, or its
            :class:`PolicyOptions`. Required: a preset's orders differ from the defaults
            (``pal-artifact``: wall-clock LAS service, nominal SRTF remaining time).

    Raises:
        ConfigError: for an unknown name (listing the known ones), a ``config`` that is
            neither a configuration nor policy options, or ``srtf`` / ``srsf`` when
            ``durations`` withholds durations.
    """
    options = policy_options(config)
    return queue_order_entry(queue_order_name(name)).make(durations, options)


def make_placement(
    name: str, factors: SlowdownFactors, config: SimConfig, backfill: str | None = None,
    depth: int | None = None, durations: Durations = CLAIRVOYANT,
) -> PlacementPolicy:
    """The placement policy called ``name``, its options filled from ``config``.

    Args:
        name: one of :data:`PLACEMENT_NAMES`, optionally with a backfill suffix
            (``pal+easy``; :data:`BACKFILL_PLACEMENT_NAMES`), or ``MODULE:CLASS`` (a user's
            class, imported and registered: :func:`palgym.policies.loader.placement_name`).
        factors: slowdown factors (used by ``pal``, ``pm-first`` and a class taking
            ``factors``).
        config: the episode's configuration: PAL's cost matrix takes its locality penalties
            (``SimConfig.locality_penalties``) and node order, Packed its strict-total rule,
            sticky walks the victims rule (``SimConfig.policy_options``).
        backfill: ``none`` | ``first-fit`` | ``easy`` (None: the name's suffix, else none;
            a suffix and a different mode conflict).
        depth: jobs a backfilling walk may skip before it stops (default
            :data:`palgym.policies.backfill.DEFAULT_DEPTH`).
        durations: what EASY backfilling knows of job durations (its remaining times).

    Raises:
        ConfigError: for an unknown name or mode, a suffix contradicting ``backfill``, a mode
            the placement does not take, or ``depth`` < 1 (listing the known names), or EASY
            backfilling under ``duration_knowledge='unknown'``.
    """
    base, suffix_mode = split_name(placement_name(name))
    mode = suffix_mode if backfill is None else backfill
    if suffix_mode != "none" and mode != suffix_mode:
        raise ConfigError(f"placement {name!r} names backfill {suffix_mode!r}, not {mode!r}")
    backfill_entry(mode)
    entry = placement_entry(base)
    if mode != "none" and not entry.backfills:
        raise ConfigError(f"placement {base!r} takes no backfill mode ({mode!r} asked)")
    try:
        bf = Backfill(BackfillMode(mode), DEFAULT_DEPTH if depth is None else depth, durations)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return entry.make(PolicyContext(factors, config, bf, durations))


__all__ = [
    "BACKFILL_MODES", "BACKFILL_PLACEMENT_NAMES", "CLAIRVOYANT", "DURATION_ORDER_NAMES", "FIFO",
    "LAS", "PAL", "PAPER_PLACEMENT_NAMES", "PLACEMENT_NAMES", "QUEUE_ORDER_NAMES", "SRSF",
    "SRTF", "ClusterCountRule", "Durations", "NumpySampler", "PMFirst", "Packed",
    "PlacementPolicy", "PolicyContext", "PolicyOptions", "QueueOrder", "RandomPlacement",
    "Sampler", "SlowdownFactors", "Tiresias", "is_placement_name", "make_placement",
    "make_queue_order", "make_sampler", "placement_name", "policy_options", "queue_order_name",
    "register_placement", "register_queue_order", "unregister",
]
