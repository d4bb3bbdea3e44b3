"""The ``best`` contender of a side-by-side run, and the heuristic field of the command line.

``best`` (``--policy best``, ``--reference best``, ``--baseline best``) is the combination of
the field (``--best-field``, default: every queue order x placement x backfill mode) with the
lowest geomean average JCT on ``--selection-split`` of the trace sets
(:func:`agents.evaluation.best.choose_best`), on the same episode kwargs and seeds as the
comparison. It is then run beside the agents on ``--split`` under its own label
(``srsf/pal+backfill``), on the identical episodes, with the same bootstrap. The choice never
sees the measured split: the two splits must differ, the selection split may not be ``test``,
and no selection trace may be an evaluation trace.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from agents.evaluation.best import BestHeuristic, Combination, choose_best, field_of, field_of_names
from agents.evaluation.names import BEST
from agents.evaluation.traces import split_of_sets, split_source
from palgym.errors import ConfigError
from palgym.policies import BACKFILL_MODES, DURATION_ORDER_NAMES, PLACEMENT_NAMES, QUEUE_ORDER_NAMES
from palgym.policies.durations import parse_knowledge
from palgym.policies.guards import default_guards
from palgym.policies.registry import DURATION_BACKFILL_MODES
from palgym.sim.workload import Trace
from palgym.sweep import Runner

TEST_SPLIT = "test"
"""The split no choice is ever made on."""
UNKNOWN_NOTE = ("duration_knowledge 'unknown': the field leaves out srtf, srsf and EASY "
                "backfilling (all need job durations)")


def check_selection_split(selection_split: str, split: str) -> None:
    """The best heuristic is chosen on other traces than it is measured on, never on test.

    Raises:
        ConfigError: naming both arguments, when the splits are equal or the selection split
            is ``test``.
    """
    if selection_split == split:
        raise ConfigError(f"--selection-split and --split are both {split!r}: the best "
                          "heuristic must be chosen on other traces than it is measured on")
    if selection_split == TEST_SPLIT:
        raise ConfigError(f"--selection-split {TEST_SPLIT!r}: the best heuristic is never "
                          "chosen on the test split; choose on validation (the default) or "
                          "train")


def default_field(queue_orders: Sequence[str] | None, placements: Sequence[str] | None,
                  backfills: Sequence[str] | None, duration_knowledge: str | None,
                  env_id: str | None = None) -> tuple[list[Combination], str | None]:
    """Every order x placement x backfill (None: all), and a note when unknown durations
    leave srtf, srsf and EASY out of a default dimension (else None). On a scheduling env
    (``PALScheduling``: a contender brings its own queue order) the whole default field (no
    dimension given) adds the aging guards of
    :func:`palgym.policies.guards.default_guards` for the duration knowledge.

    Raises:
        ConfigError: ``duration_knowledge`` is not None or a known name; see
            :func:`~agents.evaluation.best.field_of`.
    """
    if duration_knowledge is not None:
        parse_knowledge(duration_knowledge)
    orders, modes = list(queue_orders or QUEUE_ORDER_NAMES), list(backfills or BACKFILL_MODES)
    note = None
    if duration_knowledge == "unknown":
        orders = list(queue_orders or [o for o in QUEUE_ORDER_NAMES
                                       if o not in DURATION_ORDER_NAMES])
        modes = list(backfills or [b for b in BACKFILL_MODES
                                   if b not in DURATION_BACKFILL_MODES])
        note = None if (queue_orders and backfills) else UNKNOWN_NOTE
    field = field_of(orders, placements or PLACEMENT_NAMES, modes)
    if (env_id is not None and "Scheduling" in env_id and queue_orders is None
            and placements is None and backfills is None):
        field += field_of_names(default_guards(duration_knowledge or "clairvoyant"), "guards")
    return field, note


def uses_best(args: argparse.Namespace) -> bool:
    """True when ``best`` names a side-by-side contender, reference or baseline."""
    return BEST in (args.policy or []) or BEST in (args.reference, args.baseline)


def side_by_side_field(args: argparse.Namespace, env_id: str | None = None
                       ) -> list[Combination]:
    """``--best-field`` (explicit names), or the default field of ``env_id``
    (:func:`default_field`); prints the unknown note."""
    if args.best_field:
        return field_of_names(args.best_field, "--best-field")
    field, note = default_field(None, None, None, args.duration_knowledge, env_id)
    if note:
        print(note)
    return field


def choose_for_side_by_side(
    args: argparse.Namespace, env_id: str, overrides: Mapping[str, Any],
    evaluation: Sequence[Trace], seeds: Sequence[int], runner: Runner | None,
) -> BestHeuristic:
    """Choose ``best`` on ``--selection-split`` of ``--trace-set`` (default: bundled).

    Raises:
        ConfigError: with ``--trace`` (the choice needs trace-set splits), for the splits
            :func:`check_selection_split` refuses, or shared traces.
    """
    if args.trace:
        raise ConfigError(f"'{BEST}' is chosen on --selection-split of trace sets: give "
                          "--trace-set (not --trace)")
    check_selection_split(args.selection_split, args.split)
    sets, source = split_source(args.trace_set, args.selection_split)
    selection = split_of_sets(sets, args.selection_split, args.duration_unit)
    return choose_best(env_id, overrides, side_by_side_field(args, env_id), selection, source,
                       seeds,
                       evaluation, runner)


def resolve_best(
    args: argparse.Namespace, heuristics: Sequence[str], env_id: str,
    overrides: Mapping[str, Any], evaluation: Sequence[Trace], seeds: Sequence[int],
    runner: Runner | None,
) -> tuple[BestHeuristic | None, tuple[list[str], str, str]]:
    """The choice behind ``best`` (None if no contender is ``best``) and the heuristics,
    reference and baseline with ``best`` replaced by the winner's label.

    Raises:
        ConfigError: as :func:`choose_for_side_by_side`, or for ``--best-field`` without
            ``best``.
    """
    names = (list(heuristics), args.reference, args.baseline)
    if not uses_best(args):
        if args.best_field:
            raise ConfigError(f"--best-field is the field '{BEST}' is chosen among: give "
                              f"--policy {BEST} (or --reference {BEST})")
        return None, names
    choice = choose_for_side_by_side(args, env_id, overrides, evaluation, seeds, runner)
    return choice, (substitute(names[0], choice.winner), substitute([names[1]], choice.winner)[0],
                    substitute([names[2]], choice.winner)[0])


def substitute(names: Sequence[str], winner: str) -> list[str]:
    """``names`` with ``best`` replaced by the winner's label (duplicates dropped)."""
    return list(dict.fromkeys(winner if name == BEST else name for name in names))
