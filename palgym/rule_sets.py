"""The rule sets: the one versioned table of the fields a rule selector chooses among.

A **rule** is a heuristic a selector can hand the next decisions to. Two kinds of field exist,
because two kinds of selector exist:

- ``placement`` sets hold placement names (``pal+easy``): the env-level selector
  (``palgym/PALSelector-v0``, :mod:`palgym.envs.selector`) runs them under the env's one queue
  order;
- ``order/placement`` sets hold ``ORDER/PLACEMENT`` rules (``srtf/pal+backfill``): the
  engine-level selector (:mod:`palgym.rule_selection`; the learned selector of
  :mod:`agents.selection`, its rollout search and its bench entry ``selector:PATH``) switches
  queue order and placement together.

Every reader takes its default from here: :data:`PLACEMENT_RULES` is ``PALSelector-v0``'s
default ``rules``; :data:`ORDER_PLACEMENT_RULES` is the learned selector's training field
(``python -m agents.selection train --rules``) and its rollout search's field; its first rule
is the search's start and the evaluation's default. Anywhere a field is taken as a string, a
set's name stands for its rules (:func:`expand_rule_set`).

A set is frozen once published: a selector file records its rules by name and index
(``palgym-rule-selector/2``), an env layout hashes them, and a results file records both. To add
a rule, add a set with the next version (``NAME-vN+1``) and point the default at it; the old
set stays, so every committed file keeps its meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from palgym.errors import ConfigError

RuleKind = Literal["placement", "order/placement"]


@dataclass(frozen=True)
class RuleSet:
    """One published field of rules.

    Attributes:
        name: ``FAMILY-vN``, the table's key (N counts the versions of one family).
        kind: ``placement`` (names the env's queue order runs) or ``order/placement``
            (``ORDER/PLACEMENT`` rules the engine selector runs).
        rules: the rules in index order (a selector's action ``h`` is ``rules[h]``).
        why: what the field holds and where it is measured.
    """

    name: str
    kind: RuleKind
    rules: tuple[str, ...]
    why: str


RULE_SETS: dict[str, RuleSet] = {s.name: s for s in (
    RuleSet("pal-placements-v1", "placement",
            ("pal", "pal+backfill", "pal+easy", "pm-first", "pm-first+backfill", "pm-first+easy"),
            "PAL and PM-First, each without backfilling, with first-fit and with EASY "
            "backfilling: the class-reordered placements of the scheduling study "
            "(docs/RESULTS.md); Packed and Random need class_reorder=False and make a field "
            "of their own"),
    RuleSet("pal-orders-v1", "order/placement",
            ("srtf/pal+backfill", "srtf/pal+easy", "fifo/pal+backfill", "fifo/pal+easy",
             "srsf/pal+backfill", "srsf/pal+easy"),
            "PAL under each queue order that reads durations or arrival times, with first-fit "
            "and with EASY backfilling; the first is the rollout search's start "
            "(agents/pretrained/README.md, the clairvoyant selectors)"),
    RuleSet("pal-unknown-v1", "order/placement",
            ("las/pal+backfill", "fifo/pal+backfill", "las/pal", "fifo/pal"),
            "PAL under the queue orders that read no job durations (LAS, FIFO), with and "
            "without first-fit backfilling: the field of a task that hides durations "
            "(agents/pretrained/README.md, the scheduling-unknown selectors)"),
)}
"""Every published rule set, by name (never edited: a change is a new version)."""

PLACEMENT_RULE_SET = "pal-placements-v1"
"""The rule set ``palgym/PALSelector-v0`` defaults to."""
ORDER_PLACEMENT_RULE_SET = "pal-orders-v1"
"""The rule set the learned selector trains on by default, and its rollout search's field."""


def rule_set(name: str) -> RuleSet:
    """The published set ``name``.

    Raises:
        ConfigError: for an unknown name, listing the known ones.
    """
    if name not in RULE_SETS:
        raise ConfigError(f"unknown rule set {name!r}; the rule sets are {sorted(RULE_SETS)}")
    return RULE_SETS[name]


def expand_rule_set(rules: str, kind: RuleKind) -> str:
    """``rules`` with a rule set's name replaced by its comma-joined rules; any other string
    (a comma-separated field) unchanged.

    Raises:
        ConfigError: for the name of a set of the other kind.
    """
    found = RULE_SETS.get(rules.strip())
    if found is None:
        return rules
    if found.kind != kind:
        raise ConfigError(f"rule set {found.name!r} holds {found.kind} rules; give a set of "
                          f"{kind} rules: "
                          f"{sorted(n for n, s in RULE_SETS.items() if s.kind == kind)}")
    return ",".join(found.rules)


PLACEMENT_RULES: tuple[str, ...] = RULE_SETS[PLACEMENT_RULE_SET].rules
"""``PALSelector-v0``'s default field (:data:`PLACEMENT_RULE_SET`)."""
ORDER_PLACEMENT_RULES: tuple[str, ...] = RULE_SETS[ORDER_PLACEMENT_RULE_SET].rules
"""The learned selector's default field (:data:`ORDER_PLACEMENT_RULE_SET`)."""
