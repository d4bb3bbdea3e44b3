"""A learned value plus a cut search as a saved selector (``palgym-value-search/1``,
:mod:`agents.selection.value_entry`): it decides as the search it was saved from, it loads as
a ``selector:`` entry, and a malformed file is refused naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agents.selection.entry import load_selector
from agents.selection.search import RolloutSearch
from agents.selection.selector import LinearSelector, StarvationFloor
from agents.selection.value import FEATURES, LinearValue
from agents.selection.value_entry import (
    FORMAT,
    ValueSearch,
    load_value_search,
    save_value_search,
)
from palgym import make_episode, preset
from palgym.bench.suites import file_sha256
from palgym.errors import ConfigError
from palgym.policies import make_queue_order
from palgym.policies.durations import CLAIRVOYANT
from palgym.rule_selection import run_selected_episode
from palgym.tracesets.manifest import split_traces
from palgym.tracesets.sets import job_range

RULES = ["srtf/pal+backfill", "srsf/pal+backfill", "fifo/pal+easy"]
WEIGHTS = np.array([3600.0, 0.0, -600.0, 900.0, 0.0, 1800.0, 0.0, 0.0, 60.0, 0.0, 0.0])


def base() -> LinearSelector:
    """The constant ``srsf`` member under a 24 h floor to ``fifo/pal+easy``."""
    return LinearSelector.constant(RULES, 1).with_floor(StarvationFloor(24.0, 2))


def episode():  # type: ignore[no-untyped-def]
    trace = job_range(split_traces("bundled", "train")[0], 0, 30, "window")
    return make_episode(trace, config=preset("pal-artifact"), seed=0)


def test_saved_search_decides_as_the_search_it_was_saved_from(tmp_path: Path) -> None:
    # ValueSearch is the known-jobs RolloutSearch with LinearValue over rule 1's queue order:
    # the same choices, cost for cost, as the search built by hand; and its file loads to a
    # search that decides the same again.
    run = episode()
    order = make_queue_order("srsf", CLAIRVOYANT, run.config)
    by_hand = RolloutSearch(RULES, base(), 4, estimate=LinearValue(WEIGHTS, order),
                            arrivals="known", rounds=20, budget=30)
    saved = ValueSearch(RULES, base(), WEIGHTS, 1, 4, 20, 30)
    path = save_value_search(tmp_path / "v.json", saved, {"seed": 0})
    loaded = load_value_search(path)
    outcomes = []
    for search in (by_hand, saved, loaded):
        metrics = run_selected_episode(run, RULES, search).result.metrics
        outcomes.append((metrics.avg_jct_s, search.stats.choices, search.stats.costs))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert by_hand.stats.searched > 0  # rules disagreed: the value priced something
    doc = json.loads(path.read_text())
    assert doc["format"] == FORMAT and doc["training"] == {"seed": 0}
    assert doc["cut"] == {"H": 4, "rounds": 20, "budget": 30, "halving": False}
    assert doc["value"]["order_rule"] == "srsf/pal+backfill"
    assert list(doc["value"]["weights"]) == list(FEATURES)
    assert loaded.to_dict() == saved.to_dict()


def test_selector_entry_loads_either_kind(tmp_path: Path) -> None:
    path = save_value_search(tmp_path / "v.json", ValueSearch(RULES, base(), WEIGHTS, 1, None,
                                                             160, 320), {})
    loaded = load_selector(f"selector:{path}")
    assert isinstance(loaded.select, ValueSearch) and not loaded.select.halving
    assert loaded.rules == tuple(RULES) and loaded.sha256 == file_sha256(path)
    halved = save_value_search(tmp_path / "h.json", ValueSearch(
        RULES, base(), WEIGHTS, 1, 20, 160, 320, halving=True), {})
    assert load_selector(f"selector:{halved}").select.halving  # type: ignore[attr-defined]
    rule_selector = base().save(tmp_path / "s.json")
    assert isinstance(load_selector(f"selector:{rule_selector}").select, LinearSelector)


def _broken(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    doc = ValueSearch(RULES, base(), WEIGHTS, 1, 20, 160, 320).to_dict()
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("edit", "field"), [
    (lambda d: d.update(format="palgym-value-search/9"), "field format"),
    (lambda d: d.update(extra=1), "unknown field(s) ['extra']"),
    (lambda d: d.update(rules="srtf/pal"), "field rules"),
    (lambda d: d.update(rules=["srtf/pal", "srtf/pal"]), "field rules"),
    (lambda d: d["base"].update(rules=RULES[:2]), "field base"),
    (lambda d: d["base"].update(weights=[[1.0, "x"]]), "base.weights[0][1]"),
    (lambda d: d["value"]["weights"].pop("age_h"), "missing ['age_h']"),
    (lambda d: d["value"]["weights"].update(speed=1.0), "unknown ['speed']"),
    (lambda d: d["value"]["weights"].update(age_h=True), "field value.weights.age_h"),
    (lambda d: d["value"]["weights"].update(age_h="1"), "field value.weights.age_h"),
    (lambda d: d["value"].update(order_rule="las/pal"), "field value.order_rule"),
    (lambda d: d["value"].update(extra=1), "field value"),
    (lambda d: d["cut"].update(H=-1), "field cut.H"),
    (lambda d: d["cut"].update(rounds=0), "field cut.rounds"),
    (lambda d: d["cut"].update(budget=1), "field cut.budget: an integer >= 2 or null"),
    (lambda d: d["cut"].update(budget="320"), "field cut.budget"),
    (lambda d: d.pop("cut"), "field cut: expected an object"),
    (lambda d: d["cut"].update(halving="yes"), "field cut.halving"),
    (lambda d: d["cut"].pop("halving"), "field cut"),
])
def test_malformed_files_are_refused_naming_the_field(tmp_path: Path, edit, field) -> None:  # type: ignore[no-untyped-def]
    path = _broken(tmp_path, edit)
    with pytest.raises(ConfigError) as error:
        load_value_search(path)
    assert str(path) in str(error.value) and field in str(error.value)
    with pytest.raises(ConfigError, match="bad.json"):
        load_selector(f"selector:{path}")


def test_value_search_refuses_an_order_rule_outside_the_field() -> None:
    with pytest.raises(ConfigError, match="order_rule"):
        ValueSearch(RULES, base(), WEIGHTS, 3, 20, 160, 320)
    with pytest.raises(ConfigError, match="value weights"):
        ValueSearch(RULES, base(), WEIGHTS[:3], 1, 20, 160, 320)
