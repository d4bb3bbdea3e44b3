"""The cluster-independent layout (``-v1`` ids, docs/ENV.md "Cluster-independent layout"):
the same spaces on every cluster and profile within the documented maxima, padded entries zero
and masked, clear errors past the maxima, and heuristics taking the same episodes as in
``-v0``.

The profiles are made by hand so that their tier counts are known: a class whose 64 GPUs hold
exactly k distinct values, each on 64 / k or so GPUs, is fitted to exactly k tiers (the
silhouette rule of the default preset scores a partition into its k distinct values 1.0, the
largest score, and no other K reaches it).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import palgym
from agents.base import heuristic_env_kwargs
from palgym.envs.features import MAX_GPUS_PER_NODE, MAX_TIERS
from palgym.envs.layouts import ENV_LAYOUTS, layout_hash
from palgym.errors import ConfigError
from palgym.sim.variability import VariabilityProfile

REPO = Path(__file__).resolve().parents[1]
V0, V1 = "palgym/PALPlacement-v0", "palgym/PALPlacement-v1"
TRACE, WINDOW = "sia-philly-gen-0", 24
VALUES = (1.0, 1.1, 1.25, 1.45, 1.7, 2.0)


def profile(num_gpus: int, tiers: tuple[int, int, int, int], name: str) -> VariabilityProfile:
    """Class c's GPU g has the value VALUES[g mod tiers[c]]: exactly tiers[c] distinct values."""
    gpus = np.arange(num_gpus)
    perfvar = np.array([[VALUES[g % k] for g in gpus] for k in tiers], dtype=np.float64)
    return VariabilityProfile(name, perfvar)


THREE = profile(64, (3, 2, 3, 2), "hand-3-tiers")
FIVE = profile(64, (5, 2, 4, 3), "hand-5-tiers")


def make(env_id: str, cluster: str, prof: VariabilityProfile, **kwargs: object) -> gym.Env:
    return gym.make(env_id, trace=TRACE, window=WINDOW, cluster=cluster, profile=prof,
                    disable_env_checker=True, **kwargs)


def test_the_maxima_are_the_registered_defaults() -> None:
    assert palgym.PORTABLE_LAYOUT == {"max_tiers": MAX_TIERS,
                                      "max_gpus_per_node": MAX_GPUS_PER_NODE}
    for env_id in ("palgym/PALPlacement-v1", "palgym/PALScheduling-v1"):
        assert {k: gym.spec(env_id).kwargs[k] for k in palgym.PORTABLE_LAYOUT} == \
            palgym.PORTABLE_LAYOUT


def test_hand_profiles_have_the_intended_tiers() -> None:
    for prof, counts in ((THREE, [3, 2, 3, 2]), (FIVE, [5, 2, 4, 3])):
        env = make(V1, "16x4", prof)
        env.reset(seed=0)
        assert [t.size for t in env.unwrapped._ctx.factors.tiers] == counts


@pytest.mark.parametrize("env_id", ["palgym/PALPlacement-v1", "palgym/PALScheduling-v1"])
def test_spaces_do_not_depend_on_the_cluster_or_the_profile(env_id: str) -> None:
    envs = [make(env_id, cluster, prof) for cluster in ("16x4", "8x8") for prof in (THREE, FIVE)]
    envs.append(make(env_id, "16x8", profile(128, (5, 2, 4, 3), "hand-128")))
    first = envs[0].unwrapped
    # K = 16, T = 8: M = 18 candidates, 16 * 18 + 1 = 289 actions; cluster: 4 classes x 8
    # tiers + 17 histogram bins (n = 0 .. 16) + 4 = 53 entries
    assert first.observation_shapes == {"jobs": (16, 12), "candidates": (16, 18, 7),
                                        "cluster": (53,)}
    assert first.action_space.n == 289
    for env in envs:
        assert env.observation_space == first.observation_space
        assert env.action_space == first.action_space
        assert env.unwrapped.feature_names == first.feature_names
        assert layout_hash(env) == ENV_LAYOUTS[env_id]["default"]
        obs, _ = env.reset(seed=1)
        assert env.observation_space.contains(obs)


