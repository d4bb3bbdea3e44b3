"""The one contender spec grammar (palgym/policies/contender_spec.py): each kind's parse worked
out by hand, the "where it runs" refusals of evaluate.py, palgym bench run and an env's
heuristic_action, and a rule selector run side by side in evaluate.py."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import pytest

from agents.evaluation.cli import main as evaluate_main
from agents.evaluation.names import sort_contenders
from agents.selection.entry import PRETRAINED_SELECTORS
from agents.selection.selector import LinearSelector
from palgym.errors import ConfigError
from palgym.policies.contender_spec import (
    PLACES,
    RUNS_IN,
    ContenderSpec,
    check_placement_spec,
    parse_contender,
)

GUARD = "srtf/pal+backfill+age=32h:fifo/pal+easy"
PRETRAINED_SELECTOR = "rule-selector-clairvoyant-seed0"


@pytest.mark.parametrize(("text", "expected"), [
    ("pal", ContenderSpec("heuristic", "pal", "pal")),
    ("srtf/pal+backfill", ContenderSpec("heuristic", "srtf/pal+backfill", "srtf/pal+backfill")),
    (GUARD, ContenderSpec("guard", GUARD, GUARD)),
    ("pal+age=2h:fifo/pal", ContenderSpec("guard", "pal+age=2h:fifo/pal",
                                          "pal+age=2h:fifo/pal")),
    ("mypkg.mod:MyPlacement", ContenderSpec("module", "mypkg.mod:MyPlacement",
                                            "mypkg.mod:MyPlacement")),
    ("fifo/mypkg.mod:MyPlacement+easy", ContenderSpec("module", "fifo/mypkg.mod:MyPlacement+easy",
                                                      "fifo/mypkg.mod:MyPlacement+easy")),
    ("pretrained", ContenderSpec("learned", "pretrained", "pretrained", True)),
    ("pretrained:sia-philly-artifact_maskable_ppo",
     ContenderSpec("learned", "pretrained:sia-philly-artifact_maskable_ppo",
                   "pretrained:sia-philly-artifact_maskable_ppo", True)),
    ("runs/ppo_1/model.zip", ContenderSpec("learned", "runs/ppo_1/model.zip",
                                           "runs/ppo_1/model.zip")),
    ("selector:out/cem.json", ContenderSpec("selector", "selector:out/cem.json", "out/cem.json")),
    ("selector:pretrained:cem", ContenderSpec("selector", "selector:pretrained:cem", "cem", True)),
    ("planner:base=pal,K=6,H=end", ContenderSpec("planner", "planner:base=pal,K=6,H=end",
                                                 "base=pal,K=6,H=end")),
    ("planner:rules=fifo/pal|srtf/pal,H=20", ContenderSpec(
        "planner", "planner:rules=fifo/pal|srtf/pal,H=20", "rules=fifo/pal|srtf/pal,H=20")),
    ("best", ContenderSpec("best", "best", "best")),
    ("field", ContenderSpec("field", "field", "field")),
])
def test_each_kind_parses_to_its_record(text: str, expected: ContenderSpec) -> None:
    assert parse_contender(text) == expected


def test_a_folder_is_a_run_folder_unless_its_name_is_a_heuristic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run-7").mkdir()
    (tmp_path / "pal").mkdir()
    assert parse_contender("run-7").kind == "learned"
    assert parse_contender("pal").kind == "heuristic"
    assert parse_contender("run-8").kind == "heuristic"  # no such folder


@pytest.mark.parametrize(("text", "message"), [
    ("", "an empty contender spec"),
    ("selector:", "give selector:PATH"),
    ("selector:pretrained:", "takes the plain name of a selector file, not a path"),
    ("selector:pretrained:../cem", "takes the plain name of a selector file, not a path"),
    ("selector:pretrained:sub/cem", "takes the plain name of a selector file, not a path"),
])
def test_malformed_specs_are_refused_naming_the_argument(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_contender(text, "--agent")
    assert str(caught.value).startswith("--agent")


@pytest.mark.parametrize(("text", "place", "runs_in"), [
    ("field", "evaluate", ["palgym bench run --agent"]),
    ("best-known", "evaluate", ["palgym bench run --agent"]),
    ("lower-bound", "env", ["palgym bench run --agent"]),
    (GUARD, "env", ["evaluate.py --agent / --policy", "palgym bench run --agent"]),
    ("selector:x.json", "env", ["evaluate.py --agent / --policy", "palgym bench run --agent"]),
    ("planner:K=4", "env", ["evaluate.py --agent / --policy", "palgym bench run --agent"]),
    ("pretrained", "env", ["evaluate.py --agent / --policy", "palgym bench run --agent"]),
    ("best", "env", ["evaluate.py --agent / --policy", "palgym bench run --agent"]),
])
def test_a_kind_refused_somewhere_says_where_it_runs(text: str, place: str,
                                                    runs_in: list[str]) -> None:
    spec = parse_contender(text)
    assert not spec.runs_in(place)
    with pytest.raises(ConfigError) as caught:
        spec.require(place, "--agent")
    message = str(caught.value)
    assert f"not in {PLACES[place]}" in message
    assert all(where in message for where in runs_in)
    others = [PLACES[p] for p in PLACES if p != place and p not in RUNS_IN[spec.kind]]
    assert not any(f"runs in {o}" in message for o in others)


def test_every_kind_runs_in_evaluate_or_the_bench() -> None:
    assert set(RUNS_IN) == {"heuristic", "module", "guard", "learned", "selector", "planner",
                            "best", "field", "best-known", "lower-bound"}
    for kind, places in RUNS_IN.items():
        assert places and set(places) <= set(PLACES), kind
    assert parse_contender("pal").require("env", "x").kind == "heuristic"


def test_an_env_acts_as_a_placement_only() -> None:
    check_placement_spec("pal+backfill", "heuristic_action")  # a placement: no error
    with pytest.raises(ConfigError, match="give 'pal' here, in an env made with "
                                          "queue_order='srtf'"):
        check_placement_spec("srtf/pal", "heuristic_action")
    env = gym.make("palgym/PALPlacement-v0", trace="sia-philly-gen-0", window=10)
    try:
        env.reset(seed=0)
        base = env.unwrapped
        assert base.heuristic_action("pal") == base.heuristic_action("pal", check=False)
        for text, where in (("selector:x.json", "palgym bench run --agent"),
                            (GUARD, "evaluate.py --agent / --policy"),
                            ("best-known", "palgym bench run --agent"),
                            ("planner:K=4", "palgym bench run --agent")):
            with pytest.raises(ConfigError, match="not in an env's heuristic_action") as caught:
                base.heuristic_action(text)
            assert where in str(caught.value)
    finally:
        env.close()


def test_evaluate_sorts_policy_and_agent_specs_by_kind() -> None:
    args = argparse.Namespace(
        policy=["pal", "selector:a.json", "planner:K=4", GUARD, "best"],
        agent=["pretrained", "srtf/pal", "selector:pretrained:cem"], planner=["K=2"])
    sort_contenders(args)
    assert args.agent == ["pretrained"]
    assert args.selector == ["selector:a.json", "selector:pretrained:cem"]
    assert args.planner == ["K=2", "K=4"]
    assert args.policy == ["pal", GUARD, "best", "srtf/pal"]


def test_the_command_lines_refuse_a_kind_in_one_line(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        evaluate_main(["--agent", "field"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("evaluate.py: error: argument --agent: 'field' is a bench task's "
                       "heuristic field: it runs in palgym bench run --agent, not in "
                       "evaluate.py --agent / --policy")
    with pytest.raises(SystemExit) as stopped:
        evaluate_main(["--agent", "lower-bound"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "evaluate.py: error: argument --agent: 'lower-bound' is the room's lower bound (a "
        "reference): it runs in palgym bench run --agent, not in evaluate.py --agent / --policy")


def _summary(path: Path) -> dict[str, dict[str, object]]:
    return {row["policy"]: row for row in json.loads(path.read_text())["summary"]}


def test_evaluate_runs_a_selector_beside_the_heuristics(tmp_path: Path) -> None:
    """A constant selector of one rule plays that rule's episode (palgym.rule_selection): its
    JCTs equal the heuristic's, on the episodes every contender shares; a pretrained selector
    runs by its name."""
    rule = "srtf/pal+backfill"
    LinearSelector.constant([rule, "fifo/pal+easy"]).save(tmp_path / "constant.json")
    assert (PRETRAINED_SELECTORS / f"{PRETRAINED_SELECTOR}.json").is_file()
    output = tmp_path / "results.json"
    episodes = tmp_path / "episodes.csv"
    constant = f"selector:{tmp_path / 'constant.json'}"
    pretrained = f"selector:pretrained:{PRETRAINED_SELECTOR}"
    assert evaluate_main(["--agent", constant, pretrained, "--policy", rule,
                          "--env", "palgym/PALScheduling-v0", "--trace", "sia-philly-gen-0",
                          "--window", "12", "--seeds", "0", "1", "--quiet",
                          "--json", str(output), "--output", str(episodes)]) == 0
    rows = [line.split(",") for line in episodes.read_text().splitlines()]
    header, rows = rows[0], rows[1:]
    policy, jct = header.index("policy"), header.index("avg_jct_s")
    by_policy: dict[str, list[str]] = {}
    for row in rows:
        by_policy.setdefault(row[policy], []).append(row[jct])
    assert by_policy[constant] == by_policy[rule] and len(by_policy[rule]) == 2
    assert len(by_policy[pretrained]) == 2
    kinds = {name: row["kind"] for name, row in _summary(output).items()}
    assert kinds[constant] == kinds[pretrained] == "selector" and kinds[rule] == "heuristic"
