"""Policy beliefs (palgym.policies.belief): oracle sees the truth, stale never changes, online
after one observed round equals the hand-computed EWMA; run_episode reports the belief; static
presets unchanged; same seed, same dynamic result across processes."""

from __future__ import annotations

import contextlib
import io
import math
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ConfigError
from palgym.io.sia import read_sia_trace
from palgym.policies.belief import Belief, BeliefOptions, belief_options
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.dynamics import VariabilityDynamics, VariabilityProcess
from palgym.sim.engine import Simulator
from palgym.sim.variability import VariabilityProfile
from palgym.simulate import make_episode, run_episode
from tests.toys import A, B, toy_profile, toy_trace

R = 100.0
REPO = Path(__file__).resolve().parents[1]
THROTTLE = VariabilityDynamics(throttle=True, throttle_start_prob=0.5, throttle_rounds=3,
                               throttle_factor=2.0)


def dynamic_sim(num_gpus: int, dynamics: VariabilityDynamics | None, seed: int = 0,
                profile: VariabilityProfile | None = None) -> Simulator:
    config = preset("default", round_duration_s=R, dynamics=dynamics)
    trace = toy_trace((num_gpus, 0.0, 1e9, A))
    return Simulator(trace, profile or toy_profile(num_gpus), ClusterSpec(1, num_gpus), config,
                     backend="numpy", dynamics_seed=seed)


def process(sim: Simulator) -> VariabilityProcess | None:
    """The simulator's dynamic truth process (None: a static truth)."""
    return None if sim.truth is None else sim.truth.process


def one_round(sim: Simulator, belief: Belief, target: list[int] | None) -> None:
    """A driver's round: commit, callback, advance, callback."""
    sim.commit(None if target is None else np.array(target))
    belief.watch(sim.view())
    sim.advance()
    belief.watch(sim.view())


def test_oracle_sees_the_truth() -> None:
    sim = dynamic_sim(2, THROTTLE, seed=1)
    belief = Belief(sim.view(), BeliefOptions("oracle"), np.random.default_rng(0), process(sim))
    assert belief.values is sim.view().perfvar and belief.changes
    seen = set()
    for round_index in range(12):
        one_round(sim, belief, [0, 0] if round_index == 0 else None)
        assert belief.values is sim.view().perfvar  # a live, read-only view of the truth
        seen.add(float(sim.perfvar[A, 0]))
    assert seen == {1.0, 2.0}  # the truth moved; the oracle's values are the truth array


def test_stale_is_one_profiling_run_at_t0_and_never_changes() -> None:
    dynamics = VariabilityDynamics(run_variation=True, run_sigma=0.1, run_outlier_prob=0.0,
                                   throttle=True, throttle_start_prob=0.5, throttle_rounds=3,
                                   throttle_factor=2.0)
    character = toy_profile(2, [1.0, 1.2])
    sim = dynamic_sim(2, dynamics, seed=4, profile=character)
    belief = Belief(sim.view(), BeliefOptions("stale"), np.random.default_rng(5), process(sim))
    # profiling run: 2 uniforms then 2 normals from the profiling stream (no outliers);
    # throttle at t = 0: the throttle stream's first 2 uniforms (< 0.5: factor 2)
    rng = np.random.default_rng(5)
    rng.random(2)
    run = np.exp(0.1 * rng.standard_normal(2))
    throttle0 = np.where(np.random.default_rng(
        np.random.SeedSequence(4).spawn(3)[1]).random(2) < 0.5, 2.0, 1.0)
    expected = character.perfvar * (run * throttle0)[np.newaxis, :]
    assert np.allclose(belief.values, expected, rtol=1e-15, atol=0)
    assert not belief.changes
    start = belief.values.copy()
    for round_index in range(10):
        one_round(sim, belief, [0, 0] if round_index == 0 else None)
    assert np.array_equal(belief.values, start)


