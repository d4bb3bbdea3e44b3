"""The names of the policy registry (palgym.policies.registry): every name is registered once
with its traits, every list of names is a view of it (a user's class joins the views by its
traits), a class missing or mistyping a member is refused naming it, and docs/CONCEPTS.md's
policy table is the registry's. A user's class run by name everywhere: tests/test_registry.py,
which defines the classes (conftest.py puts the registry back after every test).
"""

from __future__ import annotations

from typing import Any

import pytest

from palgym import ConfigError
from palgym.policies import (
    BACKFILL_MODES,
    BACKFILL_PLACEMENT_NAMES,
    DURATION_ORDER_NAMES,
    PAPER_PLACEMENT_NAMES,
    PLACEMENT_NAMES,
    QUEUE_ORDER_NAMES,
    register_placement,
    unregister,
)
from palgym.policies.registry import (
    CLASS_REORDER_PLACEMENT_NAMES,
    COMPILED_PLACEMENT_NAMES,
    DRAWING_PLACEMENT_NAMES,
    STICKY_PLACEMENT_NAMES,
)
from tests.test_registry import PAPER_SIX, PackedInPython, StickyKeeper


def test_palgyms_own_names_are_views_of_the_registry() -> None:
    # Invariants, not counts: a contributor's placement or queue order joins the views
    # without editing this test. The paper's six come first, in the paper's order, and keep
    # their traits; every view is a subset of the names, in the names' order.
    assert PAPER_PLACEMENT_NAMES == PAPER_SIX == PLACEMENT_NAMES[:len(PAPER_SIX)]
    assert QUEUE_ORDER_NAMES[:5] == ("fifo", "las", "srtf", "srsf", "tiresias")
    assert {"srtf", "srsf"} <= set(DURATION_ORDER_NAMES)
    assert not {"fifo", "las", "tiresias"} & set(DURATION_ORDER_NAMES)
    assert set(STICKY_PLACEMENT_NAMES) & set(PAPER_SIX) == {"packed-sticky", "random-sticky"}
    assert set(CLASS_REORDER_PLACEMENT_NAMES) & set(PAPER_SIX) == {"pal", "pm-first"}
    assert set(DRAWING_PLACEMENT_NAMES) & set(PAPER_SIX) == {"random-sticky",
                                                           "random-non-sticky"}
    assert COMPILED_PLACEMENT_NAMES[:len(PAPER_SIX)] == PAPER_SIX
    for view in (DURATION_ORDER_NAMES,):
        assert [n for n in QUEUE_ORDER_NAMES if n in view] == list(view)
    for view in (STICKY_PLACEMENT_NAMES, CLASS_REORDER_PLACEMENT_NAMES,
                 DRAWING_PLACEMENT_NAMES, COMPILED_PLACEMENT_NAMES):
        assert [n for n in PLACEMENT_NAMES if n in view] == list(view)
    # each backfilling name is a placement and a suffix; the paper's six take both suffixes
    assert {f"{n}{s}" for s in ("+backfill", "+easy") for n in PAPER_SIX} <= set(
        BACKFILL_PLACEMENT_NAMES)
    assert all(n.rsplit("+", 1)[0] in PLACEMENT_NAMES and n.rsplit("+", 1)[1] in
               ("backfill", "easy") for n in BACKFILL_PLACEMENT_NAMES)


def test_a_registered_class_joins_the_views_by_its_traits() -> None:
    before, backfilling = tuple(PLACEMENT_NAMES), tuple(BACKFILL_PLACEMENT_NAMES)
    register_placement(PackedInPython)
    register_placement(StickyKeeper)
    assert PLACEMENT_NAMES == (*before, "packed-in-python", "sticky-keeper")
    assert PAPER_PLACEMENT_NAMES == PAPER_SIX
    assert "sticky-keeper" in STICKY_PLACEMENT_NAMES
    assert "packed-in-python" not in STICKY_PLACEMENT_NAMES
    assert "packed-in-python" not in COMPILED_PLACEMENT_NAMES
    assert BACKFILL_PLACEMENT_NAMES == backfilling  # its constructor takes no backfill mode
    assert register_placement(PackedInPython) is PackedInPython  # again: a no-op
    unregister("sticky-keeper")
    assert PLACEMENT_NAMES == (*before, "packed-in-python")
    with pytest.raises(ConfigError, match="'pal' is one of palgym's own"):
        unregister("pal")


def test_names_are_registered_once() -> None:
    class Pal(PackedInPython):
        name = "pal"

    with pytest.raises(ConfigError, match=r"placement name 'pal' is already registered \(palgym"):
        register_placement(Pal)

    class Suffixed(PackedInPython):
        name = "mine+easy"

    with pytest.raises(ConfigError, match="ends in the backfill suffix '\\+easy'"):
        register_placement(Suffixed)

    class Colon(PackedInPython):
        name = "my:placement"

    with pytest.raises(ConfigError, match="without spaces at its ends, '/' or ':'"):
        register_placement(Colon)


@pytest.mark.parametrize(("members", "message"), [
    ({"place": None}, r"Broken is not a placement policy: it lacks the place\(\) method"),
    ({"sticky": None}, "it lacks sticky as a class attribute"),
    ({"sticky": "no"}, r"Broken.sticky must be a bool, got 'no'"),
    ({"name": 3}, "Broken.name must be a non-empty str, got 3"),
    ({"__init__": lambda self, width: None}, "Broken\\(\\) needs 'width', which palgym cannot "
                                             "fill"),
])
def test_a_class_missing_or_mistyping_a_member_is_refused_naming_it(
        members: dict[str, Any], message: str) -> None:
    namespace = {"name": "broken", "sticky": False, "deterministic": True,
                 "place": PackedInPython.place, **members}
    broken = type("Broken", (), {k: v for k, v in namespace.items() if v is not None})
    with pytest.raises(ConfigError, match=message):
        register_placement(broken)
    assert "broken" not in PLACEMENT_NAMES


def test_the_docs_policy_table_is_the_registry() -> None:
    """docs/CONCEPTS.md holds policy_table()'s text between its markers (regenerate it from
    ``palgym.policies.table.policy_table()`` when a policy or trait changes)."""
    from pathlib import Path

    from palgym.policies.table import policy_table

    text = (Path(__file__).resolve().parents[1] / "docs" / "CONCEPTS.md").read_text()
    begin, end = "<!-- policy-table: begin -->\n", "<!-- policy-table: end -->"
    assert begin in text and end in text
    assert text.split(begin, 1)[1].split(end, 1)[0] == policy_table()
    rows = [line for line in policy_table().splitlines() if line.startswith("| `")]
    # one row per placement, queue order and backfill mode
    assert len(rows) == len(PLACEMENT_NAMES) + len(QUEUE_ORDER_NAMES) + len(BACKFILL_MODES)
