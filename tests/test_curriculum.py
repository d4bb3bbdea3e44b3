"""agents.sb3.curriculum: the window pool and probabilities by hand, seeded draws, replays."""

from __future__ import annotations

import numpy as np
import pytest

from agents.sb3.curriculum import (
    CurriculumWrapper,
    check_curriculum,
    sampling_probabilities,
    window_pool,
)
from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError

KWARGS = {"trace": "sia-philly-gen-0", "window": 8, "num_slots": 4, "max_tiers": 4,
          "reward": "relative", "baseline_policy": "pal"}


def test_window_pool_by_hand() -> None:
    # 130 jobs in windows of 60, stride 30: starts 0, 30, 60 (90 + 60 > 130), then the tail
    # window 70..129; 50 jobs: one whole window
    assert window_pool([130, 50], 60) == [(0, 0), (0, 30), (0, 60), (0, 70), (1, 0)]
    assert window_pool([130, 50], None) == [(0, 0), (1, 0)]
    assert window_pool([120], 60) == [(0, 0), (0, 30), (0, 60)]  # 60..119 ends at the last
    assert window_pool([10], 3) == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6),
                                    (0, 7)]


def test_probabilities_by_hand() -> None:
    # deficits 0.3, 0, (unplayed: the largest played, 0.3), 0.1; sum 0.7; floor 0.2 of 4
    p = sampling_probabilities([-0.3, 0.1, None, -0.1], 0.2)
    assert p.tolist() == pytest.approx([0.05 + 0.8 * 3 / 7, 0.05, 0.05 + 0.8 * 3 / 7,
                                        0.05 + 0.8 / 7])
    assert sampling_probabilities([None, None], 0.5).tolist() == [0.5, 0.5]
    assert sampling_probabilities([0.2, 0.0, 1.0], 0.1).tolist() == pytest.approx([1 / 3] * 3)


def _play(env: CurriculumWrapper, seed: int | None) -> tuple[tuple[int, int], float]:
    """One episode of the first valid action; (drawn window, return)."""
    _, info = env.reset(seed=seed)
    window = (info["curriculum"]["trace"], info["curriculum"]["window_start"])
    assert info["window_start"] == window[1]
    total, done = 0.0, False
    while not done:
        action = int(np.flatnonzero(env.unwrapped.action_masks())[0])
        _, reward, terminated, truncated, _ = env.step(action)
        total += reward
        done = terminated or truncated
    return window, total


def test_same_seed_same_windows_and_returns_are_recorded() -> None:
    runs = []
    for _ in range(2):
        env = CurriculumWrapper(ClusterEnv(**KWARGS), floor=0.3)
        played = [_play(env, 7)] + [_play(env, None) for _ in range(2)]
        runs.append(played)
        for window, total in played[-1:]:
            index = env.pool.index(window)
            assert env.last_returns[index] == pytest.approx(total)
        assert sum(row["visits"] for row in env.summary()) == 3
    assert runs[0] == runs[1]


def test_a_repeated_seed_replays_the_window() -> None:
    env = CurriculumWrapper(ClusterEnv(**KWARGS), floor=0.3)
    first, _ = _play(env, 11)
    env.last_returns = [-5.0 if w != first else 0.0 for w in env.pool]  # others now trail
    again, _ = _play(env, 11)
    assert again == first


def test_trailing_windows_are_drawn_more() -> None:
    env = CurriculumWrapper(ClusterEnv(**KWARGS), floor=0.2)
    n = len(env.pool)
    env.last_returns = [0.0] * n
    env.last_returns[3] = -1.0  # p = 0.2 / n + 0.8 for window 3
    draws = []
    for i in range(40):
        _, info = env.reset(seed=100 + i)
        draws.append(info["curriculum"]["window_start"] == env.pool[3][1])
        assert info["curriculum"]["probability"] == pytest.approx(
            0.2 / n + (0.8 if draws[-1] else 0.0))
    assert sum(draws) >= 24  # expected 40 x 0.8 = 32; P(< 24) < 1e-3 for Binomial(40, 0.8)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"\(0, 1\], got 0.0"):
        check_curriculum(0.0, {"reward": "relative"})
    with pytest.raises(ConfigError, match="reward:relative"):
        check_curriculum(0.5, {"reward": "jct"})
    check_curriculum(None, {})


def test_train_with_a_curriculum(tmp_path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")
    import yaml

    from agents.sb3.hyperparams import load_hyperparams
    from agents.sb3.training import TrainSettings, train

    settings = TrainSettings(
        n_timesteps=32, trace="sia-philly-gen-0", window=6, eval_freq=-1,
        log_folder=str(tmp_path), env_kwargs=KWARGS | {"window": 6},
        hyperparams={"n_steps": 32, "batch_size": 32, "n_epochs": 1}, verbose=0,
        curriculum=0.5)
    result = train(settings)
    config = yaml.safe_load((result.run_dir / "config.yml").read_text())
    assert config["curriculum"] == 0.5
    # the YAML's envs, stepped in this process: the curriculum wraps each single env, which
    # the batched env does not have
    n_envs = load_hyperparams("maskable_ppo", "palgym/PALPlacement-v0")["n_envs"]
    assert (config["n_envs"], config["vec_env"]) == (n_envs, "dummy")
    record = yaml.safe_load((result.run_dir / "curriculum.yml").read_text())
    assert len(record["envs"]) == n_envs
    windows = record["envs"][0]
    assert record["floor"] == 0.5 and windows[1]["window_start"] == 3
    played = [w for w in windows if w["last_return"] is not None]
    # 32 steps of >= 6 decisions: at least one episode ended, and every reset was counted
    assert played and sum(w["visits"] for w in windows) >= len(played) + 1
    with pytest.raises(ConfigError, match="reward:relative"):
        train(TrainSettings(**{**settings.__dict__, "env_kwargs": {"num_slots": 4}}))
