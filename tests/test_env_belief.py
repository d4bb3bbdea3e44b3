"""The env's belief option: the candidates, the observation and the env's heuristics decide on
the belief (oracle, stale, online) while the engine runs the dynamic truth, reproducing
run_episode(belief=...) bit for bit; on a static preset every belief is the truth; the option
is checked, recorded and reproducible across processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from palgym.bundled import bundled_trace_paths
from palgym.envs import ClusterEnv
from palgym.envs.features import GPU, GPU_FEATURES
from palgym.errors import ConfigError
from palgym.policies.belief import BeliefMode, BeliefOptions
from palgym.sim.config import preset
from palgym.sim.dynamics import VariabilityDynamics
from palgym.simulate import run_episode
from tests.toys import A, R, toy_profile, toy_trace

REPO = Path(__file__).resolve().parents[1]
TRACE = str(sorted(bundled_trace_paths().values())[0])
WINDOW = 80
DOCS = REPO / "docs" / "ENV.md"
THROTTLE = VariabilityDynamics(throttle=True, throttle_start_prob=0.5, throttle_rounds=3,
                               throttle_factor=2.0)


def env_episode(belief: object, policy: str = "pal", preset: str = "dynamic",
                task: str = "placement", seed: int = 0) -> ClusterEnv:
    """An env run to the end by ``policy`` (its heuristic agent) on a job window."""
    env = ClusterEnv(TRACE, preset=preset, window=WINDOW, max_tiers=6, belief=belief,  # type: ignore[arg-type]
                     task=task, sticky=policy.endswith("-sticky"),
                     class_reorder=policy in ("pal", "pm-first"))
    env.reset(seed=seed)
    while True:
        _, _, terminated, truncated, _ = env.step(env.heuristic_action(policy))
        if terminated or truncated:
            return env


def completions(env: ClusterEnv) -> np.ndarray:
    return env.simulator.records().completion_time_s


@pytest.mark.parametrize(("belief", "policy"), [
    ("oracle", "pal"), ("stale", "pal"), ("online", "pal"), ("online", "pm-first"),
    ({"mode": "online", "alpha": 0.6, "refit_interval_rounds": 3}, "pal"),
    ({"mode": "online", "solver": "sklearn"}, "pal"),  # the profile's k-means for the refits
])
def test_env_reproduces_run_episode_under_each_belief(belief: object, policy: str) -> None:
    env = env_episode(belief, policy)
    direct = run_episode(env.episode, policy, "fifo", belief=env.belief)
    assert np.array_equal(completions(env), direct.records.completion_time_s, equal_nan=True)
    assert env.episode_context.fit.refits == direct.refits
    if env.belief.mode is not BeliefMode.STALE:  # the dynamic truth moves the belief
        assert direct.refits > 0
        assert env.episode_context.fit_count == direct.refits  # the env decided on the refit


def test_the_belief_reaches_the_env_decisions() -> None:
    """Stale and oracle PAL differ in the dynamic world, and each env run matches only the
    direct run of its own belief (so the test above cannot pass with the belief ignored)."""
    stale, oracle = env_episode("stale"), env_episode("oracle")
    assert not np.array_equal(completions(stale), completions(oracle))
    other = run_episode(stale.episode, "pal", "fifo", belief="oracle")
    assert not np.array_equal(completions(stale), other.records.completion_time_s)


def test_scheduling_task_parity_under_online_belief() -> None:
    env = env_episode("online", task="scheduling")
    direct = run_episode(env.episode, "pal", "fifo", belief="online")
    assert np.array_equal(completions(env), direct.records.completion_time_s)


def test_static_preset_belief_is_the_truth() -> None:
    """Without a dynamic truth stale and online start at the profile and never refit: the
    same episode and the same observation as oracle."""
    runs = [env_episode(b, preset="default") for b in ("oracle", "stale", "online")]
    for env in runs[1:]:
        assert np.array_equal(completions(env), completions(runs[0]))
        assert env.episode_context.fit.refits == 0
        factors, truth = env.episode_context.factors, runs[0].episode_context.factors
        assert np.array_equal(factors.sf, truth.sf)
    first = [ClusterEnv(TRACE, window=WINDOW, belief=b).reset(seed=3)[0] for b in ("oracle",
                                                                                "online")]
    for key in first[0]:
        assert np.array_equal(first[0][key], first[1][key])


def test_belief_is_checked_and_recorded() -> None:
    with pytest.raises(ConfigError, match="belief must be one of"):
        ClusterEnv(TRACE, belief="psychic")
    with pytest.raises(ConfigError, match="'alhpa'"):
        ClusterEnv(TRACE, belief={"mode": "online", "alhpa": 0.5})
    with pytest.raises(ConfigError, match="alpha"):
        ClusterEnv(TRACE, belief={"mode": "online", "alpha": 0.0})
    env = gym.make("palgym/PALScheduling-v0", trace=TRACE, window=WINDOW, preset="dynamic",
                   belief="stale")
    _, info = env.reset(seed=1)
    assert info["belief"] == "stale"
    assert env.unwrapped.episode.belief == BeliefOptions("stale")  # type: ignore[attr-defined]


def test_env_kwargs_reach_the_env() -> None:
    """``--env-kwargs belief:stale`` (train.py, evaluate.py) parses to the env's argument."""
    from agents.sb3.hyperparams import parse_key_values

    kwargs = parse_key_values(["belief:stale"])
    env = gym.make("palgym/PALPlacement-v0", trace=TRACE, window=WINDOW, **kwargs)
    assert env.unwrapped.belief.mode is BeliefMode.STALE  # type: ignore[attr-defined]
    mapping = parse_key_values(["belief:{mode: online, alpha: 0.5}"])
    env = gym.make("palgym/PALPlacement-v0", trace=TRACE, window=WINDOW, **mapping)
    assert env.unwrapped.belief == BeliefOptions("online", alpha=0.5)  # type: ignore[attr-defined]


