"""agents.sb3.throughput: the rates of a measured span, worked out by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3", reason="the train extra is not installed")

from agents.sb3.throughput import rates  # noqa: E402


def test_rates_of_a_span() -> None:
    # 2,000 steps in 40 s wall and 10 CPU-s: 50 steps/s, 5 CPU-s per 1k, 360,000 in 7,200 s
    assert rates(2000, 40.0, 10.0) == {"steps_per_s": 50.0, "cpu_s_per_1k_steps": 5.0,
                                       "steps_in_2h": 360_000.0}


def test_rates_without_steps_or_time_are_zero() -> None:
    assert rates(0, 0.0, 0.0) == {"steps_per_s": 0.0, "cpu_s_per_1k_steps": 0.0,
                                  "steps_in_2h": 0.0}


class _InterruptedModel:
    """Stands in for an SB3 model whose ``learn`` is stopped by Ctrl-C after 300 steps."""

    logger = None

    def __init__(self) -> None:
        import gymnasium as gym
        from stable_baselines3.common.vec_env import DummyVecEnv

        self.num_timesteps = 0
        self._env = DummyVecEnv([lambda: gym.make("CartPole-v1")])

    def get_env(self):  # noqa: ANN201 - SB3's BaseCallback.init_callback reads it
        return self._env

    def learn(self, total_timesteps: int, callback: list, reset_num_timesteps: bool) -> None:
        for cb in callback:
            cb.init_callback(self)
            cb.on_training_start({}, {})
        self.num_timesteps = 300
        raise KeyboardInterrupt


def test_interrupted_run_still_writes_throughput(tmp_path) -> None:  # noqa: ANN001
    import yaml

    from agents.sb3.throughput import ThroughputCallback
    from agents.sb3.training import learn

    callback = ThroughputCallback(tmp_path, print_freq=0)
    assert learn(_InterruptedModel(), 1000, [callback], resume=False) is True
    written = yaml.safe_load((tmp_path / "throughput.yml").read_text())
    assert written["timesteps"] == 300  # the steps run before the interrupt, not the request
    # the rates follow from the recorded wall and CPU time by the module's definitions
    assert written["steps_per_s"] == pytest.approx(300 / written["wall_s"])
    assert written["cpu_s_per_1k_steps"] == pytest.approx(1000 * written["cpu_s"] / 300)
    assert written["n_envs"] == 1 and written["cpu_scope"] == "process"
