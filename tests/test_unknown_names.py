"""No silent fallbacks: every place that takes a name (placement, queue order, backfill mode,
reward, preset, belief, duration knowledge, backend, task, node order, env heuristic agent,
planner estimate, trace options, CLI choices) refuses an unknown one with an error naming the
argument and the accepted names, instead of acting as some default (e.g. an unknown
placement once made the env act as Random).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import palgym
from palgym import make_episode, preset, read_sia_trace, run_episode
from palgym.envs.actions import ActionCodec
from palgym.envs.decide import choose_backend
from palgym.envs.decisions import DecisionRound
from palgym.envs.heuristics import check_heuristic, heuristic_candidate
from palgym.envs.rewards import RewardTracker
from palgym.errors import ConfigError, PalgymError
from palgym.policies import (
    CLAIRVOYANT,
    PolicyOptions,
    make_placement,
    make_queue_order,
)
from palgym.policies.backfill import check_mode, with_backfill
from palgym.policies.belief import BeliefOptions, belief_options
from palgym.policies.durations import parse_knowledge
from palgym.policies.pal import within_node_allocation
from palgym.policies.placement import PAL
from palgym.report import policies_to_run
from palgym.sim.backend import resolve_backend, step_backend
from palgym.sim.cluster import ClusterSpec
from palgym.simulate import slowdown_factors
from palgym.tracesets import parse_split_spec
from tests.toys import A, toy_profile, toy_trace

BAD = "bogus"
REPO = Path(__file__).resolve().parents[1]
BUNDLED = REPO / "palgym" / "data" / "traces" / "sia-philly-gen-0.csv"
PLACEMENT = "palgym/PALPlacement-v0"


def toy_episode(**options: Any) -> Any:
    return make_episode(toy_trace((1, 0.0, 100.0, A)), cluster=ClusterSpec.parse("1x4"),
                        config=preset("default", **options), profile=toy_profile(4), seed=0)


def started_env() -> Any:
    env = gym.make(PLACEMENT, trace="sia-philly-gen-0", window=5)
    env.reset(seed=0)
    return env.unwrapped


CASES: list[tuple[str, Callable[[], object], str, str]] = [
    # (place, call with the unknown name, argument named in the error, an accepted name)
    ("preset", lambda: preset(BAD), "preset", "pal-artifact"),
    ("make_placement", lambda: make_placement(BAD, slowdown_factors(toy_episode()),
                                              preset("default")), "placement", "pm-first"),
    ("make_placement backfill", lambda: make_placement(
        "pal", slowdown_factors(toy_episode()), preset("default"), backfill=BAD),
     "backfill", "first-fit"),
    ("make_queue_order", lambda: make_queue_order(BAD, CLAIRVOYANT, PolicyOptions()),
     "queue order", "srsf"),
    ("run_episode policy", lambda: run_episode(toy_episode(), policy=BAD), "placement", "pal"),
    ("run_episode queue_order", lambda: run_episode(toy_episode(), queue_order=BAD),
     "queue order", "tiresias"),
    ("run_episode belief", lambda: run_episode(toy_episode(), belief=BAD), "belief", "online"),
    ("run_episode driver", lambda: run_episode(toy_episode(), driver=BAD), "driver",
     "compiled"),
    ("make_simulator backend", lambda: palgym.make_simulator(toy_episode(), backend=BAD),
     "backend", "numpy"),
    ("check_mode", lambda: check_mode(BAD), "backfill", "easy"),
    ("with_backfill", lambda: with_backfill("pal", BAD), "backfill", "easy"),
    ("parse_knowledge", lambda: parse_knowledge(BAD), "duration_knowledge", "noisy"),
    ("belief_options", lambda: belief_options(BAD), "belief", "stale"),
    ("BeliefOptions", lambda: BeliefOptions(mode=BAD), "belief", "oracle"),  # type: ignore[arg-type]
    *((f"preset option {name}", (lambda name=name: preset("default", **{name: BAD})), name, known)
      for name, known in (("locality_rule", "spans-nodes"), ("las_service", "wall-clock"),
                          ("srtf_remaining", "nominal"), ("pal_node_order", "pandas-1.1"),
                          ("profile_sampling", "single-run"), ("slowdown_clusters", "outliers"))),
    ("read_sia_trace", lambda: read_sia_trace(BUNDLED, BAD), "duration_unit", "seconds"),
    ("resolve_backend", lambda: resolve_backend(BAD), "backend", "numpy"),  # type: ignore[arg-type]
    ("step_backend", lambda: step_backend(BAD), "backend", "numpy"),  # type: ignore[arg-type]
    ("choose_backend", lambda: choose_backend(BAD, "ascending"), "backend", "numpy"),
    ("within_node_allocation", lambda: within_node_allocation(
        np.ones(8, bool), 2, np.ones(8), np.repeat(np.arange(2), 4), BAD),
     "node_order", "pandas-1.1"),
    ("PAL node_order", lambda: PAL(slowdown_factors(toy_episode()), (1.7,) * 4,
                                   node_order=BAD),  # type: ignore[arg-type]
     "node_order", "ascending"),
    ("RewardTracker", lambda: RewardTracker(BAD, 1.0), "reward", "makespan"),
    ("DecisionRound task", lambda: DecisionRound(None, np.zeros(0, np.int64), BAD,  # type: ignore[arg-type]
                                                 False, False), "task", "scheduling"),
    ("heuristic_candidate", lambda: heuristic_candidate(
        BAD, np.ones(10, bool), 1, 4, (0,), 4, ActionCodec(2, 4)), "candidate kind",
     "pal-matrix"),
    ("check_heuristic", lambda: check_heuristic(BAD, False, True), "heuristic", "pal"),
    ("env heuristic_action", lambda: started_env().heuristic_action(BAD), "heuristic",
     "pm-first"),
    ("env heuristic_action unchecked", lambda: started_env().heuristic_action(BAD, check=False),
     "heuristic", "pm-first"),
    ("policies_to_run", lambda: policies_to_run([BAD]), "placement", "packed-sticky"),
    ("policies_to_run baseline", lambda: policies_to_run(["pal"], baseline=BAD), "placement",
     "packed-sticky"),
    ("trace-set split", lambda: parse_split_spec({"set": "bundled", "split": BAD}), "split",
     "validation"),
    *((f"env {name}", (lambda name=name: gym.make(PLACEMENT, **{name: BAD})), label, known)
      for name, label, known in (
          ("task", "task", "scheduling"), ("reward", "reward", "relative"),
          ("baseline_policy", "baseline_policy", "pal"),
          ("fallback_policy", "fallback_policy", "pm-first"),
          ("queue_order", "queue order", "srtf"), ("preset", "preset", "dynamic"),
          ("belief", "belief", "online"), ("duration_knowledge", "duration_knowledge", "noisy"),
          ("backend", "backend", "numpy"), ("render_mode", "render_mode", "ansi"))),
]


@pytest.mark.parametrize(("place", "call", "argument", "accepted"), CASES,
                         ids=[case[0] for case in CASES])
def test_palgym_refuses_an_unknown_name(place: str, call: Callable[[], object], argument: str,
                                        accepted: str) -> None:
    with pytest.raises(ConfigError) as caught:
        call()
    message = str(caught.value)
    assert BAD in message and argument in message and accepted in message, message
    assert "\n" not in message


def agent_cases() -> list[tuple[str, Callable[[], object], str, str]]:
    from agents.base import HeuristicAgent
    from agents.evaluation.best_contender import default_field
    from agents.evaluation.contenders import heuristic_contender
    from agents.planning.planner import PlannerSpec
    from agents.planning.search import BaseRollout, SearchCounters, state_cost

    return [
        ("HeuristicAgent", lambda: HeuristicAgent(BAD), "placement", "pal"),
        ("heuristic_contender", lambda: heuristic_contender(BAD, {}), "placement", "pal"),
        ("planner spec estimate", lambda: PlannerSpec.parse(f"planner:H=5,estimate={BAD}"),
         "estimate", "ideal"),
        ("planner BaseRollout", lambda: BaseRollout("pal", 5, SearchCounters(), estimate=BAD),
         "estimate", "queue"),
        ("planner state_cost", lambda: state_cost(started_env().simulator, BAD), "estimate",
         "ideal"),
        ("best field duration_knowledge", lambda: default_field(None, None, None, BAD),
         "duration_knowledge", "unknown"),
    ]


def test_agents_refuse_an_unknown_name() -> None:
    for place, call, argument, accepted in agent_cases():
        with pytest.raises(ConfigError) as caught:
            call()
        message = str(caught.value)
        assert BAD in message and argument in message and accepted in message, (place, message)


def test_training_refuses_an_unknown_name() -> None:
    pytest.importorskip("stable_baselines3")
    from agents.sb3.envs import make_vec_env
    from agents.sb3.factory import algo_class
    from agents.sb3.optimize import SearchSettings, make_study
    from agents.sb3.training import TrainSettings

    cases = [
        (lambda: algo_class(BAD), "algo", "maskable_ppo"),
        (lambda: make_vec_env(PLACEMENT, 1, 0, {}, BAD), "vec_env", "subproc"),
        (lambda: make_study(None, TrainSettings(), SearchSettings(sampler=BAD)), "--sampler",
         "tpe"),
        (lambda: make_study(None, TrainSettings(), SearchSettings(pruner=BAD)), "--pruner",
         "median"),
    ]
    for call, argument, accepted in cases:
        with pytest.raises(ConfigError) as caught:
            call()
        message = str(caught.value)
        assert BAD in message and argument in message and accepted in message, message


def test_trace_tools_refuse_an_unknown_name(tmp_path: Path) -> None:
    from traces import load_canonical, load_trace
    from traces.__main__ import run
    from traces.loaders.alibaba import load_alibaba
    from traces.loaders.sia import load_sia
    from traces.windows import make_windows

    trace = load_canonical(BUNDLED)
    cases = [
        (lambda: load_trace(BUNDLED, BAD), "format", "sia"),
        (lambda: load_sia(BUNDLED, duration_unit=BAD), "duration_unit", "seconds"),
        (lambda: make_windows(trace, num_jobs=10, oversize=BAD), "oversize", "drop"),
        (lambda: make_windows(trace, num_jobs=10, arrivals=BAD), "arrivals", "poisson"),
        (lambda: load_alibaba(tmp_path / "none.csv", fractional=BAD), "fractional", "round_up"),
        (lambda: load_alibaba(tmp_path / "none.csv", open_ended=BAD), "open_ended", "truncate"),
        (lambda: run(argparse.Namespace(command=BAD)), "command", "generate"),
        (lambda: run(argparse.Namespace(command="generate", kind=BAD, jobs_per_hour=None,
                                        independent_models=False)), "--kind", "gavel"),
    ]
    for call, argument, accepted in cases:
        with pytest.raises(PalgymError) as caught:
            call()
        message = str(caught.value)
        assert BAD in message and argument in message and accepted in message, message


@pytest.mark.parametrize(("module", "argv", "option", "accepted"), [
    ("evaluate", ["--policy", BAD], "--policy", "pm-first"),
    ("evaluate", ["--queue-order", BAD], "--queue-order", "srtf"),
    ("evaluate", ["--backfill", BAD], "--backfill", "easy"),
    ("evaluate", ["--preset", BAD], "--preset", "pal-artifact"),
    ("evaluate", ["--belief", BAD], "--belief", "online"),
    ("evaluate", ["--duration-knowledge", BAD], "--duration-knowledge", "noisy"),
    ("evaluate", ["--bootstrap-unit", BAD], "--bootstrap-unit", "trace"),
    ("evaluate", ["--heuristics-via", BAD], "--heuristics-via", "simulator"),
    ("evaluate", ["--trace-format", BAD], "--trace-format", "helios"),
    ("train", ["--algo", BAD], "--algo", "maskable_ppo"),
    ("train", ["--vec-env", BAD], "--vec-env", "subproc"),
    ("train", ["--sampler", BAD], "--sampler", "tpe"),
    ("train", ["--pruner", BAD], "--pruner", "median"),
    ("traces", ["generate", "--kind", BAD, "--num-jobs", "3", "--output", "x.csv"], "--kind",
     "gavel"),
])
def test_cli_choices_refuse_an_unknown_name(module: str, argv: list[str], option: str,
                                            accepted: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    if module == "evaluate":
        from agents.evaluation.args import build_parser
    elif module == "train":
        from train import build_parser
    else:
        from traces.__main__ import build_parser
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert f"argument {option}" in error and BAD in error and accepted in error, error
