"""The round-by-round rule search (agents/planning/rule_search.py): its spec, a field of one rule is
its base bit for bit, exact rollouts never do worse than the base (policy improvement), and
the bench runs and replays it."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the envs)
from agents.base import HeuristicAgent, heuristic_env_kwargs
from agents.evaluation.contenders import planner_contender
from agents.planning.rule_search import RuleSearchAgent, RuleSearchSpec, choose_rule
from agents.rollout import rollout
from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace

WINDOW = {"task": "scheduling", "trace": "bundled", "window": 24}


def test_spec_parses_the_order_and_puts_the_base_first() -> None:
    spec = RuleSearchSpec.parse(
        "planner:base=srtf/pal+backfill,rules=pal|pal+easy|pal+backfill,H=7")
    assert (spec.order, spec.base, spec.rules, spec.H) == (
        "srtf", "pal+backfill", ("pal+backfill", "pal", "pal+easy"), 7)
    assert spec.label == ("planner:base=srtf/pal+backfill,rules=pal+backfill|pal|pal+easy,"
                          "H=7,estimate=queue")
    assert RuleSearchSpec.parse(spec.label) == spec  # the label is a spec of itself
    assert RuleSearchSpec.parse("rules=pal+easy").rules == ("pal", "pal+easy")
    agent = RuleSearchAgent(spec)
    assert agent.env_kwargs == {**heuristic_env_kwargs("pal+backfill"), "strict": True,
                                "queue_order": "srtf"}


@pytest.mark.parametrize(("text", "match"), [
    ("base=lifo/pal,rules=pal", "unknown queue order 'lifo'"),
    ("rules=pal|pal", "rules must be distinct"),
    ("rules=pal|nope", "unknown placement 'nope'"),
    ("rules=pal,H=0", "H must be >= 1"),
    ("rules=pal,H=soon", "H must be an integer or end"),
    ("rules=pal,estimate=guess", "estimate must be one of"),
    ("rules=pal,K=3", "is not key=value with a key among"),
])
def test_bad_specs_are_refused(text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RuleSearchSpec.parse(text)


def test_choose_rule_takes_the_strictly_cheapest_and_ties_to_the_base() -> None:
    assert choose_rule([10.0, 9.0, 8.0]) == (2, False)
    assert choose_rule([10.0, 10.0, 12.0]) == (0, True)  # a tie keeps the base
    assert choose_rule([10.0, 9.0, 9.0]) == (1, False)  # equal alternatives: the earlier
    assert choose_rule([10.0]) == (0, False)


def _run(agent: object, **kwargs: object) -> object:
    env = gym.make("palgym/PALScheduling-v0", **{**WINDOW, **kwargs})
    return rollout(agent, env, seed=3)  # type: ignore[arg-type]


def test_a_field_of_the_base_alone_is_the_base_heuristic() -> None:
    spec = RuleSearchSpec.parse("base=srtf/pal+backfill,rules=pal+backfill")
    search = RuleSearchAgent(spec)
    alone = _run(search, **search.env_kwargs)
    base = _run(HeuristicAgent("pal+backfill"), **search.env_kwargs)
    assert alone.metrics == base.metrics and alone.episode_hash == base.episode_hash
    stats = search.episodes[-1]
    assert stats.evaluated == 0 and stats.changed == 0 and stats.one_valid > 0


def _toy(*jobs: tuple[int, float, float]) -> Trace:
    """Jobs (num_gpus, total_iterations, submit_time_s), T_it = 1 s, one class."""
    return Trace.from_columns(
        "toy", job_id=list(range(len(jobs))), num_gpus=[j[0] for j in jobs],
        submit_time_s=[j[2] for j in jobs], total_iterations=[j[1] for j in jobs],
        iteration_time_s=[1.0] * len(jobs), model=["toy-model"] * len(jobs),
        perf_class=[0] * len(jobs))


# 2 nodes x 2 uniform GPUs, R = 100 s: wide (4-GPU) jobs among narrow ones, where playing
# EASY (or no backfilling) for a round can beat first-fit backfilling.
WIDE = _toy((2, 140, 0), (1, 210, 0), (1, 360, 100), (4, 70, 200), (1, 300, 200),
            (2, 370, 200), (2, 100, 200), (4, 90, 300), (4, 190, 400), (4, 310, 700))


def _toy_run(agent: object, **kwargs: object) -> object:
    env = ClusterEnv(WIDE, task="scheduling", cluster="2x2",
                     profile=VariabilityProfile("toy", np.ones((4, 4))), locality_penalty=1.0,
                     round_duration_s=100.0, **kwargs)  # type: ignore[arg-type]
    return rollout(agent, env, seed=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("order", ["fifo", "srtf"])
def test_exact_rollouts_never_do_worse_than_the_base(order: str) -> None:
    # With H=end every searched round compares "the base for this round" with the other
    # rules, each followed by the base, and the base is kept on a tie: the realised total
    # time in system never exceeds the base's (Bertsekas, Tsitsiklis and Wu 1997), and is
    # strictly lower once a round was played by another rule (that rule's rollout was
    # strictly cheaper, and every later round is again no worse).
    spec = RuleSearchSpec.parse(f"base={order}/pal+backfill,rules=pal+easy|pal")
    search = RuleSearchAgent(spec)
    found = _toy_run(search, **search.env_kwargs)
    base = _toy_run(HeuristicAgent("pal+backfill"), **search.env_kwargs)
    stats = search.episodes[-1]
    assert found.episode_hash == base.episode_hash
    assert found.metrics["num_completed"] == base.metrics["num_completed"] == WIDE.num_jobs
    assert stats.evaluated > 0
    if stats.changed:
        assert found.metrics["avg_jct_s"] < base.metrics["avg_jct_s"]
    else:
        assert found.metrics == base.metrics
    again = RuleSearchAgent(spec)
    assert _toy_run(again, **again.env_kwargs).metrics == found.metrics  # deterministic


def test_the_search_changes_a_round_where_another_rule_is_cheaper() -> None:
    # FIFO: some round of WIDE is cheaper under another rule (found by enumerating toys; the
    # invariant above then makes the search strictly better than first-fit backfilling).
    search = RuleSearchAgent(RuleSearchSpec.parse("base=fifo/pal+backfill,rules=pal+easy|pal"))
    found = _toy_run(search, **search.env_kwargs)
    base = _toy_run(HeuristicAgent("pal+backfill"), **search.env_kwargs)
    assert search.episodes[-1].changed >= 1
    assert found.metrics["avg_jct_s"] < base.metrics["avg_jct_s"]


def test_the_planner_spec_with_rules_is_the_rule_search() -> None:
    contender = planner_contender("planner:base=srtf/pal+backfill,rules=pal+easy,H=3",
                                  {"task": "scheduling"})
    assert isinstance(contender.agent, RuleSearchAgent) and contender.kind == "planner"
    assert contender.env_kwargs["queue_order"] == "srtf"


def test_the_bench_runs_and_replays_it(tmp_path: Path) -> None:
    from agents.bench.runner import run_entry
    from palgym.bench.entries import RunRequest
    from palgym.bench.replay import validate_files
    from palgym.bench.results import read_results
    from palgym.bench.suites import DataRoots
    from tests.bench_suites import tiny_suite

    suite = tiny_suite(tmp_path, ["scheduling-clairvoyant"], seeds=(0,))
    output = tmp_path / "search.jsonl"
    spec = "planner:base=srtf/pal+backfill,rules=pal|pal+easy,H=2"
    run_entry(RunRequest(str(suite), spec, output, DataRoots(), progress=False))
    results = read_results(output)
    member = results.header.members["scheduling-clairvoyant"]
    [(label, entry)] = member.items()
    assert entry["env_kwargs"]["queue_order"] == "srtf"
    assert [p for _, p in validate_files([output], DataRoots(), suite)] == [[]]


def test_the_search_runs_on_the_work_conserving_env() -> None:
    # The rules act through heuristic_action, so on a work-conserving env (RESERVE,
    # docs/ENV.md) pal+easy and pal reserve at a blocked head; first-fit never does. One
    # episode of WIDE: every job completes with no invalid action, and the exact search is
    # no worse than its base (the invariant above); a searched round played by another rule
    # took RESERVE.
    spec = RuleSearchSpec.parse("base=fifo/pal+backfill,rules=pal+easy|pal")
    search = RuleSearchAgent(spec)
    found = _toy_run(search, **search.env_kwargs, work_conserving=True)
    base = _toy_run(HeuristicAgent("pal+backfill"), **search.env_kwargs, work_conserving=True)
    plain = _toy_run(HeuristicAgent("pal+backfill"), **search.env_kwargs)
    assert base.metrics == plain.metrics  # first-fit: the same episode with or without it
    assert found.metrics["num_completed"] == WIDE.num_jobs
    assert found.metrics["num_invalid_actions"] == 0
    stats = search.episodes[-1]
    assert stats.evaluated > 0 and stats.changed >= 1
    assert found.metrics["avg_jct_s"] < base.metrics["avg_jct_s"]
    reserve = 16 * 10 + 1  # K = 16, M = 2 * 4 + 2: RESERVE = K * M + 1
    assert reserve in found.actions and reserve not in base.actions
