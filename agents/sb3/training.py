"""Train an SB3 / sb3-contrib agent on a palgym env into a run folder (the logic of train.py).

A run folder ``<log_folder>/<env id with / as _>_<algo>_<N>/`` (``N``: the next free run id,
see :mod:`agents.sb3.runs`) holds:

- ``model.zip``: the final model (written atomically; also on Ctrl-C); ``best_model.zip``: the
  best evaluation so far; ``checkpoints/`` with ``save_freq > 0``;
- ``config.yml``: the resolved hyperparameters (``default`` + env entry + overrides), the algo,
  env id, env kwargs of the training and evaluation envs (a ``variability_data`` or
  ``profile`` path inside ``PALGYM_DATA_DIR`` written as ``$PALGYM_DATA_DIR/...``:
  :mod:`agents.data_dir`), the training env's layout hash (``env_layout``,
  :mod:`agents.sb3.layouts`: a model is refused on an env of another layout), the training envs
  (``n_envs``) and the vector env that steps them (``vec_env``: ``native``, ``dummy`` or
  ``subproc``, :func:`agents.sb3.envs.vec_env_kind`) and, with trace sets, every member's SHA-256
  (``trace_sets``);
- ``args.yml``: the arguments of the run, the seeds used and one entry per resume;
- ``evaluations.npz`` (SB3 format: ``timesteps``, ``results``, ``ep_lengths``) and
  ``references.yml``: heuristic returns on the *same* evaluation episodes;
- ``progress.csv`` (``progress-resume-<t>.csv`` after a resume) and, only when the
  ``tensorboard`` package is importable, ``tensorboard/``;
- ``throughput.yml``: env steps/s and CPU-seconds per 1k steps (:mod:`agents.sb3.throughput`);
  ``curriculum.yml`` with a curriculum (:mod:`agents.sb3.curriculum`);
- ``FAILED`` when the run failed after its folder was claimed (the error and its traceback;
  :func:`agents.sb3.runs.recording_failure`); the folder is kept for its records.

Traces: ``trace_set`` (set specs, :mod:`palgym.tracesets`) trains on their ``split`` (default
``train``) and evaluates on their ``eval_split`` (default ``validation``), each the union over
the sets of their non-empty splits; ``trace`` / ``eval_trace`` name traces directly instead.
Neither given: the ``bundled`` set.

Seeds: the model and training env ``i`` use ``seed`` (+ ``i``); the evaluation env uses
``eval_seed`` (default ``seed + 10000``) before every evaluation. A resume continues the saved
model with seed ``seed + timesteps done`` (fresh episodes, not a replay of the first ones) and
the same evaluation episodes: a resume whose evaluation settings (episodes, seed, evaluation
env kwargs) differ from the recorded ones is refused; it trains on the run's recorded number of
envs unless ``n_envs`` is given. Same settings and seed on CPU give the same model.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
from stable_baselines3.common.vec_env import VecEnv

from agents.data_dir import portable_config
from agents.rollout import heuristic_outcomes
from agents.run_markers import INTERRUPTED_FILE, mark
from agents.sb3.callbacks import (
    InvalidActionLogger,
    SeededEvalCallback,
    SeededMaskableEvalCallback,
    TqdmProgressBar,
)
from agents.sb3.device import resolve_device
from agents.sb3.envs import default_references, make_vec_env
from agents.sb3.factory import (
    MASKED_ALGOS,
    make_model,
)
from agents.sb3.input_driven import load_or_make_input_driven
from agents.sb3.model_zip import load_model
from agents.sb3.runs import (
    check_evaluation_set,
    claim_run_dir,
    make_logger,
    record_args,
    recording_failure,
    resume_dir,
    save_model,
    write_yaml,
)
from agents.sb3.throughput import ThroughputCallback
from agents.sb3.train_settings import (
    DEFAULT_ENV_ID,
    EVAL_SEED_OFFSET,
    TrainSettings,
    default_n_envs,
    eval_seed_of,
    resolve_config,
)
from palgym.errors import ConfigError

__all__ = ["DEFAULT_ENV_ID", "EVAL_SEED_OFFSET", "TrainResult", "TrainSettings", "default_n_envs",
           "eval_seed_of", "learn", "resolve_config", "train"]

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`train`.

    Attributes:
        run_dir: the run folder.
        model_path: ``run_dir/model.zip``.
        num_timesteps: timesteps of the saved model (all runs of the folder).
        wall_time_s: wall-clock time of this call.
        tensorboard: whether TensorBoard logs were written.
        interrupted: True if Ctrl-C stopped training (the model was still saved).
        references: ``{policy: mean return}`` on the evaluation episodes.
        throughput: ``throughput.yml``'s content (:mod:`agents.sb3.throughput`).
    """

    run_dir: Path
    model_path: Path
    num_timesteps: int
    wall_time_s: float
    tensorboard: bool
    interrupted: bool
    references: dict[str, float]
    throughput: dict[str, Any] = field(default_factory=dict)


