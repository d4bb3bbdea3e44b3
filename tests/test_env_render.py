"""rgb_array frames: one shape per env over whole episodes, and a recorded video."""

from __future__ import annotations

import importlib.util
import math

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the ids)
from palgym.envs import ClusterEnv


def _documented_shape(num_gpus: int, num_slots: int) -> tuple[int, int, int]:
    """The frame shape the env card states: cells of G + 1 + ceil(K / 64) rows x 64 columns,
    max(1, 256 // the longer side) pixels each, sides padded up to multiples of 16."""
    rows, columns = num_gpus + 1 + math.ceil(num_slots / 64), 64
    scale = max(1, 256 // max(rows, columns))
    return (math.ceil(rows * scale / 16) * 16, math.ceil(columns * scale / 16) * 16, 3)


def test_documented_shape_of_the_default_cluster() -> None:
    assert _documented_shape(64, 16) == (208, 192, 3)  # 66 x 64 cells of 3 px: 198 -> 208


@pytest.mark.parametrize(("cluster", "num_slots", "task"), [
    ("16x4", 16, "placement"), ("8x8", 5, "scheduling"), ("64x4", 100, "placement"),
])
def test_frames_keep_one_shape_over_a_whole_episode(cluster: str, num_slots: int,
                                                    task: str) -> None:
    env = ClusterEnv("sia-philly-gen-0", window=30, cluster=cluster, num_slots=num_slots,
                     task=task, render_mode="rgb_array", max_rounds=3000)
    num_gpus = env.cluster.num_gpus
    assert env.frame_shape == _documented_shape(num_gpus, num_slots)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    shapes, white_only = set(), 0
    for _ in range(100_000):
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
        shapes.add(frame.shape)
        white_only += bool((frame == 255).all())
        _, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(
            env.action_masks()))))
        if terminated or truncated:
            break
    assert terminated or truncated
    shapes.add(env.render().shape)  # after the end as well
    assert shapes == {env.frame_shape}
    assert white_only < 3  # the frames draw jobs (not blank)


def test_record_video_of_a_short_episode(tmp_path) -> None:
    if importlib.util.find_spec("moviepy") is None:
        pytest.skip("moviepy is not installed (RecordVideo needs it): frame shapes are "
                    "checked by test_frames_keep_one_shape_over_a_whole_episode")
    env = gym.make("palgym/PALPlacement-v0", trace="sia-philly-gen-0", window=10,
                   render_mode="rgb_array")
    env = gym.wrappers.RecordVideo(env, str(tmp_path), episode_trigger=lambda _: True,
                                   disable_logger=True)
    env.reset(seed=0)
    for _ in range(40):
        _, _, terminated, truncated, _ = env.step(env.unwrapped.heuristic_action("pal"))
        if terminated or truncated:
            break
    env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert videos and videos[0].stat().st_size > 0
