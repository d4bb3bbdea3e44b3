"""Replay an agent with rendering (rl-baselines3-zoo's ``enjoy``; ``evaluate.py --render``).

:func:`replay` runs a trained model (a ``model.zip``, a run folder or ``pretrained[:NAME]``)
or a heuristic (a placement name such as ``pal``) for one episode per reset seed and shows it:

- ``render_mode="ansi"``: the env's text map of the cluster (one line per node, each GPU's job
  index or ``.``; :func:`palgym.envs.render.render_ansi`) of the allocation each round
  committed, printed when the round's decisions are over (so one frame per round with a
  decision); each episode ends with a line of its return, decisions and average JCT.
- ``render_mode="rgb_array"``: gymnasium's ``RecordVideo`` writes one MP4 per episode
  (``<video_folder>/<name>-episode-<i>.mp4``, the env's ``render_fps``); it needs ``moviepy``
  (``pip install moviepy``).

A model acts in the env it was trained in: its ``config.yml`` (or ``<stem>.yml`` beside the
zip) gives the env id and kwargs; by default the episodes come from its evaluation env
(``eval_env_kwargs``: the validation split), ``overrides`` (trace, window, preset, ...) win.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import gymnasium as gym
import numpy as np

from agents.base import Agent, HeuristicAgent
from agents.data_dir import require_resolved
from agents.evaluation.defaults import DEFAULT_ENV_ID
from agents.ids import canonical_env_id, gym_id
from palgym.errors import ConfigError
from palgym.policies import PLACEMENT_NAMES

logger = logging.getLogger(__name__)

RENDER_MODES: tuple[str, ...] = ("ansi", "rgb_array")


@dataclass(frozen=True)
class ReplayedEpisode:
    """One replayed episode.

    Attributes:
        seed: the reset seed.
        trace: trace id with its job window.
        episode_return: sum of rewards.
        num_steps: decisions taken.
        frames: frames shown (ansi) or recorded (rgb_array).
        metrics: the env's ``info["episode_metrics"]``.
    """

    seed: int
    trace: str
    episode_return: float
    num_steps: int
    frames: int
    metrics: dict[str, float]


def load_replay_agent(spec: str, env_id: str | None, device: str = "cpu", *,
                      trust_model: bool = False) -> tuple[Agent, str, dict[str, Any]]:
    """The agent a spec names, its env id and the env kwargs it acts with.

    A placement name gives that heuristic (env kwargs: its ``sticky`` / ``class_reorder``);
    anything else is a model spec, loaded with :func:`agents.sb3.learned.load_agent` (with SB3's
    unpickling only if ``trust_model``).

    Raises:
        ConfigError: for a missing model, or a model trained on another env than ``env_id``.
    """
    if spec in PLACEMENT_NAMES:
        agent = HeuristicAgent(spec)
        return agent, env_id or DEFAULT_ENV_ID, dict(agent.env_kwargs)
    from agents.sb3.learned import load_agent, model_config, resolve_model_path

    path = resolve_model_path(spec, env_id or DEFAULT_ENV_ID)
    config = model_config(path)
    trained_on = str(config.get("env_id") or env_id or DEFAULT_ENV_ID)
    if env_id is not None and canonical_env_id(trained_on) != canonical_env_id(env_id):
        raise ConfigError(f"{path} was trained on {trained_on}, not on {env_id} (--env)")
    kwargs = dict(config.get("eval_env_kwargs") or config.get("env_kwargs") or {})
    return (load_agent(path, device=device, name=spec, trust_model=trust_model), trained_on,
            kwargs)


def make_replay_env(env_id: str, kwargs: Mapping[str, Any], render_mode: str,
                    video_folder: Path | None, name: str) -> gym.Env[Any, Any]:
    """The env with ``render_mode``; for ``rgb_array`` wrapped in ``RecordVideo``.

    Raises:
        ConfigError: for an unknown render mode, or ``rgb_array`` without moviepy.
    """
    if render_mode not in RENDER_MODES:
        raise ConfigError(f"render mode must be one of {list(RENDER_MODES)}, got {render_mode!r}")
    if render_mode == "rgb_array" and importlib.util.find_spec("moviepy") is None:
        raise ConfigError("--render rgb_array writes MP4 videos with gymnasium's RecordVideo, "
                          "which needs moviepy: pip install moviepy (or use --render ansi)")
    env = gym.make(gym_id(env_id), **dict(kwargs), render_mode=render_mode)
    if render_mode == "rgb_array":
        from gymnasium.wrappers import RecordVideo

        folder = video_folder if video_folder is not None else Path("videos")
        env = RecordVideo(env, str(folder), episode_trigger=lambda _: True,
                          name_prefix=name.replace("/", "_").replace(":", "_"),
                          disable_logger=True)
    return env


def replay(
    spec: str,
    *,
    env_id: str | None = None,
    seeds: Sequence[int] = (0,),
    render_mode: str = "ansi",
    overrides: Mapping[str, Any] | None = None,
    video_folder: Path | None = None,
    device: str = "cpu",
    out: TextIO | None = None,
    trust_model: bool = False,
) -> list[ReplayedEpisode]:
    """Replay ``spec`` for one episode per seed, rendering it (see the module docstring).

    Args:
        spec: a model spec (zip, run folder, ``pretrained[:NAME]``) or a placement name.
        env_id: the env (default: the model's, else ``palgym/PALPlacement-v0``).
        seeds: reset seeds, one episode each.
        render_mode: ``ansi`` (text frames on ``out``) or ``rgb_array`` (MP4 videos).
        overrides: env kwargs over the agent's (trace, window, preset, cluster, ...).
        video_folder: where ``rgb_array`` videos go (default ``videos/``).
        device: torch device of a model.
        out: text stream of frames and summaries (default stdout).
        trust_model: load a model zip with SB3's unpickling (runs any code it holds).

    Returns:
        The episodes, in seed order.

    Raises:
        ConfigError: for a bad spec, env, render mode, or ``rgb_array`` without moviepy.
    """
    stream = out if out is not None else sys.stdout
    agent, env_id, kwargs = load_replay_agent(spec, env_id, device, trust_model=trust_model)
    kwargs = require_resolved({**kwargs, **dict(overrides or {})}, spec)
    env = make_replay_env(env_id, kwargs, render_mode, video_folder, spec)
    try:
        episodes = [_episode(agent, env, seed, render_mode == "ansi", stream) for seed in seeds]
    finally:
        env.close()
    for episode in episodes:
        jct = episode.metrics.get("avg_jct_s", float("nan")) / 3600
        print(f"{spec} seed {episode.seed} on {episode.trace}: return "
              f"{episode.episode_return:.6f}, {episode.num_steps} decisions, average JCT "
              f"{jct:.3f} h, {episode.frames} frames", file=stream)
    if render_mode == "rgb_array":
        print(f"videos in {video_folder if video_folder is not None else Path('videos')}",
              file=stream)
    return episodes


def _episode(agent: Agent, env: gym.Env[Any, Any], seed: int, show: bool, stream: TextIO
             ) -> ReplayedEpisode:
    """One rendered episode; ansi frames are printed after each round's last decision."""
    agent.bind(env)
    observation, info = env.reset(seed=seed)
    unwrapped: Any = env.unwrapped
    masks = unwrapped.action_masks if agent.uses_masks else None
    total, steps, frames = 0.0, 0, 0
    while True:
        round_index = unwrapped.simulator.round_index
        action, _ = agent.predict(observation, deterministic=True,
                                  action_masks=masks() if masks is not None else None)
        observation, reward, terminated, truncated, step_info = env.step(int(np.asarray(action)))
        total += float(reward)
        steps += 1
        done = terminated or truncated
        if show and (done or unwrapped.simulator.round_index != round_index):
            frames += _show(unwrapped.simulator, stream, round_index, steps)
        elif not show:
            frames += 1
        if done:
            if truncated:
                print(f"--- truncated after {steps} decisions", file=stream)
            return ReplayedEpisode(seed, str(info["trace"]), total, steps, frames,
                                   dict(step_info.get("episode_metrics", {})))


def _show(simulator: Any, stream: TextIO, round_index: int, steps: int) -> int:
    """Print the allocation round ``round_index`` committed (GPUs of jobs still running after
    it; ``.`` free) as an ansi frame; returns 1."""
    from palgym.envs.render import render_ansi

    print(f"--- round {round_index} committed after decision {steps}", file=stream)
    print(render_ansi(simulator, simulator.job_of_gpu), end="", file=stream)
    return 1


def replay_from_args(args: Any, overrides: Mapping[str, Any]) -> int:
    """``evaluate.py --render MODE``: replay the first ``--agent`` (else the first ``--policy``,
    else ``pal``) on ``--seeds`` (else ``--seed``); returns the exit code.

    ``--trace`` files or ``--trace-set`` splits choose the episodes' traces; ``overrides`` are
    the other episode flags (preset, cluster, window, ...), from evaluate.py.
    """
    if args.num_threads > 0:
        import torch

        torch.set_num_threads(args.num_threads)
    spec = (args.agent or args.policy or ["pal"])[0]
    kwargs = dict(overrides)
    if args.trace:
        kwargs["trace"] = [str(path) for path in args.trace]
    elif args.trace_set:
        kwargs["trace"] = [f"{name}:{args.split}" for name in args.trace_set]
    elif spec in PLACEMENT_NAMES:
        kwargs["trace"] = f"bundled:{args.split}"
    replay(spec, env_id=args.env, seeds=args.seeds or [args.seed], render_mode=args.render,
           overrides=kwargs, video_folder=args.video_folder, device=args.device,
           trust_model=args.trust_model)
    return 0