def test_online_after_one_round_is_the_hand_ewma() -> None:
    # truth 2.0 for class A on every GPU: a 3-GPU class-A job is observed at o = 2.0
    sim = dynamic_sim(3, None, profile=toy_profile(3, [2.0, 2.0, 2.0]))
    belief = Belief(sim.view(), BeliefOptions("online", alpha=0.5), np.random.default_rng(0),
                    process(sim))
    assert np.array_equal(belief.values, sim.perfvar) and belief.values is not sim.perfvar
    belief.values[A] = [1.0, 1.5, 3.0]
    belief.values[B] = [1.0, 1.0, 4.0]
    one_round(sim, belief, [0, 0, 0])
    # GPU 2 (largest belief, above o) moves by (o / b)^alpha = sqrt(2 / 3), every class;
    # GPUs 0 and 1 are below the observation: unchanged
    assert belief.values[A].tolist() == pytest.approx([1.0, 1.5, math.sqrt(6.0)], rel=1e-14)
    assert belief.values[B].tolist() == pytest.approx([1.0, 1.0, 4.0 * math.sqrt(2 / 3)],
                                                       rel=1e-14)
    # the slowest believed GPU is below o: only it is pulled up, by sqrt(2 / 1.5)
    belief.values[A] = [1.0, 1.5, 1.2]
    belief.values[B] = [1.0, 1.0, 1.0]
    one_round(sim, belief, None)
    assert belief.values[A].tolist() == pytest.approx([1.0, math.sqrt(3.0), 1.2], rel=1e-14)
    assert belief.values[B].tolist() == pytest.approx([1.0, math.sqrt(2 / 1.5), 1.0], rel=1e-14)


def test_belief_names_and_bad_options() -> None:
    assert belief_options("stale") == BeliefOptions("stale")
    with pytest.raises(ConfigError, match="belief must be one of"):
        belief_options("psychic")
    with pytest.raises(ConfigError, match="alpha"):
        BeliefOptions("online", alpha=0.0)


def bundled_trace(name: str):  # type: ignore[no-untyped-def]
    return read_sia_trace(str(resources.files("palgym").joinpath("data", "traces", name)))


def test_static_presets_give_every_belief_the_same_result() -> None:
    trace = bundled_trace("sia-philly-gen-0.csv")
    for name in ("default", "pal-artifact"):
        episode = make_episode(trace, config=preset(name))
        for policy in ("pal", "pm-first"):
            reference = run_episode(episode, policy)
            assert reference.belief == "oracle"
            for belief in ("stale", "online"):
                result = run_episode(episode, policy, belief=belief)
                assert (result.belief, result.refits) == (belief, 0)
                assert result.metrics == reference.metrics
                assert np.array_equal(result.records.completion_time_s,
                                      reference.records.completion_time_s)
    blind = run_episode(make_episode(trace), "packed-sticky", belief="online")
    assert blind.belief == "none"


DYNAMIC_TOY = """
import sys
sys.path.insert(0, {repo!r})
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.simulate import make_episode, run_episode
from tests.toys import A, B, C, D, toy_profile, toy_trace
jobs = [(1 + i % 4, 40.0 * i, 300.0 + 90 * i, (A, B, C, D)[i % 4]) for i in range(12)]
config = preset("dynamic", round_duration_s=100.0)
episode = make_episode(toy_trace(*jobs), cluster=ClusterSpec(2, 4), config=config,
                       profile=toy_profile(8, [1.0, 1.3, 2.0, 1.1, 1.0, 1.05, 1.6, 1.0]), seed=7)
for belief in ("oracle", "stale", "online"):
    result = run_episode(episode, "pal", belief=belief)
    print(belief, result.refits, result.episode_hash, result.records.completion_time_s.tolist())
"""


def test_dynamic_episodes_are_reproducible_across_processes() -> None:
    code = DYNAMIC_TOY.format(repo=str(REPO))
    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        exec(code, {})  # this process: whatever its hash seed
    hash_seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "0"
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True, timeout=600)
    outputs = [here.getvalue(), done.stdout]
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 3
    static = make_episode(toy_trace((1, 0.0, 10, A)), cluster=ClusterSpec(2, 4),
                          profile=toy_profile(8), config=preset("default", round_duration_s=100.0),
                          seed=7).episode_hash()
    assert static not in outputs[0]  # the dynamics enter the episode hash
    lines = [line.split(" ", 3) for line in outputs[0].splitlines()]
    assert len({hash_ for _, _, hash_, _ in lines}) == 1  # one episode, three beliefs


def test_the_heuristic_table_reports_each_policys_belief() -> None:
    from agents.evaluation.comparison import heuristic_table
    from palgym.report import EvaluationSetup
    from palgym.report_output import format_report, result_rows

    trace = toy_trace((1, 0.0, 300, A), (2, 50.0, 400, B), (1, 80.0, 200, A))
    setup = EvaluationSetup(cluster=ClusterSpec(2, 2), config=preset("default", round_duration_s=R),
                            profile=toy_profile(4, [1.0, 1.3, 2.0, 1.1]), belief="stale")
    evaluation = heuristic_table([trace], ["pal", "pm-first"], ["fifo"], setup)
    beliefs = {row["policy"]: row["belief"] for row in result_rows(evaluation)}
    assert beliefs == {"pal": "stale", "pm-first": "stale", "packed-sticky": "none",
                       "packed-non-sticky": "none"}
    assert "decided on the stale belief" in format_report(evaluation)