SCRIPT = """
from tests.test_env_belief import env_episode, completions
print(completions(env_episode("online", seed=5)).tolist())
"""


def test_same_seed_same_result_across_processes() -> None:
    outputs = []
    for hash_seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=REPO, check=True,
                              capture_output=True, text=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].startswith("[")


# ---------------------------------------------------------------- observed rates (gpus key)
def toy_env(**kwargs: object) -> ClusterEnv:
    """One class-A job of 1e9 iterations (T_it = 1 s) on a 1-GPU cluster of character 1.0,
    R = 100 s, throttling episodes of factor 2 (probability 1/2 a round, 3 rounds)."""
    env = ClusterEnv(toy_trace((1, 0.0, 1e9, A)), cluster="1x1", profile=toy_profile(1),
                     round_duration_s=R, observed_rates=True, **kwargs)  # type: ignore[arg-type]
    env.config = preset("default", round_duration_s=R, dynamics=THROTTLE)
    return env


def gpu_row(observation: dict[str, np.ndarray], env: ClusterEnv, gpu: int = 0) -> np.ndarray:
    return observation["gpus"].reshape(env.observation_shapes["gpus"])[gpu]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_throttled_gpu_shows_in_the_observed_rate_after_the_round(backend: str) -> None:
    """Throttled in round r (factor 2 on character 1), the job runs at T_eff = 2 s an
    iteration: 50 iterations in R = 100 s, o = (100 / 50) / 1 = 2, feature 2 / 4 = 0.5; an
    unthrottled round gives o = 1, 0.25. Before any round: 0, and age 1 (never seen)."""
    env = toy_env(backend=backend)
    observation, _ = env.reset(seed=0)
    row = gpu_row(observation, env)
    assert (row[GPU.observed_slowdown], row[GPU.observed_age]) == (0.0, 1.0)
    seen = set()
    for _ in range(12):
        factor = float(env.simulator.truth.process.throttle[0])  # type: ignore[union-attr]
        assert factor in (1.0, 2.0)
        observation, *_ = env.step(env.heuristic_action("pal"))
        row = gpu_row(observation, env)
        assert row[GPU.observed_slowdown] == pytest.approx(factor / 4.0, rel=1e-6)
        assert row[GPU.observed_age] == 0.0  # seen in the round just ended
        # the oracle's belief is the truth of the new round: character x its throttle
        now = float(env.simulator.truth.process.throttle[0])  # type: ignore[union-attr]
        assert row[GPU.believed_A] == pytest.approx(now / 4.0, rel=1e-6)
        assert row[GPU.believed_B] == pytest.approx(now / 4.0, rel=1e-6)  # every class
        seen.add(factor)
    assert seen == {1.0, 2.0}  # the seed gives throttled and unthrottled rounds