def run_dir_of(settings: TrainSettings, config: Mapping[str, Any]) -> Path | None:
    """The run folder of a resume (checked against the settings); None for a fresh run, which
    claims the next free run id when it starts (:func:`agents.sb3.runs.claim_run_dir`).

    Raises:
        ConfigError: for a resume without a saved model, with hyperparameters, or with another
            evaluation set than the one its learning curve or references were measured on
            (:func:`agents.sb3.runs.check_evaluation_set`).
    """
    if not settings.resume:
        return None
    run_dir = resume_dir(settings.log_folder, settings.env_id, settings.algo, settings.run_id)
    if settings.hyperparams:
        raise ConfigError("--hyperparams cannot change a saved model on --resume")
    measured = any((run_dir / name).is_file() for name in ("evaluations.npz", "references.yml"))
    if settings.eval_freq > 0 and measured:
        check_evaluation_set(run_dir, config["evaluation"], config["eval_env_kwargs"])
    return run_dir


def reference_returns(settings: TrainSettings, config: Mapping[str, Any], run_dir: Path,
                      eval_seed: int) -> dict[str, float]:
    """Heuristic returns on the evaluation episodes, written to ``references.yml``."""
    names = (default_references(settings.env_id, config["eval_env_kwargs"])
             if settings.references is None else settings.references)
    if settings.eval_freq <= 0 or not names:
        return {}
    outcomes = heuristic_outcomes(settings.env_id, config["eval_env_kwargs"], eval_seed,
                                  settings.eval_episodes, names)
    means = {name: float(np.mean([o.episode_return for o in runs]))
             for name, runs in outcomes.items()}
    first = next(iter(outcomes.values()))
    write_yaml(run_dir / "references.yml", {
        "eval_seed": eval_seed,
        "episodes": [{"trace": o.trace, "episode_hash": o.episode_hash} for o in first],
        "policies": {name: {"mean_return": means[name],
                            "returns": [o.episode_return for o in runs],
                            "avg_jct_s": [o.metrics.get("avg_jct_s") for o in runs]}
                     for name, runs in outcomes.items()},
    })
    return means


