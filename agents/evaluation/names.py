"""Heuristic names, parsed in one place: ``[ORDER/]PLACEMENT[+backfill|+easy]``.

One naming for every table and argument of the evaluation (the heuristic table's policy
column, ``--best-heuristic``'s field, side-by-side contenders, ``--reference``,
``--baseline``):

- ``PLACEMENT`` is one of :data:`palgym.policies.PLACEMENT_NAMES` (``pal``, ``pm-first``,
  ``packed-sticky``, ..., and any registered class), or a user's class as ``MODULE:CLASS``
  (imported and registered, then named by its ``name``);
- the suffix is the backfill mode (:data:`palgym.policies.backfill.SUFFIXES`): ``+backfill``
  first-fit, ``+easy`` EASY, none without backfilling (``pal+backfill``, ``pm-first+easy``);
- an aging guard ``BASE+age=Hh:ALT_ORDER/ALT`` (:mod:`palgym.policies.guards`) is a
  placement too: ``srtf/pal+backfill+age=32h:fifo/pal+easy`` (it runs on the engine's rule
  selection);
- the prefix ``ORDER/`` is the queue order (:data:`palgym.policies.QUEUE_ORDER_NAMES`, or
  ``MODULE:CLASS``), e.g.
  ``srsf/pal+backfill``, ``las/pm-first+easy``; without it the heuristic runs under the
  episode's queue order (``--queue-order``, or the env's default).

``best`` (:data:`BEST`) names the best combination of the field chosen on the selection split
(side by side only, :mod:`agents.evaluation.best_contender`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES, QUEUE_ORDER_NAMES, placement_name, queue_order_name
from palgym.policies.backfill import SUFFIXES, split_name, with_backfill
from palgym.policies.guards import is_guard, parse_guard
from palgym.policies.loader import SPEC_SEPARATOR
from palgym.policies.registry import BACKFILLING_PLACEMENT_NAMES

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
            f"{', '.join(QUEUE_ORDER_NAMES)} and PLACEMENT one of {', '.join(PLACEMENT_NAMES)} "
            "(or either as MODULE:CLASS)")


def parse_heuristic(text: str, argument: str = "heuristic") -> HeuristicName:
    """Parse ``[ORDER/]PLACEMENT[+backfill|+easy]``.

    Args:
        text: the name, e.g. ``srsf/pal+backfill``.
        argument: what gave it (``--policy``, a file and field, ...), named in the error.

    Returns:
        The parsed name (its :attr:`~HeuristicName.label` equals ``text``, with a user's
        ``MODULE:CLASS`` replaced by the name it registers).

    Raises:
        ConfigError: naming ``argument`` and ``text``, for an unknown queue order, placement
            or suffix, an empty part, or a ``MODULE:CLASS`` that cannot be imported or
            registered.
    """
    order: str | None = None
    rest = text
    where = f"{argument} {text!r}".strip()
    if ORDER_SEPARATOR in text and not is_guard(text.split(ORDER_SEPARATOR, 1)[0]):
        order, rest = text.split(ORDER_SEPARATOR, 1)
        if SPEC_SEPARATOR in order:  # a user's class: imported and registered
            order = queue_order_name(order, where)
        if order not in QUEUE_ORDER_NAMES:
            raise ConfigError(f"{where}: unknown queue order {order!r}; expected "
                              f"{known_names_text()}")
    if is_guard(rest):  # BASE+age=Hh:ALT_ORDER/ALT (palgym.policies.guards)
        return HeuristicName(order, parse_guard(rest, argument or "guard").placement, "none")
    if SPEC_SEPARATOR in rest:
        rest = placement_name(rest, where)
    placement, backfill = split_name(rest)
    if placement not in PLACEMENT_NAMES:
        raise ConfigError(f"{where}: unknown placement {placement!r}; expected "
                          f"{known_names_text()}")
    if backfill != "none" and placement not in BACKFILLING_PLACEMENT_NAMES:
        raise ConfigError(f"{where}: placement {placement!r} takes no backfill mode")
    return HeuristicName(order, placement, backfill)


def heuristic_arg(argument: str, allow_best: bool = False) -> Callable[[str], str]:
    """An argparse ``type``: the name's label if it parses (:func:`parse_heuristic`), ``best``
    when ``allow_best``, or a text naming a user's ``MODULE:CLASS`` as it is (imported after
    parsing, where an error is one line: :func:`load_user_classes`); else an
    ``argparse.ArgumentTypeError`` naming the value."""
    def check(text: str) -> str:
        if (allow_best and text == BEST) or (SPEC_SEPARATOR in text and not is_guard(text)):
            return text  # a MODULE:CLASS is loaded after parsing (load_user_classes)
        try:
            return parse_heuristic(text, "").label
        except ConfigError as exc:
            extra = f" (or '{BEST}')" if allow_best else ""
            raise argparse.ArgumentTypeError(f"{str(exc).strip()}{extra}") from None

    return check


NAME_ARGUMENTS: tuple[str, ...] = ("policy", "best_field", "baseline", "reference")
"""The ``evaluate.py`` arguments that hold heuristic names (a list or one name)."""


def load_user_classes(args: argparse.Namespace) -> None:
    """Import and register every user class the command line names as ``MODULE:CLASS``
    (``--policy``, ``--best-field``, ``--baseline``, ``--reference``, ``--queue-order``; the
    module importable from the current directory too) and put the name it registers in its
    place, so the rest of the run (and its worker processes) use names.

    Raises:
        ConfigError: naming the argument and the value, for a module that cannot be imported,
            a missing attribute, or a class lacking a member (or with one of the wrong type).
    """
    def named(text: str, flag: str) -> str:
        if SPEC_SEPARATOR not in text:
            return text
        importable_from_cwd()
        return parse_heuristic(text, flag).label

    for attribute in NAME_ARGUMENTS:
        flag = "--" + attribute.replace("_", "-")
        value = getattr(args, attribute, None)
        if isinstance(value, list):
            setattr(args, attribute, [named(text, flag) for text in value])
        elif isinstance(value, str):
            setattr(args, attribute, named(value, flag))
    orders = getattr(args, "queue_order", None)
    if orders:
        if any(SPEC_SEPARATOR in text for text in orders):
            importable_from_cwd()
        args.queue_order = [queue_order_name(text, f"--queue-order {text!r}") for text in orders]


def importable_from_cwd() -> None:
    """Let ``MODULE:CLASS`` name a module of the current directory, as ``python -m`` does
    (the current directory first on ``sys.path``; worker processes inherit it)."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