def test_observed_age_counts_rounds_since_the_gpu_was_seen() -> None:
    """A 2-GPU cluster, the job on GPU 0 (Packed): GPU 1 is never seen (age 1, slowdown 0),
    GPU 0 is seen every round (age 0)."""
    env = ClusterEnv(toy_trace((1, 0.0, 1e9, A)), cluster="1x2", profile=toy_profile(2),
                     round_duration_s=R, observed_rates=True, class_reorder=False)
    env.reset(seed=0)
    for _ in range(3):
        observation, *_ = env.step(env.heuristic_action("packed-non-sticky"))
    rows = observation["gpus"].reshape(2, len(GPU_FEATURES))
    assert rows[:, GPU.observed_slowdown].tolist() == [0.25, 0.0]  # o = 1 on GPU 0
    assert rows[:, GPU.observed_age].tolist() == [0.0, 1.0]
    assert env.feature_names["gpus"][len(GPU_FEATURES) + GPU.observed_age] == "gpu1.observed_age"


def test_observed_rates_off_keeps_the_observation_and_on_keeps_the_episode() -> None:
    plain = ClusterEnv(TRACE, window=WINDOW)
    assert set(plain.observation_space.spaces) == {"jobs", "candidates", "cluster"}
    env = env_episode("online", preset="default")
    rated = ClusterEnv(TRACE, window=WINDOW, max_tiers=6, belief="online", observed_rates=True)
    assert rated.observation_shapes["gpus"] == (64, len(GPU_FEATURES))
    observation, _ = rated.reset(seed=0)
    assert rated.observation_space.contains(observation)
    while True:  # watching every round leaves the episode as it was
        _, _, terminated, truncated, _ = rated.step(rated.heuristic_action("pal"))
        if terminated or truncated:
            break
    assert np.array_equal(completions(rated), completions(env))
    text = DOCS.read_text().split("### `gpus`", 1)[1].split("\n#", 1)[0]
    documented = re.findall(r"^\| `([^`]+)`", text, flags=re.MULTILINE)
    expanded = [n for name in documented for n in (
        [f"believed_{c}" for c in "ABCD"] if name == "believed_A" else [name])]
    assert expanded == list(GPU_FEATURES)


def test_observed_rates_when_no_job_ran_and_on_a_whole_trace() -> None:
    """A round in which no job ran gives no observation (empty arrays, not an IndexError);
    a whole 160-job trace resets and steps with ``observed_rates``, and each step's ``gpus``
    key is its own array (no memory shared with the previous step's)."""
    from palgym.policies.belief import observed_slowdowns

    none = np.empty(0, np.int64)
    env = ClusterEnv("sia-philly-gen-0", window=None, observed_rates=True)
    env.reset(seed=0)
    starts, ends, observed = observed_slowdowns(env.simulator.view(), none, np.empty(0),
                                                np.empty(0, bool))
    assert starts.size == ends.size == observed.size == 0
    previous = None
    for _ in range(20):
        obs, _, terminated, truncated, _ = env.step(env.heuristic_action("pal"))
        assert obs["gpus"].shape == (64 * len(GPU_FEATURES),)
        assert previous is None or not np.shares_memory(obs["gpus"], previous)
        previous = obs["gpus"]
        assert not (terminated or truncated)
