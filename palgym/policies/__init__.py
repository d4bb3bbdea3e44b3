"""Queue orders and placement policies, by the names used in CLIs and result tables.

Placement: ``pal``, ``pm-first``, ``packed-sticky``, ``packed-non-sticky``, ``random-sticky``,
``random-non-sticky``, each also with backfilling as ``NAME+backfill`` (first-fit) or
``NAME+easy`` (EASY; :mod:`palgym.policies.backfill`). Queue orders: ``fifo``, ``las``,
``srtf``, ``srsf``, ``tiresias`` (``srtf`` and ``srsf`` need job durations:
:data:`DURATION_ORDER_NAMES`).
"""

from __future__ import annotations

from palgym.errors import ConfigError
from palgym.policies.backfill import (
    BACKFILL_MODES,
    DEFAULT_DEPTH,
    Backfill,
    BackfillMode,
    split_name,
    with_backfill,
)
from palgym.policies.base import NumpySampler, PlacementPolicy, QueueOrder, Sampler, make_sampler
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.ordering import FIFO, LAS, SRSF, SRTF, Tiresias
from palgym.policies.placement import PAL, Packed, PMFirst, RandomPlacement
from palgym.policies.slowdown import ClusterCountRule, SlowdownFactors
from palgym.sim.config import PolicyOptions, SimConfig

PLACEMENT_NAMES: tuple[str, ...] = (
    "pal", "pm-first", "packed-sticky", "packed-non-sticky", "random-sticky", "random-non-sticky",
)
QUEUE_ORDER_NAMES: tuple[str, ...] = ("fifo", "las", "srtf", "srsf", "tiresias")
DURATION_ORDER_NAMES: tuple[str, ...] = ("srtf", "srsf")
"""The queue orders that read job durations (refused under ``duration_knowledge='unknown'``)."""
BACKFILL_PLACEMENT_NAMES: tuple[str, ...] = tuple(
    with_backfill(name, mode) for mode in BACKFILL_MODES[1:] for name in PLACEMENT_NAMES
)
"""Every placement with first-fit, then with EASY backfilling (``pal+backfill``, ...)."""


def is_placement_name(name: str) -> bool:
    """True for a placement name, with or without a backfill suffix."""
    return name in PLACEMENT_NAMES or name in BACKFILL_PLACEMENT_NAMES


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
        name: one of :data:`QUEUE_ORDER_NAMES`.
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
    if name == "srtf":
        return SRTF(durations=durations, remaining=options.srtf_remaining)
    if name == "srsf":
        return SRSF(durations=durations, remaining=options.srtf_remaining)
    if name == "las":
        return LAS(service=options.las_service)
    if name == "tiresias":
        return Tiresias(service=options.las_service,
                        thresholds_gpu_s=options.tiresias_thresholds_gpu_s)
    if name == "fifo":
        return FIFO()
    raise ConfigError(f"unknown queue order {name!r}; known: {', '.join(QUEUE_ORDER_NAMES)}")


def make_placement(
    name: str, factors: SlowdownFactors, config: SimConfig, backfill: str | None = None,
    depth: int | None = None, durations: Durations = CLAIRVOYANT,
) -> PlacementPolicy:
    """The placement policy called ``name``, its options filled from ``config``.

    Args:
        name: one of :data:`PLACEMENT_NAMES`, optionally with a backfill suffix
            (``pal+easy``; :data:`BACKFILL_PLACEMENT_NAMES`).
        factors: slowdown factors (used by ``pal`` and ``pm-first``).
        config: the episode's configuration: PAL's cost matrix takes its locality penalties
            (``SimConfig.locality_penalties``) and node order, Packed its strict-total rule,
            sticky walks the victims rule (``SimConfig.policy_options``).
        backfill: ``none`` | ``first-fit`` | ``easy`` (None: the name's suffix, else none;
            a suffix and a different mode conflict).
        depth: jobs a backfilling walk may skip before it stops (default
            :data:`palgym.policies.backfill.DEFAULT_DEPTH`).
        durations: what EASY backfilling knows of job durations (its remaining times).

    Raises:
        ConfigError: for an unknown name or mode, a suffix contradicting ``backfill``, or
            ``depth`` < 1 (listing the known names), or EASY backfilling under
            ``duration_knowledge='unknown'``.
    """
    base, suffix_mode = split_name(name)
    mode = suffix_mode if backfill is None else backfill
    if suffix_mode != "none" and mode != suffix_mode:
        raise ConfigError(f"placement {name!r} names backfill {suffix_mode!r}, not {mode!r}")
    if mode not in BACKFILL_MODES:
        raise ConfigError(f"unknown backfill {mode!r}; known: {', '.join(BACKFILL_MODES)}")
    try:
        bf = Backfill(BackfillMode(mode), DEFAULT_DEPTH if depth is None else depth, durations)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    options = config.policy_options
    if base == "pal":
        return PAL(factors, config.locality_penalties, bf, node_order=options.pal_node_order)
    if base == "pm-first":
        return PMFirst(factors, bf)
    stopped = options.sticky_keep_victims_stopped
    simple: dict[str, PlacementPolicy] = {
        "packed-sticky": Packed(sticky=True, backfill=bf,
                                strict_total=options.packed_sticky_strict_total,
                                keep_victims_stopped=stopped),
        "packed-non-sticky": Packed(sticky=False, backfill=bf),
        "random-sticky": RandomPlacement(sticky=True, backfill=bf, keep_victims_stopped=stopped),
        "random-non-sticky": RandomPlacement(sticky=False, backfill=bf),
    }
    if base not in simple:
        raise ConfigError(f"unknown placement {name!r}; known: {', '.join(PLACEMENT_NAMES)} "
                          "(each also as NAME+backfill or NAME+easy)")
    return simple[base]


__all__ = [
    "BACKFILL_MODES", "BACKFILL_PLACEMENT_NAMES", "CLAIRVOYANT", "DURATION_ORDER_NAMES", "FIFO",
    "LAS", "PAL", "PLACEMENT_NAMES", "QUEUE_ORDER_NAMES", "SRSF", "SRTF", "ClusterCountRule",
    "Durations",
    "NumpySampler", "PMFirst", "Packed", "PlacementPolicy", "PolicyOptions", "QueueOrder",
    "RandomPlacement", "Sampler", "SlowdownFactors", "Tiresias", "is_placement_name",
    "make_placement", "make_queue_order", "make_sampler", "policy_options",
]
