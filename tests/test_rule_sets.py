"""palgym.rule_sets: the one versioned table of rule sets, and every reader's default from it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import palgym  # noqa: F401 - registers the env ids
from palgym.envs.layouts import layout_hash
from palgym.envs.selector import DEFAULT_RULES, parse_rules
from palgym.errors import ConfigError
from palgym.rule_selection import check_rules
from palgym.rule_sets import (
    ORDER_PLACEMENT_RULE_SET,
    ORDER_PLACEMENT_RULES,
    PLACEMENT_RULE_SET,
    PLACEMENT_RULES,
    RULE_SETS,
    expand_rule_set,
    rule_set,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
PRETRAINED_SELECTORS = REPO_ROOT / "agents" / "pretrained" / "rule-selector"
SELECTOR = "palgym/PALSelector-v0"


@pytest.mark.parametrize("name", sorted(RULE_SETS))
def test_each_set_is_named_versioned_and_well_formed(name: str) -> None:
    found = RULE_SETS[name]
    assert found.name == name and re.fullmatch(r"[a-z0-9-]+-v[1-9][0-9]*", name)
    assert found.rules and len(set(found.rules)) == len(found.rules)
    if found.kind == "placement":
        # names the env's one queue order runs: no ORDER/ part, each one the env can act as
        # (the selector env checks each rule when it is made)
        assert not [r for r in found.rules if "/" in r]
        env = gym.make(SELECTOR, window=8, rules=list(found.rules))
        assert env.unwrapped.rules == found.rules
    else:
        assert all("/" in r for r in found.rules)
        assert check_rules(found.rules) == found.rules


def test_every_default_is_a_published_set() -> None:
    assert rule_set(PLACEMENT_RULE_SET).kind == "placement"
    assert rule_set(ORDER_PLACEMENT_RULE_SET).kind == "order/placement"
    assert PLACEMENT_RULES == RULE_SETS[PLACEMENT_RULE_SET].rules
    assert ORDER_PLACEMENT_RULES == RULE_SETS[ORDER_PLACEMENT_RULE_SET].rules
    # PALSelector-v0 reads its default from the table
    assert DEFAULT_RULES == PLACEMENT_RULES


def test_a_set_name_stands_for_its_rules() -> None:
    placement = RULE_SETS[PLACEMENT_RULE_SET]
    assert expand_rule_set(placement.name, "placement") == ",".join(placement.rules)
    assert parse_rules(placement.name) == placement.rules
    # a plain field passes unchanged
    assert expand_rule_set("pal,pal+easy", "placement") == "pal,pal+easy"
    # a set of the other kind is refused, naming the sets of the asked kind
    with pytest.raises(ConfigError, match=ORDER_PLACEMENT_RULE_SET):
        expand_rule_set(PLACEMENT_RULE_SET, "order/placement")
    with pytest.raises(ConfigError, match="order/placement rules"):
        parse_rules(ORDER_PLACEMENT_RULE_SET)
    with pytest.raises(ConfigError, match="unknown rule set"):
        rule_set("no-such-set-v1")


def test_the_env_named_by_its_set_is_the_default_env() -> None:
    by_name = gym.make(SELECTOR, window=8, rules=PLACEMENT_RULE_SET)
    default = gym.make(SELECTOR, window=8)
    assert by_name.unwrapped.rules == default.unwrapped.rules == PLACEMENT_RULES
    assert layout_hash(by_name) == layout_hash(default)


@pytest.mark.parametrize("path", sorted(PRETRAINED_SELECTORS.glob("rule-selector-*.json")),
                         ids=lambda p: p.name)
def test_each_committed_selector_plays_a_published_set(path: Path) -> None:
    # the committed selectors' fields are published sets, in their index order: a set is
    # never edited, so these files keep their meaning
    rules = tuple(json.loads(path.read_text(encoding="utf-8"))["rules"])
    assert rules in {s.rules for s in RULE_SETS.values() if s.kind == "order/placement"}
