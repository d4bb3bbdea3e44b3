"""Aging guards as heuristic names (palgym/policies/guards.py): the grammar, their runs on the
engine's rule selection, and their reach (run_episode, evaluate.py's names)."""

from __future__ import annotations

import pytest

from palgym import make_episode, preset, read_sia_trace, run_episode
from palgym.bundled import bundled_trace_paths
from palgym.errors import ConfigError
from palgym.policies.guards import GuardName, is_guard, parse_guard

GUARD = "pal+backfill+age=32h:fifo/pal+easy"


def episode(config: str = "pal-artifact"):
    return make_episode(read_sia_trace(bundled_trace_paths()["sia-philly-gen-4"]),
                        config=preset(config))


def test_grammar():
    parsed = parse_guard(GUARD)
    assert parsed == GuardName("pal+backfill", 32.0, "fifo", "pal+easy")
    assert parsed.placement == GUARD
    assert parsed.rules("srtf") == ("srtf/pal+backfill", "fifo/pal+easy")
    assert parse_guard("pm-first+age=1.5h:srsf/packed-non-sticky").hours == 1.5
    assert is_guard(GUARD) and not is_guard("pal+backfill")


@pytest.mark.parametrize("text, part", [
    ("pal+backfill+age=32:fifo/pal+easy", "BASE\\+age=HOURSh"),
    ("pal+backfill+age=0h:fifo/pal+easy", "hours must be"),
    ("pal+backfill+age=-3h:fifo/pal+easy", "BASE\\+age=HOURSh"),
    ("pal+backfill+age=32h:pal+easy", "names its queue order"),
    ("pal+backfill+age=32h:lifo/pal+easy", "names its queue order"),
    ("pal+backfill+age=32h:fifo/nope", "nope"),
    ("+age=32h:fifo/pal+easy", "BASE\\+age=HOURSh"),
    ("pal+age=8h:fifo/pal+backfill+age=9h:fifo/pal", "one threshold"),
])
def test_malformed_guards_are_refused_naming_the_part(text, part):
    with pytest.raises(ConfigError, match=part):
        parse_guard(text, "--policy")


def test_a_guard_plays_the_hand_set_selector_guard_bit_for_bit():
    from agents.selection.selector import LinearSelector
    from palgym.rule_selection import run_selected_episode

    ep = episode()
    rules = ("srtf/pal+backfill", "fifo/pal+easy")
    guard = run_episode(ep, GUARD, "srtf")
    selector = LinearSelector.guard(rules, 32.0, 1)
    assert guard.metrics == run_selected_episode(ep, rules, selector).result.metrics
    assert guard.policy == GUARD and guard.queue_order == "srtf"


def test_a_guard_that_never_fires_is_its_base_rule():
    """No job of the trace queues 100,000 h: the guard is srtf/pal+backfill throughout."""
    ep = episode("default")
    never = run_episode(ep, "pal+backfill+age=100000h:fifo/pal+easy", "srtf")
    assert never.metrics == run_episode(ep, "pal+backfill", "srtf").metrics


def test_run_episode_refuses_what_a_guard_cannot_take():
    ep = episode("default")
    with pytest.raises(ConfigError, match="belief"):
        run_episode(ep, GUARD, "srtf", belief="stale")
    with pytest.raises(ConfigError, match="Python loop"):
        run_episode(ep, GUARD, "srtf", driver="compiled")


def test_evaluate_heuristic_table_runs_a_guard(capsys):
    import evaluate

    assert evaluate.main(["--trace", "sia-philly-gen-0", "--queue-order", "srtf",
                          "--policy", "pal+backfill", GUARD]) in (0, None)
    out = capsys.readouterr().out
    assert GUARD in out and "160/160" in out


@pytest.mark.parametrize("config", ["default", "pal-artifact"])
def test_a_guards_schedule_is_recorded_and_replays_bit_for_bit(config):
    """Both rules' placements record into one schedule; its replay is the guard's episode."""
    from palgym.schedule_record import record_episode, replay_schedule

    ep = episode(config)
    guard = "pal+backfill+age=8h:fifo/pal+easy"
    plain = run_episode(ep, guard, "srtf")
    recorded = record_episode(ep, guard, "srtf")
    assert recorded.result.metrics == plain.metrics
    assert replay_schedule(ep, recorded.record).metrics == plain.metrics


def test_default_guards_cover_every_threshold_and_parse() -> None:
    from palgym.policies.guards import GUARD_HOURS, default_guards, parse_guard

    for knowledge, base, alt in (("clairvoyant", "pal+backfill", "fifo/pal+easy"),
                                 ("unknown", "pal+backfill", "fifo/pal")):
        names = default_guards(knowledge)
        hours = sorted(parse_guard(n.split("/", 1)[1]).hours for n in names)
        assert set(hours) == set(GUARD_HOURS) == {8, 16, 24, 32, 48}
        for name in names:
            guard = parse_guard(name.split("/", 1)[1])
            assert guard.base_placement == base
            assert f"{guard.alt_order}/{guard.alt_placement}" == alt
        if knowledge == "unknown":  # no rule that needs durations
            assert not any(o in n for n in names for o in ("srtf", "srsf", "easy"))


def test_the_default_field_holds_guards_on_the_scheduling_env_only() -> None:
    from agents.evaluation.best_contender import default_field
    from palgym.policies.guards import default_guards

    plain, _ = default_field(None, None, None, None)
    scheduling, _ = default_field(None, None, None, None, "palgym/PALScheduling-v0")
    placement, _ = default_field(None, None, None, None, "palgym/PALPlacement-v0")
    assert placement == plain and not any("+age=" in c.placement for c in plain)
    added = scheduling[len(plain):]
    assert scheduling[:len(plain)] == plain
    assert [f"{c.queue_order}/{c.placement}" for c in added] == default_guards()
    # a field narrowed by the user stays as given
    narrowed, _ = default_field(["fifo"], None, None, None, "palgym/PALScheduling-v0")
    assert not any("+age=" in c.placement for c in narrowed)
