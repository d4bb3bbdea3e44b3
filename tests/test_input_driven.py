"""agents.sb3.input_driven: time-aligned K-mean baselines by hand, and K rollouts on one input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")

from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402

from agents.sb3.envs import make_vec_env  # noqa: E402
from agents.sb3.input_driven import (  # noqa: E402
    check_input_driven,
    input_driven_advantages,
    make_input_driven_model,
    returns_to_go,
)
from palgym.errors import ConfigError  # noqa: E402

# Two episodes of one input, gamma 1.
# episode 0: times 0, 0, 10, 20; rewards 0, 1, 2, 3 -> returns 6, 6, 5, 3
# episode 1: times 0, 10, 10, 30; rewards 1, 0, 1, 1 -> returns 3, 2, 2, 1
# baseline at t: mean over both of the return from the first step at time >= t (0 past the end)
#   t=0: (6 + 3) / 2 = 4.5   t=10: (5 + 2) / 2 = 3.5   t=20: (3 + 1) / 2 = 2   t=30: (0 + 1) / 2
TOY = {
    "rewards": np.array([0, 1, 2, 3, 1, 0, 1, 1], dtype=float),
    "episodes": np.array([0, 0, 0, 0, 1, 1, 1, 1]),
    "times_s": np.array([0, 0, 10, 20, 0, 10, 10, 30], dtype=float),
}


def test_advantage_is_return_minus_the_time_aligned_k_mean() -> None:
    returns, baselines, advantages = input_driven_advantages(**TOY, gamma=1.0)
    assert returns.tolist() == [6, 6, 5, 3, 3, 2, 2, 1]
    assert baselines.tolist() == [4.5, 4.5, 3.5, 2, 4.5, 3.5, 3.5, 0.5]
    assert advantages.tolist() == [1.5, 1.5, 1.5, 1, -1.5, -1.5, -1.5, 0.5]


def test_identical_episodes_have_zero_advantage() -> None:
    rewards = np.tile([0.5, -1.0, 2.0], 3)
    _, baselines, advantages = input_driven_advantages(
        rewards, np.repeat([0, 1, 2], 3), np.tile([0.0, 5.0, 7.0], 3), gamma=0.9)
    assert advantages.tolist() == pytest.approx([0.0] * 9, abs=1e-12)
    assert baselines[:3].tolist() == pytest.approx([0.5 - 0.9 + 0.81 * 2, -1.0 + 1.8, 2.0])


def test_discounted_returns_by_hand() -> None:
    # gamma 0.5: G3 = 3, G2 = 2 + 1.5, G1 = 1 + 1.75, G0 = 0 + 1.375
    assert returns_to_go(np.array([0.0, 1, 2, 3]), 0.5).tolist() == [1.375, 2.75, 3.5, 3.0]


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        input_driven_advantages(np.zeros(2), np.zeros(3), np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="decrease within episode 0"):
        input_driven_advantages(np.zeros(2), np.zeros(2), np.array([5.0, 1.0]), 1.0)
    for k, algo, n_envs, message in [(1, "maskable_ppo", 1, "K >= 2"), (3, "ppo", 1, "algo"),
                                     (3, "maskable_ppo", 2, "--n-envs 1")]:
        with pytest.raises(ConfigError, match=message):
            check_input_driven(k, algo, n_envs)
    check_input_driven(0, "ppo", 4)  # off: anything goes


class _Recorder(BaseCallback):
    """Per step: the episode number within the rollout and the episode's hash."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[int, str]] = []

    def _on_step(self) -> bool:
        raw = self.locals["raw"]
        self.rows.append((self.locals["episode"], raw.get_wrapper_attr("episode").episode_hash()))
        return True


def test_k_rollouts_run_on_one_input() -> None:
    import torch

    torch.set_num_threads(1)
    kwargs = {"trace": "sia-philly-gen-0", "window": 8, "num_slots": 4, "max_tiers": 4}
    venv = make_vec_env("palgym/PALPlacement-v0", 1, 0, kwargs, "dummy")
    model = make_input_driven_model(venv, {"policy": "CandidateScoringPolicy", "gamma": 1.0,
                                           "n_steps": 16, "batch_size": 16}, seed=3, k=3)
    recorder = _Recorder()
    model._setup_learn(1, recorder)  # noqa: SLF001 (SB3's own set-up of learn)
    recorder.init_callback(model)
    assert model.collect_rollouts(venv, recorder, model.rollout_buffer, 16)
    episodes = [row[0] for row in recorder.rows]
    assert sorted(set(episodes)) == [0, 1, 2] and episodes == sorted(episodes)
    assert len({row[1] for row in recorder.rows}) == 1  # one input: the same episode hash
    buffer = model.rollout_buffer
    assert buffer.buffer_size == len(recorder.rows) and buffer.full
    firsts = [episodes.index(k) for k in range(3)]
    # all three start at the same decision time, so their advantages there sum to zero
    assert buffer.advantages[firsts, 0].sum() == pytest.approx(0.0, abs=1e-9)
    # gamma 1: the first step's return is the Monitor's episode return
    monitor = [info["r"] for info in list(model.ep_info_buffer)[-3:]]
    assert buffer.returns[firsts, 0].tolist() == pytest.approx(monitor, abs=1e-5)
    assert buffer.episode_starts[firsts, 0].tolist() == [1.0, 1.0, 1.0]
    venv.close()


def test_train_with_input_driven_baselines(tmp_path) -> None:
    import yaml
    from sb3_contrib import MaskablePPO

    from agents.sb3.training import TrainSettings, train

    settings = TrainSettings(
        n_timesteps=16, trace="sia-philly-gen-0", window=6, eval_freq=-1, log_folder=str(tmp_path),
        env_kwargs={"num_slots": 4, "max_tiers": 4, "reward": "relative",
                    "baseline_policy": "pal"},
        hyperparams={"n_steps": 16, "batch_size": 16, "n_epochs": 1}, verbose=0, input_driven=2)
    result = train(settings)
    config = yaml.safe_load((result.run_dir / "config.yml").read_text())
    assert config["input_driven"] == 2
    # no n_envs given: one env (the K episodes step it directly), not the YAML's batched envs
    assert (config["n_envs"], config["vec_env"]) == (1, "dummy")
    # learn() stops after the first whole rollout past 16 steps: 2 episodes of >= 6 decisions
    assert result.num_timesteps >= 16 and result.throughput["timesteps"] == result.num_timesteps
    assert MaskablePPO.load(result.model_path).num_timesteps == result.num_timesteps
    with pytest.raises(ConfigError, match="--n-envs 1"):
        train(TrainSettings(**{**settings.__dict__, "n_envs": 2}))