def make_callbacks(settings: TrainSettings, run_dir: Path, eval_env: VecEnv | None,
                   n_envs: int, eval_seed: int, references: Mapping[str, float]
                   ) -> list[BaseCallback]:
    """Evaluation (masked for maskable_ppo), checkpoints, invalid actions, progress bar."""
    callbacks: list[BaseCallback] = [InvalidActionLogger(),
                                     ThroughputCallback(run_dir, settings.eval_freq)]
    if eval_env is not None:
        cls = (SeededMaskableEvalCallback if settings.algo in MASKED_ALGOS
               else SeededEvalCallback)
        callbacks.append(cls(
            eval_env, n_eval_episodes=settings.eval_episodes,
            eval_freq=max(settings.eval_freq // n_envs, 1), log_path=str(run_dir),
            best_model_save_path=str(run_dir), deterministic=True, verbose=0,
            eval_seed=eval_seed, references=references, restore=settings.resume,
        ))
    if settings.save_freq > 0:
        callbacks.append(CheckpointCallback(max(settings.save_freq // n_envs, 1),
                                            str(run_dir / "checkpoints"), name_prefix="model"))
    if settings.progress_bar:
        callbacks.append(TqdmProgressBar())
    return callbacks


def load_or_make_model(settings: TrainSettings, config: Mapping[str, Any], venv: VecEnv,
                       run_dir: Path) -> tuple[Any, int, int]:
    """The model to train, its timesteps so far and the seed it uses now."""
    if settings.input_driven:
        return load_or_make_input_driven(settings, config, venv, run_dir)
    if not settings.resume:
        model = make_model(settings.algo, venv, config["hyperparams"], settings.seed,
                           device=settings.device, verbose=settings.verbose)
        return model, 0, settings.seed
    model = load_model(run_dir / "model.zip", settings.algo, env=venv, device=settings.device,
                       trust_model=settings.trust_model, hyperparams=config["hyperparams"],
                       for_training=True)
    start = int(model.num_timesteps)
    seed = settings.seed + start
    model.set_random_seed(seed)
    return model, start, seed


def open_envs(stack: ExitStack, settings: TrainSettings, config: Mapping[str, Any]
              ) -> tuple[VecEnv, VecEnv | None]:
    """The training vector env and the one-env evaluation env (None without evaluation);
    both are closed by ``stack``."""
    eval_env = None
    if settings.eval_freq > 0:
        eval_env = make_vec_env(settings.env_id, 1, eval_seed_of(settings),
                                config["eval_env_kwargs"], "dummy")
        stack.callback(eval_env.close)
    venv = make_vec_env(settings.env_id, config["n_envs"], settings.seed, config["env_kwargs"],
                        config["vec_env"], settings.curriculum)
    stack.callback(venv.close)
    return venv, eval_env


def train(settings: TrainSettings, args: Mapping[str, Any] | None = None) -> TrainResult:
    """Train (or resume) a run; see the module docstring for the run folder.

    Args:
        settings: the run's settings.
        args: the CLI arguments to record in ``args.yml`` (default: ``settings``).

    Returns:
        The run's outcome.

    Raises:
        ConfigError: for bad settings (unknown algo, hyperparameter, trace, env kwarg,
            run-folder clash), raised before the run folder is touched; or a ``references``
            heuristic the env configuration cannot run.
    """
    started = time.perf_counter()
    config = resolve_config(settings)
    settings = dataclasses.replace(
        settings, device=resolve_device(settings.device, config["hyperparams"]))
    resumed = run_dir_of(settings, config)
    if settings.num_threads > 0:
        import torch

        torch.set_num_threads(settings.num_threads)
    n_envs, eval_seed = config["n_envs"], eval_seed_of(settings)
    with ExitStack() as stack:
        venv, eval_env = open_envs(stack, settings, config)
        run_dir = resumed or claim_run_dir(settings.log_folder, settings.env_id, settings.algo)
        if settings.resume:  # a model refused here leaves the run folder as it was
            model, start, seed = load_or_make_model(settings, config, venv, run_dir)
        with recording_failure(run_dir, settings.resume):
            if not settings.resume:
                model, start, seed = load_or_make_model(settings, config, venv, run_dir)
            if not settings.resume:
                write_yaml(run_dir / "config.yml", portable_config(config))
                if settings.imitate:
                    from agents.sb3.imitation import clone_heuristic

                    write_yaml(run_dir / "imitation.yml", clone_heuristic(
                        model, settings.env_id, config["env_kwargs"], settings.imitate,
                        settings.imitate_decisions, settings.imitate_epochs,
                        settings.imitate_explore, settings.seed))
            record_args(run_dir, args if args is not None else dataclasses.asdict(settings),
                        {"model": seed, "train_envs": [seed + i for i in range(n_envs)],
                         "eval": eval_seed}, settings.resume, start)
            references = reference_returns(settings, config, run_dir, eval_seed)
            model_logger, tensorboard = make_logger(run_dir, start, settings.verbose)
            stack.callback(model_logger.close)
            model.set_logger(model_logger)
            callbacks = make_callbacks(settings, run_dir, eval_env, n_envs, eval_seed,
                                       references)
            interrupted = learn(model, config["n_timesteps"], callbacks, settings.resume)
            save_model(model, run_dir / "model.zip")
            if interrupted:  # agents/run_markers.py
                mark(run_dir, INTERRUPTED_FILE, f"interrupted at {model.num_timesteps} of "
                     f"{config['n_timesteps']} timesteps; model.zip holds the model then")
            if settings.curriculum is not None:
                write_yaml(run_dir / "curriculum.yml", {"floor": settings.curriculum,
                                                        "envs": venv.env_method("summary")})
    return TrainResult(run_dir, run_dir / "model.zip", int(model.num_timesteps),
                       time.perf_counter() - started, tensorboard, interrupted, references,
                       callbacks[1].summary)


def learn(model: Any, n_timesteps: int, callbacks: list[BaseCallback], resume: bool) -> bool:
    """``model.learn``; returns True if Ctrl-C stopped it (the caller still saves; the
    throughput callback still writes ``throughput.yml`` for the steps run)."""
    try:
        model.learn(total_timesteps=n_timesteps, callback=callbacks,
                    reset_num_timesteps=not resume)
    except KeyboardInterrupt:
        logger.warning("interrupted at %d timesteps: saving the model", model.num_timesteps)
        for callback in callbacks:  # SB3 skips on_training_end when learn() raises
            if isinstance(callback, ThroughputCallback):
                callback.on_training_end()
        return True
    return False
