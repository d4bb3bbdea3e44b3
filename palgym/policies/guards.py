"""Aging guards as heuristic names: a base rule that hands the cluster to another rule once a
job has queued too long.

Grammar (one place; every name argument that takes ``[ORDER/]PLACEMENT[+SUFFIX]`` takes it)::

    [BASE_ORDER/]BASE_PLACEMENT[+SUFFIX]+age=<HOURS>h:ALT_ORDER/ALT_PLACEMENT[+SUFFIX]

e.g. ``srtf/pal+backfill+age=32h:fifo/pal+easy``: ``srtf/pal+backfill`` schedules until the
longest-queued job has queued more than 32 h (now - submit - attained service), then
``fifo/pal+easy`` schedules while that holds. ``HOURS`` is a finite number > 0; the ``h`` is
required. Without ``BASE_ORDER/`` the base runs under the episode's queue order; the
alternative always names its order. The part before the first ``/`` is the base order, so the
*placement* of a guard name is everything after it (``pal+backfill+age=32h:fifo/pal+easy``):
``run_episode(episode, policy="pal+backfill+age=32h:fifo/pal+easy", queue_order="srtf")``.

The guard is asked when the engine's rule selection asks a selector (at the first round and
at every round with an event: :mod:`palgym.rule_selection`), so the guard of rules (a, b) at
H hours plays ``LinearSelector.guard((a, b), H, 1)``'s episode bit for bit. Why such a guard
matters: the aging threshold is what most of a learned rule selector's win over
``srtf/pal+backfill`` is made of (docs/RESULTS.md); aging against starvation is the classic
remedy of priority schedulers (e.g. Tiresias's promotion, Gu et al., NSDI'19, Section 4.2;
Slurm's multifactor priority age factor).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from palgym.errors import ConfigError

GUARD_TOKEN = "+age="
"""What makes a placement name a guard."""
GUARD_HOURS: tuple[float, ...] = (8, 16, 24, 32, 48)
"""The thresholds (h) of the default guards (:func:`default_guards`)."""
_HOURS = re.compile(r"(?P<hours>[0-9]+(?:\.[0-9]+)?)h")


@dataclass(frozen=True)
class GuardName:
    """A parsed guard placement (module docstring).

    Attributes:
        base_placement: the base rule's placement with its suffix (``pal+backfill``).
        hours: the threshold (h, finite, > 0).
        alt_order: the alternative rule's queue order (``fifo``).
        alt_placement: the alternative rule's placement with its suffix (``pal+easy``).
    """

    base_placement: str
    hours: float
    alt_order: str
    alt_placement: str

    @property
    def placement(self) -> str:
        """The guard's placement text: ``BASE+age=Hh:ALT_ORDER/ALT``."""
        return (f"{self.base_placement}{GUARD_TOKEN}{self.hours:g}h:"
                f"{self.alt_order}/{self.alt_placement}")

    def rules(self, base_order: str) -> tuple[str, str]:
        """The two rules, ``(BASE_ORDER/BASE, ALT_ORDER/ALT)``."""
        return f"{base_order}/{self.base_placement}", f"{self.alt_order}/{self.alt_placement}"


def is_guard(placement: str) -> bool:
    """True for a guard placement text (it holds :data:`GUARD_TOKEN`)."""
    return GUARD_TOKEN in placement


def parse_guard(placement: str, where: str = "guard") -> GuardName:
    """Parse a guard placement ``BASE+age=Hh:ALT_ORDER/ALT`` (its base order, if any, split
    off before).

    Args:
        placement: the text after the base order.
        where: what gave it, at the head of an error.

    Returns:
        The parsed guard (its placements checked against the registry, its orders against
        the queue orders).

    Raises:
        ConfigError: naming ``where``, the text and the part at fault.
    """
    from palgym.policies import QUEUE_ORDER_NAMES, placement_name

    base, _, rest = placement.partition(GUARD_TOKEN)
    threshold, sep, alternative = rest.partition(":")
    shape = "BASE+age=HOURSh:ORDER/PLACEMENT, e.g. pal+backfill+age=32h:fifo/pal+easy"
    match = _HOURS.fullmatch(threshold)
    if not base or not sep or match is None:
        raise ConfigError(f"{where} {placement!r}: a guard is {shape}")
    hours = float(match.group("hours"))
    if not (math.isfinite(hours) and hours > 0):
        raise ConfigError(f"{where} {placement!r}: the hours must be a finite number > 0")
    alt_order, slash, alt_placement = alternative.partition("/")
    if not slash or alt_order not in QUEUE_ORDER_NAMES:
        raise ConfigError(f"{where} {placement!r}: the alternative names its queue order, one "
                          f"of {list(QUEUE_ORDER_NAMES)} ({shape})")
    if is_guard(alt_placement) or is_guard(base):
        raise ConfigError(f"{where} {placement!r}: a guard holds one threshold")
    base = placement_name(base, f"{where} {placement!r}")
    alt_placement = placement_name(alt_placement, f"{where} {placement!r}")
    return GuardName(base, hours, alt_order, alt_placement)


def default_guards(duration_knowledge: str = "clairvoyant") -> list[str]:
    """The aging guards a default field of whole schedules holds (``evaluate.py``'s default
    ``--best-field``, palgym-bench-v2's scheduling tasks), at every :data:`GUARD_HOURS`
    threshold: with job durations known, ``srtf/pal+backfill`` and ``srsf/pal+backfill``
    handing over to ``fifo/pal+easy`` (the rules a learned selector's win was made of,
    docs/RESULTS.md); with durations unknown (no SRTF, SRSF or EASY), ``fifo/pal+backfill``
    handing over to ``fifo/pal`` (first-fit backfilling stopped once a job has queued too
    long).

    Raises:
        ConfigError: for a knowledge other than ``clairvoyant`` / ``unknown``.
    """
    if duration_knowledge not in ("clairvoyant", "unknown"):
        raise ConfigError(f"duration knowledge {duration_knowledge!r}: clairvoyant or unknown")
    if duration_knowledge == "unknown":
        pairs = [("fifo/pal+backfill", "fifo/pal")]
    else:
        pairs = [("srtf/pal+backfill", "fifo/pal+easy"), ("srsf/pal+backfill", "fifo/pal+easy")]
    return [f"{base}{GUARD_TOKEN}{hours:g}h:{alt}" for base, alt in pairs for hours in GUARD_HOURS]
