"""The one ``key=value`` spec parser (palgym.io.spec_text) and the specs that use it."""

from __future__ import annotations

import pytest

from palgym.errors import ConfigError
from palgym.io.spec_text import parse_key_values

KEYS = ("base", "K", "H")


def test_items_become_stripped_values_in_the_given_order() -> None:
    given = parse_key_values(" planner:H=end, K= 4 ,,base=pal ", KEYS, "planner spec",
                             prefix="planner:")
    assert given == {"H": "end", "K": "4", "base": "pal"}
    assert list(given) == ["H", "K", "base"]


def test_default_and_empty_take_no_key_and_the_last_value_wins() -> None:
    assert parse_key_values("default", KEYS, "s") == {}
    assert parse_key_values("", KEYS, "s") == {}
    assert parse_key_values("K=1,default,K=2", KEYS, "s") == {"K": "2"}


def test_the_prefix_is_dropped_only_at_the_start() -> None:
    assert parse_key_values("planner:K=3", KEYS, "s", prefix="planner:") == {"K": "3"}
    with pytest.raises(ConfigError, match="'planner:K=3' is not key=value"):
        parse_key_values("planner:K=3", KEYS, "s")


@pytest.mark.parametrize("item", ["speed=1", "K", "k=1", "=4"])
def test_a_bad_item_names_the_spec_the_item_and_the_known_keys(item: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_key_values(f"K=1,{item}", KEYS, "planner spec")
    assert str(caught.value) == (f"planner spec 'K=1,{item}': {item!r} is not key=value with "
                                 "a key among ['base', 'K', 'H']")
