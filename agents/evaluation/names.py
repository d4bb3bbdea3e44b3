"""Heuristic names, parsed in one place: ``[ORDER/]PLACEMENT[+backfill|+easy]``.

One naming for every table and argument of the evaluation (the heuristic table's policy
column, ``--best-heuristic``'s field, side-by-side contenders, ``--reference``,
``--baseline``):

- ``PLACEMENT`` is one of :data:`palgym.policies.PLACEMENT_NAMES` (``pal``, ``pm-first``,
  ``packed-sticky``, ...);
- the suffix is the backfill mode (:data:`palgym.policies.backfill.SUFFIXES`): ``+backfill``
  first-fit, ``+easy`` EASY, none without backfilling (``pal+backfill``, ``pm-first+easy``);
- the prefix ``ORDER/`` is the queue order (:data:`palgym.policies.QUEUE_ORDER_NAMES`), e.g.
  ``srsf/pal+backfill``, ``las/pm-first+easy``; without it the heuristic runs under the
  episode's queue order (``--queue-order``, or the env's default).

``best`` (:data:`BEST`) names the best combination of the field chosen on the selection split
(side by side only, :mod:`agents.evaluation.best_contender`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES
from palgym.policies.backfill import SUFFIXES, split_name, with_backfill

BEST = "best"
"""The name of the best heuristic combination chosen on the selection split."""
ORDER_SEPARATOR = "/"
"""Between the queue order and the placement: ``srsf/pal+backfill``."""


@dataclass(frozen=True)
class HeuristicName:
    """A parsed heuristic name.

    Attributes:
        queue_order: its own queue order, or None (the episode's).
        placement: the placement without suffix (one of :data:`PLACEMENT_NAMES`).
        backfill: the backfill mode (``none``, ``first-fit``, ``easy``).
    """

    queue_order: str | None
    placement: str
    backfill: str

    @property
    def placement_name(self) -> str:
        """The placement with its backfill suffix (``pal+backfill``)."""
        return with_backfill(self.placement, self.backfill)

    @property
    def label(self) -> str:
        """The canonical name: ``ORDER/PLACEMENT+SUFFIX`` (no ``ORDER/`` without an order)."""
        return format_label(self.queue_order, self.placement_name)


def format_label(queue_order: str | None, placement_name: str) -> str:
    """``ORDER/PLACEMENT_NAME``, or ``PLACEMENT_NAME`` when ``queue_order`` is None."""
    return placement_name if queue_order is None else (
        f"{queue_order}{ORDER_SEPARATOR}{placement_name}")


def known_names_text() -> str:
    """What a heuristic name may be, for error messages."""
    return (f"[ORDER/]PLACEMENT[{'|'.join(SUFFIXES.values())}] with ORDER one of "
            f"{', '.join(QUEUE_ORDER_NAMES)} and PLACEMENT one of {', '.join(PLACEMENT_NAMES)}")


def parse_heuristic(text: str, argument: str = "heuristic") -> HeuristicName:
    """Parse ``[ORDER/]PLACEMENT[+backfill|+easy]``.

    Args:
        text: the name, e.g. ``srsf/pal+backfill``.
        argument: what gave it (``--policy``, a file and field, ...), named in the error.

    Returns:
        The parsed name (its :attr:`~HeuristicName.label` equals ``text``).

    Raises:
        ConfigError: naming ``argument`` and ``text``, for an unknown queue order, placement
            or suffix, or an empty part.
    """
    order: str | None = None
    rest = text
    if ORDER_SEPARATOR in text:
        order, rest = text.split(ORDER_SEPARATOR, 1)
        if order not in QUEUE_ORDER_NAMES:
            raise ConfigError(f"{argument} {text!r}: unknown queue order {order!r}; expected "
                              f"{known_names_text()}")
    placement, backfill = split_name(rest)
    if placement not in PLACEMENT_NAMES:
        raise ConfigError(f"{argument} {text!r}: unknown placement {placement!r}; expected "
                          f"{known_names_text()}")
    return HeuristicName(order, placement, backfill)


def heuristic_arg(argument: str, allow_best: bool = False) -> Callable[[str], str]:
    """An argparse ``type``: the text if it parses (:func:`parse_heuristic`), or ``best``
    when ``allow_best``; else an ``argparse.ArgumentTypeError`` naming the value."""
    def check(text: str) -> str:
        if allow_best and text == BEST:
            return text
        try:
            parse_heuristic(text, "")
        except ConfigError as exc:
            extra = f" (or '{BEST}')" if allow_best else ""
            raise argparse.ArgumentTypeError(f"{str(exc).strip()}{extra}") from None
        return text

    return check