def test_v0_spaces_depend_on_both_as_before() -> None:
    four, eight = make(V0, "16x4", THREE).unwrapped, make(V0, "8x8", THREE).unwrapped
    assert four.observation_shapes["cluster"] == (4 * 4 + 5 + 4,)  # 4T + (G_n + 1) + 4
    assert eight.observation_shapes["cluster"] == (4 * 4 + 9 + 4,)
    assert four.action_space.n == 16 * 10 + 1


def _parts(env: gym.Env, obs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    shapes = env.unwrapped.observation_shapes
    return obs["candidates"].reshape(shapes["candidates"]), obs["cluster"]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_padded_entries_are_zero_and_masked(backend: str) -> None:
    env = make(V1, "8x8", THREE, backend=backend)
    obs, _ = env.reset(seed=0)
    env_u = env.unwrapped
    names = env_u.feature_names["cluster"]
    codec = env_u.codec
    steps = 0
    while True:
        candidates, cluster = _parts(env, obs)
        mask = env_u.action_masks()[:-1].reshape(16, codec.num_candidates)
        window = env_u._decision.candidates.jobs
        for k, job in enumerate(window.tolist()):
            tiers = (3, 2, 3, 2)[int(env_u.simulator.jobs.perf_class[job])]
            for t in range(tiers, MAX_TIERS):  # tiers the job's class does not have
                for m in (codec.within(t), codec.best(t)):
                    assert not candidates[k, m].any() and not mask[k, m]
        for c, name in enumerate("ABCD"):
            counts = [cluster[names.index(f"free_tier{t}_class{name}")] for t in range(8)]
            assert not any(counts[(3, 2, 3, 2)[c]:])
            # every free GPU is on one tier of each class: the counts add up to free_frac
            assert sum(counts) == pytest.approx(cluster[names.index("free_frac")], abs=1e-6)
        histogram = [cluster[names.index(f"nodes_with_{n}_free")] for n in range(17)]
        assert not any(histogram[9:])  # n > G_n = 8
        assert sum(histogram) == pytest.approx(1.0, abs=1e-6)  # every node in one bin
        obs, _, terminated, truncated, _ = env.step(env_u.heuristic_action("pal"))
        steps += 1
        if terminated or truncated or steps == 40:
            break


def test_first_decision_values_by_hand() -> None:
    """Before the first placement every GPU is free: class A's 64 GPUs hold 1.0, 1.1, 1.25
    in turn (22, 21, 21 GPUs), all 8 nodes have 8 free GPUs."""
    env = make(V1, "8x8", THREE)
    obs, _ = env.reset(seed=0, options={"window_start": 0})
    names = env.unwrapped.feature_names["cluster"]
    assert env.unwrapped.simulator.job_of_gpu.max() < 0  # nothing placed yet
    cluster = obs["cluster"]
    tiers_a = [cluster[names.index(f"free_tier{t}_classA")] for t in range(3)]
    assert tiers_a == pytest.approx([22 / 64, 21 / 64, 21 / 64])
    assert cluster[names.index("nodes_with_8_free")] == 1.0
    assert cluster[names.index("free_frac")] == 1.0


def test_more_tiers_than_the_maximum_names_profile_class_and_counts() -> None:
    env = make(V0, "16x4", FIVE)  # max_tiers 4 < class A's 5 tiers
    with pytest.raises(ConfigError) as error:
        env.reset(seed=0)
    message = str(error.value)
    assert "hand-5-tiers" in message and "perf class A" in message
    assert "5 slowdown tiers" in message and "A 5, B 2, C 4, D 3" in message
    assert "max_tiers=4" in message and "\n" not in message
    # 9 tiers: the artifact's outliers rule takes K = 2 + (values > mean + 3 std); class D's
    # 128 GPUs: 121 at 1.0 / 1.01 and 7 outliers 3.0 .. 3.6 (mean 1.13, std 0.52: all 7 lie
    # above 2.7), so K = 9 = its distinct values; classes A .. C have no outlier: K = 2
    base = profile(128, (3, 2, 2, 2), "base").perfvar
    d = np.array([1.0 + 0.01 * (g % 2) for g in range(121)] + [3.0 + 0.1 * i for i in range(7)])
    nine = VariabilityProfile("hand-9-tiers", np.vstack([base[:3], d]))
    with pytest.raises(ConfigError, match=r"hand-9-tiers.* 9 slowdown tiers in perf class D "
                                          r"\(tiers per class: A 2, B 2, C 2, D 9\), more "
                                          r"than max_tiers=8"):
        make(V1, "32x4", nine, preset="pal-artifact").reset(seed=0)


def test_more_gpus_per_node_than_the_maximum_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"32 GPUs per node, more than max_gpus_per_node=16"):
        gym.make(V1, trace=TRACE, window=WINDOW, cluster="2x32")
    with pytest.raises(ConfigError, match="max_gpus_per_node must be an int >= 1"):
        gym.make(V0, trace=TRACE, window=WINDOW, max_gpus_per_node=0)


