"""Replay with rendering (agents/evaluation/enjoy.py, ``evaluate.py --render``).

The ansi replay of PAL is checked against the simulator run directly on the rebuilt episode
(return = -sum(JCT) / reward_scale) and every frame against gang scheduling (a job shown on a
frame holds exactly its ``num_gpus`` GPUs there). rgb_array videos need moviepy.
"""

from __future__ import annotations

import importlib.util
import io
import re
import runpy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the ids)
from agents.evaluation.enjoy import replay
from palgym import make_episode, run_episode
from palgym.envs.episodes import job_window, load_traces
from palgym.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]
TRACE = "sia-philly-gen-2"
WINDOW = 8
SEED = 4


def frames_of(text: str) -> list[list[list[str]]]:
    """Each printed frame as its nodes' GPU cells."""
    frames = []
    for block in text.split("--- round ")[1:]:
        rows = [line.split("|", 1)[1].split() for line in block.splitlines()
                if line.startswith("node ")]
        frames.append(rows)
    return frames


def test_ansi_replay_of_pal_matches_the_simulator() -> None:
    out = io.StringIO()
    (episode,) = replay("pal", seeds=[SEED], overrides={"trace": TRACE, "window": WINDOW},
                        out=out)
    env = gym.make("palgym/PALPlacement-v0", trace=TRACE, window=WINDOW)
    _, info = env.reset(seed=SEED)
    unwrapped = env.unwrapped
    trace = job_window(load_traces(TRACE)[0], info["window_start"], WINDOW)
    direct = run_episode(make_episode(trace, cluster=unwrapped.cluster, config=unwrapped.config,
                                      seed=info["seed"]), "pal", "fifo")
    env.close()
    assert episode.episode_return == pytest.approx(
        -float(np.sum(direct.records.jct_s)) / 360_000, rel=1e-9)
    frames = frames_of(out.getvalue())
    assert len(frames) == episode.frames >= 1
    num_gpus = trace.num_gpus
    for frame in frames:
        assert len(frame) == 16 and all(len(node) == 4 for node in frame)  # 16x4 cluster
        cells = [cell for node in frame for cell in node if not cell.startswith(".")]
        for job, count in zip(*np.unique(np.array(cells, dtype=int), return_counts=True),
                              strict=True):
            assert count == num_gpus[job], (job, count)
    assert re.search(rf"pal seed {SEED} on {TRACE}\[\d+:\d+\]: return -[\d.]+, "
                     rf"{episode.num_steps} decisions", out.getvalue())


def test_bad_render_mode_and_video_without_moviepy() -> None:
    with pytest.raises(ConfigError, match="render mode must be one of"):
        replay("pal", render_mode="human")
    if importlib.util.find_spec("moviepy") is None:
        with pytest.raises(ConfigError, match="needs moviepy: pip install moviepy"):
            replay("pal", render_mode="rgb_array")


def test_rgb_array_replay_writes_a_video(tmp_path: Path) -> None:
    pytest.importorskip("moviepy", reason="moviepy is not installed (videos need it)")
    replay("pal", seeds=[SEED], render_mode="rgb_array", video_folder=tmp_path,
           overrides={"trace": TRACE, "window": WINDOW}, out=io.StringIO())
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 0


def test_evaluate_render_replays_the_pretrained_model(capsys, monkeypatch) -> None:
    """``evaluate.py --render --agent pretrained``: the model's evaluation episodes (the
    validation trace sia-philly-gen-3) unless --trace says otherwise."""
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    monkeypatch.setattr("sys.argv", ["evaluate.py", "--render", "--agent", "pretrained",
                                     "--window", "6", "--seeds", "1", "2"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(REPO_ROOT / "evaluate.py"), run_name="__main__")
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"pretrained seed [12] on sia-philly-gen-3\[\d+:\d+\]", out)) == 2
    assert "--- round 0 committed" in out
