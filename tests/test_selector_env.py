"""The selector env (``palgym/PALSelector-v0``): its spaces and observation, worked out by hand
on a toy; its mask; a constant selector reproduces its rule's episode bit for bit; one choice
per round; determinism; bad input."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401 - registers the env ids
from palgym.envs.features import LOG_HORIZON
from palgym.envs.layouts import ENV_LAYOUTS, layout_hash
from palgym.envs.selector import DEFAULT_RULES, SelectorEnv
from palgym.envs.selector_obs import RULE_FEATURES, STATE_FEATURES
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.simulate import run_episode
from tests.toys import A, ClusterSpec, R, toy_profile, toy_trace

SELECTOR = "palgym/PALSelector-v0"
FIELD = ("pal", "pal+backfill")


def toy_env(granularity: str = "round", gpus: int = 2, **kwargs: object) -> SelectorEnv:
    """1 node of ``gpus`` GPUs, all factors 1; J0 (1 GPU, 1000 s), J1 (all GPUs, 100 s),
    then two 1-GPU 100 s jobs, all submitted at 0 (FIFO, round 100 s)."""
    trace = toy_trace((1, 0.0, 1000.0, A), (gpus, 0.0, 100.0, A), (1, 0.0, 100.0, A),
                      (1, 0.0, 100.0, A))
    return SelectorEnv(trace, rules=FIELD, granularity=granularity,
                       cluster=ClusterSpec(1, gpus), profile=toy_profile(gpus),
                       round_duration_s=R, **kwargs)


def log_time(seconds: float) -> float:
    return math.log1p(seconds) / LOG_HORIZON


def test_spaces_and_names() -> None:
    env = gym.make(SELECTOR, window=8)
    h = len(DEFAULT_RULES)
    assert env.action_space == gym.spaces.Discrete(h)
    assert env.observation_space["state"].shape == (len(STATE_FEATURES),) == (20,)
    assert env.observation_space["rules"].shape == (h * len(RULE_FEATURES),) == (h * 12,)
    assert env.unwrapped.observation_shapes == {"state": (20,), "rules": (h, 12)}
    names = env.unwrapped.feature_names
    assert names["rules"][:2] == ("pal.ends_round", "pal.num_gpus_frac")
    assert names["rules"][-1] == "pm-first+easy.agree_frac"
    two = SelectorEnv("sia-philly-gen-0", window=8, rules="pal,pal+easy")
    assert two.observation_space["rules"].shape == (24,)
    assert two.rules == ("pal", "pal+easy")


def test_observation_worked_out_by_hand() -> None:
    env = toy_env("decision")
    env.reset(seed=0)
    # decision 1: J0 is the head and fits: both rules place it (asked: an episode's first)
    assert np.all(env.rule_actions() == env.rule_actions()[0])
    observation, _, _, _, info = env.step(0)
    assert info["base_decisions"] == 1  # decision 2 differs: pal ends the round, backfill not
    pal, backfill = env.rule_actions()
    assert pal == env.base.codec.END_ROUND and backfill != pal
    assert divmod(int(backfill), env.base.codec.num_candidates)[0] == 1  # J2, slot 1
    rules = observation["rules"].reshape(2, len(RULE_FEATURES))
    np.testing.assert_array_equal(rules[0], [1.0] + [0.0] * 11)
    expected = {"ends_round": 0.0, "num_gpus_frac": 0.5, "log_remaining_ideal_time":
                log_time(100.0), "log_waiting_time": 0.0, "was_running": 0.0,
                "queue_position": 1 / 16, "max_slowdown": 0.25, "predicted_speed": 0.5,
                "spans_nodes": 0.0, "best_tier_frac": 1.0, "keeps_gpus": 0.0,
                "agree_frac": 0.0}
    np.testing.assert_allclose(rules[1], [expected[f] for f in RULE_FEATURES], rtol=1e-6)
    state = dict(zip(STATE_FEATURES, observation["state"].tolist(), strict=True))
    hand = {"free_frac": 0.5, "pending_frac": 3 / 16, "queued_frac": 4 / 64, "log_time": 0.0,
            "free_best_classA": 0.5, "free_best_classD": 0.5, "nodes_all_free_frac": 0.0,
            "nodes_none_free_frac": 0.0, "window_frac": 3 / 16, "window_fits_frac": 2 / 3,
            "head_num_gpus_frac": 1.0, "head_class_A": 1.0, "head_class_B": 0.0,
            "head_log_remaining_ideal_time": log_time(100.0), "head_log_waiting_time": 0.0,
            "head_fits": 0.0}
    for name, value in hand.items():
        assert state[name] == pytest.approx(value, rel=1e-6), name


def test_a_round_choice_holds_for_the_round_a_decision_choice_does_not() -> None:
    # 1x4: J0 fits; then J1 (4 GPUs) blocks the head and first-fit places J2, then J3 (two
    # disagreements in round 0), then ends the round.
    by_round, by_decision = toy_env("round", gpus=4), toy_env("decision", gpus=4)
    by_round.reset(seed=0)
    _, _, _, _, info = by_round.step(1)  # pal+backfill holds round 0: J0, J2, J3, end
    assert info["base_decisions"] >= 4 and by_round.simulator.round_index > 0
    assert by_round.simulator.jobs.first_start_time_s[[0, 2, 3]].tolist() == [0.0] * 3
    by_decision.reset(seed=0)
    for _ in range(2):  # J0, then J2: one decision each, asked again in round 0
        _, _, _, _, info = by_decision.step(1)
        assert info["base_decisions"] == 1 and by_decision.simulator.round_index == 0
        assert len(set(by_decision.rule_actions())) == 2  # pal ends the round, backfill not


def test_rules_with_the_same_effect_agree() -> None:
    # 1x2, one 2-GPU job: PAL takes its within-node candidate, PM-First its best-factor one
    # (other action numbers), both the node's two GPUs: the same effect
    env = SelectorEnv(toy_trace((2, 0.0, 100.0, A)), rules=("pal", "pm-first"),
                      cluster=ClusterSpec(1, 2), profile=toy_profile(2), round_duration_s=R)
    observation, _ = env.reset(seed=0)
    pal, pm_first = env.rule_actions()
    assert pal != pm_first
    assert env.rule_groups().tolist() == [0, 0]
    agree = observation["rules"].reshape(2, len(RULE_FEATURES))[:, -1]
    assert agree.tolist() == [1.0, 1.0]


def test_mask_is_all_true_and_every_rule_action_is_valid() -> None:
    env = SelectorEnv("sia-philly-gen-3", window=30, queue_order="srtf")
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    steps = 0
    while True:
        mask = env.action_masks()
        assert mask.dtype == np.bool_ and mask.shape == (len(DEFAULT_RULES),) and mask.all()
        assert env.base.action_masks()[env.rule_actions()].all()  # a rule's action is valid
        _, _, terminated, truncated, info = env.step(int(rng.integers(len(DEFAULT_RULES))))
        steps += 1
        if terminated or truncated:
            break
    assert info["episode_metrics"]["num_invalid_actions"] == 0
    assert steps > 5


@pytest.mark.parametrize("granularity", ["round", "decision"])
@pytest.mark.parametrize("rule", ["pal+backfill", "pm-first+easy"])
def test_a_constant_selector_reproduces_its_rule(rule: str, granularity: str) -> None:
    env = gym.make(SELECTOR, trace="sia-philly-gen-3", window=50, queue_order="srtf",
                   granularity=granularity)
    selector = env.unwrapped
    for seed in (0, 1):
        _, info = env.reset(seed=seed)
        total, steps = 0.0, 0
        while True:
            _, reward, terminated, truncated, step_info = env.step(
                selector.heuristic_action(rule))
            total, steps = total + reward, steps + 1
            if terminated or truncated:
                break
        direct = run_episode(selector.episode, rule, "srtf")
        records = selector.simulator.records()
        np.testing.assert_array_equal(records.completion_time_s,
                                      direct.records.completion_time_s)
        assert step_info["episode_metrics"]["avg_jct_s"] == direct.metrics.avg_jct_s
        assert step_info["episode_metrics"]["num_unfinished"] == 0
        # the return telescopes as the base env's: -sum(JCT) / reward_scale
        assert total == pytest.approx(-direct.records.jct_s.sum() / 360_000.0, rel=1e-12)
        if granularity == "round":  # at most one choice per round
            assert steps <= step_info["episode_metrics"]["num_rounds"]


def test_round_choices_are_one_per_round() -> None:
    env = SelectorEnv("sia-philly-gen-3", window=40)
    env.reset(seed=2)
    rounds = [env.simulator.round_index]
    rng = np.random.default_rng(1)
    while True:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(len(DEFAULT_RULES))))
        if terminated or truncated:
            break
        assert env.rule_groups().any()  # asked only where the rules' effects differ
        rounds.append(env.simulator.round_index)
    assert all(b > a for a, b in zip(rounds, rounds[1:], strict=False))


def run_random(seed: int) -> tuple[list[np.ndarray], list[float], dict[str, object]]:
    env = gym.make(SELECTOR, trace="bundled:train", window=30, queue_order="srsf",
                   reward="relative", baseline_policy="pal+backfill")
    observation, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen, rewards = [observation["rules"]], []
    while True:
        observation, reward, terminated, truncated, info = env.step(int(rng.integers(6)))
        seen.append(observation["rules"])
        rewards.append(reward)
        if terminated or truncated:
            return seen, rewards, info["episode_metrics"]


def test_same_seed_same_episode() -> None:
    first, second = run_random(4), run_random(4)
    assert len(first[0]) == len(second[0])
    for a, b in zip(first[0], second[0], strict=True):
        np.testing.assert_array_equal(a, b)
    assert first[1] == second[1]
    assert first[2] == second[2]


def test_layout_depends_on_rules_and_slots_only() -> None:
    committed = ENV_LAYOUTS[SELECTOR]["default"]
    for kwargs in ({"queue_order": "srsf"}, {"granularity": "decision"}, {"cluster": "2x8"},
                   {"max_tiers": 2}, {"reward": "relative", "baseline_policy": "pal"}):
        assert layout_hash(gym.make(SELECTOR, window=8, **kwargs)) == committed, kwargs
    assert layout_hash(gym.make(SELECTOR, window=8, rules=list(DEFAULT_RULES[:2]))) != committed


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"rules": ["pal", "srtf/pal"]}, "queue order is the env's queue_order"),
    ({"rules": []}, "non-empty list"),
    ({"rules": ["pal", "pal"]}, "given twice"),
    ({"rules": ["pal", "packed-non-sticky"]}, "class_reorder=False"),
    ({"rules": ["pal", "best-fit"]}, "heuristic must be one of"),
    ({"num_slots": 8}, "num_slots=16"),
    ({"task": "placement"}, "sets task itself"),
    ({"strict": False}, "sets strict itself"),
    ({"granularity": "job"}, "granularity must be one of"),
    ({"work_conserving": True}, "work_conserving=True"),
])
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SelectorEnv("sia-philly-gen-0", window=8, **kwargs)


def test_bad_actions_and_calls() -> None:
    env = toy_env()
    with pytest.raises(PalgymError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    for action in (2, -1, 0.5, "0", True):
        with pytest.raises(InvalidActionError, match="Discrete"):
            env.step(action)
    with pytest.raises(ConfigError, match="not a rule of the selector's field"):
        env.heuristic_action("pm-first")
    assert env.heuristic_action("pal+backfill") == 1
    while not env.step(np.int64(1))[2]:
        pass
    with pytest.raises(PalgymError, match="reset"):
        env.step(0)