def _episode(env_id: str, name: str, backend: str) -> tuple[np.ndarray, int]:
    env = make(env_id, "16x4", THREE, backend=backend, **heuristic_env_kwargs(name))
    env.reset(seed=3)
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(env.unwrapped.heuristic_action(name))
        steps += 1
        if terminated or truncated:
            assert info["num_invalid_actions"] == 0
            return env.unwrapped.simulator.jobs.completion_time_s.copy(), steps


@pytest.mark.parametrize("name", ["pal", "pm-first", "packed-sticky", "random-non-sticky"])
def test_heuristics_take_the_same_episode_in_v0_and_v1(name: str) -> None:
    old, old_steps = _episode(V0, name, "numba")
    new, new_steps = _episode(V1, name, "numba")
    assert old_steps == new_steps
    assert np.array_equal(old, new, equal_nan=True) and np.isfinite(old).any()


def test_both_backends_agree_on_the_padded_layout() -> None:
    envs = [make(V1, "8x8", FIVE, backend=b) for b in ("numba", "numpy")]
    observations = [env.reset(seed=2)[0] for env in envs]
    for _ in range(30):
        for key in observations[0]:
            assert np.array_equal(observations[0][key], observations[1][key]), key
        assert np.array_equal(envs[0].unwrapped.action_masks(), envs[1].unwrapped.action_masks())
        action = envs[0].unwrapped.heuristic_action("pal")
        steps = [env.step(action) for env in envs]
        observations = [s[0] for s in steps]
        if steps[0][2] or steps[0][3]:
            break


def test_a_model_trained_on_one_cluster_runs_on_another(tmp_path: Path) -> None:
    """A few hundred MaskablePPO steps on a 16x4 cluster of 3 tiers a class (train.py), then
    evaluate.py's side-by-side run of that model, unchanged, on a 16x8 cluster whose profile
    has 5 tiers in class A: the layout check passes, every episode completes, no action is
    invalid."""
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    three, five = tmp_path / "three.csv", tmp_path / "five.csv"
    palgym.write_profile(THREE, three)
    palgym.write_profile(profile(128, (5, 2, 4, 3), "hand-128-5-tiers"), five)
    common = {"cwd": REPO, "capture_output": True, "text": True, "timeout": 540, "check": False}
    trained = subprocess.run(
        [sys.executable, "train.py", "--env", V1, "--algo", "maskable_ppo", "-n", "256",
         "--seed", "0", "--trace", TRACE, "--window", "20", "--n-envs", "1", "--eval-freq",
         "0", "--num-threads", "1", "--verbose", "0", "--hyperparams", "n_steps:64",
         "batch_size:64", "n_epochs:2", "--env-kwargs", f"profile:{three}",
         "-f", str(tmp_path / "runs")], **common)
    assert trained.returncode == 0, trained.stderr
    run = tmp_path / "runs" / "palgym_PALPlacement-v1_maskable_ppo_0"
    result = tmp_path / "result.csv"
    evaluated = subprocess.run(
        [sys.executable, "evaluate.py", "--agent", str(run), "--trace", "sia-philly-gen-3",
         "--window", "20", "--seeds", "0", "--policy", "pal", "--profile", str(five),
         "--cluster", "16x8", "--output", str(result), "--quiet"], **common)
    assert evaluated.returncode == 0, evaluated.stderr
    rows = list(csv.DictReader(result.open()))
    assert {row["policy"] for row in rows} >= {"pal"} and len(rows) >= 2
    for row in rows:
        assert row["num_completed"] == row["num_jobs"] == "20"
        assert row.get("num_invalid_actions", "0") in ("0", "")
