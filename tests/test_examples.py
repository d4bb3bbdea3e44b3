"""The scripts in examples/ run as documented (tiny settings, seconds).

``examples/train_maskable_ppo.py`` trains MaskablePPO on two envs (the batched env) and
evaluates it beside PAL; the PAL return it prints is checked against the simulator run
directly on the rebuilt episode (``-sum(JCT) / reward_scale``). Skipped without the ``train``
extra.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")

import palgym  # noqa: E402,F401  (registers the ids)
from palgym import make_episode, run_episode  # noqa: E402
from palgym.envs.episodes import job_window, load_traces  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
WINDOW = 12
REWARD_SCALE_S = 360_000.0  # the env's default reward_scale


def pal_return_on_first_validation_episode(seed: int) -> float:
    """-sum(JCT) / reward_scale of PAL (run_episode) on the episode reset(seed) draws."""
    env = gym.make("palgym/PALPlacement-v0", trace="bundled:validation", window=WINDOW)
    _, info = env.reset(seed=seed)
    unwrapped = env.unwrapped
    (trace,) = load_traces("bundled:validation")
    episode = make_episode(job_window(trace, info["window_start"], WINDOW),
                           cluster=unwrapped.cluster, config=unwrapped.config, seed=info["seed"])
    env.close()
    result = run_episode(episode, "pal", "fifo")
    return -float(np.sum(result.records.jct_s)) / REWARD_SCALE_S


def test_train_maskable_ppo_example_runs() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "examples/train_maskable_ppo.py", "--timesteps", "256", "--n-steps",
         "64", "--n-envs", "2", "--window", str(WINDOW), "--eval-episodes", "1"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # 256 steps = 2 rollouts of 64 steps x 2 envs; one torch thread
    assert re.search(r"trained 256 steps in [\d.]+ s \(\d+ steps/s, torch threads 1\)",
                     proc.stdout), proc.stdout
    match = re.search(r"MaskablePPO (-?[\d.]+), PAL (-?[\d.]+)", proc.stdout)
    assert match, proc.stdout
    assert float(match.group(2)) == pytest.approx(
        pal_return_on_first_validation_episode(seed=10_000), abs=5e-5)
    assert float(match.group(1)) < 0  # every JCT is positive, so is every return's negation


def test_reward_scale_example_relative_keeps_the_policy_difference() -> None:
    """``relative`` = ``jct`` minus the baseline's same quantity on the identical episode, so
    the per-episode difference PAL - random is the same under both rewards."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        [sys.executable, "examples/reward_scale.py", "--window", "12", "--seeds", "0", "1", "2"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: re.findall(r"-?\d+\.\d+", line)
            for line in proc.stdout.splitlines()[2:]}
    assert set(rows) == {"jct", "relative", "slowdown"}
    assert rows["jct"][4:] == rows["relative"][4:]  # PAL - random: min .. max
    assert rows["jct"][:2] != rows["relative"][:2]  # the returns themselves differ
