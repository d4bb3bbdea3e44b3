"""The contender names of ``evaluate.py``'s arguments.

The grammar lives in one place, :mod:`palgym.policies.contender_spec`
(:func:`~palgym.policies.contender_spec.parse_contender`: heuristic names, guards,
``MODULE:CLASS``, models, ``selector:``, ``planner:``, ``best`` / ``field``;
:func:`~palgym.policies.contender_spec.parse_heuristic`: ``[ORDER/]PLACEMENT[+backfill|+easy]``),
re-exported here. This module holds what ``evaluate.py`` adds: argparse types
(:func:`contender_arg` for ``--policy`` / ``--agent``, :func:`heuristic_arg` for
``--reference``, ``--baseline``, ``--best-field``), the sorting of ``--policy`` / ``--agent``
specs by kind (:func:`sort_contenders`), the import of a user's ``MODULE:CLASS``
(:func:`load_user_classes`) and the names the heuristic table runs (:func:`table_name`,
:func:`table_policies`: ``--policy`` crossed with ``--backfill``).

``best`` (:data:`BEST`) names the best combination of the field chosen on the selection split
(side by side only, :mod:`agents.evaluation.best_contender`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES, queue_order_name
from palgym.policies.backfill import with_backfill
from palgym.policies.contender_spec import (
    BEST,
    ORDER_SEPARATOR,
    HeuristicName,
    format_label,
    known_names_text,
    parse_contender,
    parse_heuristic,
)
from palgym.policies.guards import is_guard
from palgym.policies.loader import SPEC_SEPARATOR


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


def contender_arg() -> Callable[[str], str]:
    """An argparse ``type`` of ``--policy`` / ``--agent``: any contender spec that runs in
    ``evaluate.py`` (:func:`palgym.policies.contender_spec.parse_contender`); a heuristic
    name becomes its label, a ``MODULE:CLASS`` or guard name and every other kind stay as
    given (sorted into their lists by :func:`sort_contenders`). Else an
    ``argparse.ArgumentTypeError`` naming the value and where its kind runs."""
    def check(text: str) -> str:
        try:
            spec = parse_contender(text, "").require("evaluate", "")
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).strip()) from None
        if spec.kind != "heuristic":
            return text
        try:
            return parse_heuristic(text, "").label
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(
                f"{str(exc).strip()}; nor is it another contender spec: a model (.zip, run "
                "folder, pretrained[:NAME]), selector:PATH, planner:SPEC or best") from None

    return check


def sort_contenders(args: argparse.Namespace) -> None:
    """Sort the specs of ``--policy`` and ``--agent`` by kind: models stay (or go) in
    ``args.agent``, planners join ``args.planner``, rule selectors make ``args.selector``,
    heuristic names (and ``best``) ``args.policy``, each list in the order given (``--policy``
    first).

    Raises:
        ConfigError: for a kind that does not run in ``evaluate.py`` (naming where it runs).
    """
    lists: dict[str, list[str]] = {"learned": [], "selector": [], "planner": [], "policy": []}
    for flag, values in (("--policy", getattr(args, "policy", None) or []),
                         ("--agent", getattr(args, "agent", None) or [])):
        for text in values:
            spec = parse_contender(text, flag).require("evaluate", flag)
            kind = spec.kind if spec.kind in lists else "policy"
            lists[kind].append(spec.body if kind == "planner" else text)
    args.agent = lists["learned"] or None
    args.selector = lists["selector"] or None
    args.planner = [*(getattr(args, "planner", None) or []), *lists["planner"]] or None
    args.policy = lists["policy"] or None


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


def table_name(text: str, argument: str) -> str:
    """A heuristic name the heuristic table (or the field of ``--best-heuristic``) can run:
    ``PLACEMENT[+SUFFIX]``, with no ``ORDER/`` (it crosses ``--queue-order``) and not ``best``.

    Raises:
        ConfigError: naming the argument and the value.
    """
    if text == BEST:
        raise ConfigError(f"{argument} {BEST!r} is a side-by-side contender (chosen on "
                          "--selection-split of --trace-set), not a placement of the heuristic "
                          "table or of --best-heuristic's field")
    name = parse_heuristic(text, argument)
    if name.queue_order is not None:
        raise ConfigError(
            f"{argument} {text!r}: here queue orders come from --queue-order (give "
            f"--queue-order {name.queue_order} {argument} {name.placement_name}); "
            "ORDER/PLACEMENT names are side-by-side contenders (--trace-set)")
    return text


def table_policies(args: argparse.Namespace) -> list[str]:
    """``--policy`` (default: every placement) crossed with ``--backfill``; a name with a
    backfill suffix is taken as it is, and refused beside ``--backfill``.

    Raises:
        ConfigError: naming the argument and the value.
    """
    names = [table_name(text, "--policy") for text in args.policy or PLACEMENT_NAMES]
    suffixed = [n for n in names if parse_heuristic(n).backfill != "none"]
    if suffixed and args.backfill:
        raise ConfigError(f"--policy {suffixed[0]!r} names its backfill mode: leave out "
                          "--backfill, or give the placement without its suffix")
    return [with_backfill(name, mode) if parse_heuristic(name).backfill == "none" else name
            for mode in args.backfill or ["none"] for name in names]


__all__ = ["BEST", "NAME_ARGUMENTS", "ORDER_SEPARATOR", "HeuristicName", "contender_arg",
           "format_label", "heuristic_arg", "importable_from_cwd", "known_names_text",
           "load_user_classes", "parse_contender", "parse_heuristic", "sort_contenders",
           "table_name", "table_policies"]
