"""Hyperparameter search with Optuna (``train.py --optimize``; rl-baselines3-zoo's ``-optimize``).

Each trial samples hyperparameters (:func:`sample_hyperparams`; ``--hyperparams`` given on the
command line are fixed and not sampled), trains a fresh model for ``n_timesteps`` on the
training envs with the run's seed and evaluates it ``n_evaluations`` times on the evaluation
episodes (the same seeded episodes as ``train.py``'s evaluation callback). The objective is the
mean return of the last evaluation (at the end of training); with the ``median`` pruner a trial
whose intermediate evaluation falls below the median of earlier trials at that step stops
early. The sampler is seeded with the run's seed, so the same command proposes the same trials.

The search folder ``<log_folder>/<env>_<algo>_optimize_<N>/`` (next free ``N``) holds
``study.yml`` (the search settings and the base configuration), ``trials.csv`` and
``trials.json`` (every trial: number, state, value, sampled parameters, duration, error;
rewritten atomically after each trial) and ``best_hyperparams.yml`` (the complete
hyperparameters of the best trial, for ``train.py --hyperparams``). Needs ``optuna``
(``pip install -e '.[optuna]'``).

Source: rl-baselines3-zoo ``rl_zoo3/hyperparams_opt.py`` (``sample_ppo_params``,
``sample_dqn_params``) and ``exp_manager.py`` (``TrialEvalCallback``, sampler / pruner setup).
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from agents.sb3.callbacks import SeededEvalCallback, SeededMaskableEvalCallback
from agents.sb3.device import resolve_device
from agents.sb3.envs import make_vec_env
from agents.sb3.factory import MASKED_ALGOS, make_model, validate_hyperparams
from agents.sb3.runs import claim_run_dir, plain, write_yaml
from agents.sb3.train_settings import TrainSettings, eval_seed_of, resolve_config
from palgym.errors import ConfigError
from palgym.io import atomic_write_text

SAMPLERS: tuple[str, ...] = ("tpe", "random")
PRUNERS: tuple[str, ...] = ("median", "none")
PPO_SPACE: dict[str, tuple[str, Any]] = {
    "n_steps": ("categorical", [64, 128, 256, 512, 1024, 2048]),
    "batch_size": ("categorical", [32, 64, 128, 256]),
    "n_epochs": ("categorical", [1, 5, 10]),
    "gamma": ("categorical", [0.99, 0.995, 0.999, 0.9999]),
    "gae_lambda": ("categorical", [0.9, 0.95, 0.98, 1.0]),
    "clip_range": ("categorical", [0.1, 0.2, 0.3]),
    "learning_rate": ("log", (1e-5, 1e-3)),
    "ent_coef": ("log", (1e-8, 0.1)),
}
DQN_SPACE: dict[str, tuple[str, Any]] = {
    "learning_rate": ("log", (1e-5, 1e-2)),
    "batch_size": ("categorical", [32, 64, 128, 256]),
    "buffer_size": ("categorical", [5_000, 20_000, 50_000]),
    "gamma": ("categorical", [0.99, 0.995, 0.999, 0.9999]),
    "exploration_fraction": ("uniform", (0.0, 0.5)),
    "exploration_final_eps": ("uniform", (0.0, 0.2)),
    "target_update_interval": ("categorical", [100, 1000, 5000]),
    "learning_starts": ("categorical", [0, 1000, 5000]),
    "train_freq": ("categorical", [1, 4, 8]),
}
SEARCH_SPACES = {"maskable_ppo": PPO_SPACE, "ppo": PPO_SPACE, "dqn": DQN_SPACE}
TRIAL_COLUMNS = ("number", "state", "value", "duration_s", "error")


@dataclass(frozen=True)
class SearchSettings:
    """The search itself (train.py's ``--n-trials``, ``--sampler``, ``--pruner``, ...).

    ``n_evaluations`` evaluations per trial, evenly spaced, the last at the end of training;
    the pruner starts judging after ``n_startup_trials`` complete trials.
    """

    n_trials: int = 10
    sampler: str = "tpe"
    pruner: str = "median"
    n_startup_trials: int = 5
    n_evaluations: int = 2


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`optimize`: the folder, every trial's record, the best trial."""

    run_dir: Path
    trials: list[dict[str, Any]]
    best: dict[str, Any] | None
    best_hyperparams: dict[str, Any] | None


def require_optuna() -> Any:
    """The optuna module.

    Raises:
        ConfigError: if optuna is not installed, naming the extra.
    """
    try:
        import optuna
    except ImportError:
        raise ConfigError("--optimize needs optuna: pip install -e '.[optuna]'") from None
    return optuna


def check_search(settings: TrainSettings, search: SearchSettings) -> None:
    """Raises ConfigError for a setting the search cannot use (naming it and its value)."""
    checks = [
        (search.n_trials >= 1, f"--n-trials must be >= 1, got {search.n_trials}"),
        (search.n_evaluations >= 1, f"--n-evaluations must be >= 1, got {search.n_evaluations}"),
        (search.sampler in SAMPLERS, f"--sampler must be one of {list(SAMPLERS)}"),
        (search.pruner in PRUNERS, f"--pruner must be one of {list(PRUNERS)}"),
        (settings.eval_episodes >= 1, "--eval-episodes must be >= 1 for --optimize"),
        (not settings.resume, "--optimize starts fresh models: drop --resume"),
        (settings.imitate is None, "--optimize does not clone a heuristic: drop --imitate"),
        (not settings.input_driven, "--optimize trains plain MaskablePPO: drop --input-driven"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)


def sample_hyperparams(trial: Any, algo: str, fixed: Mapping[str, Any],
                       n_envs: int = 1) -> dict[str, Any]:
    """One trial's sampled hyperparameters: :data:`SEARCH_SPACES` minus the ``fixed`` keys.

    The ``n_steps`` choices of :data:`PPO_SPACE` are env steps per update: with ``n_envs``
    envs the trial samples ``choice // n_envs`` steps per env (at least 1), so the searched
    rollouts are the same whatever the number of envs (the recorded value is per env, what
    ``--hyperparams n_steps:`` takes with those envs).
    """
    sampled: dict[str, Any] = {}
    for name, (kind, domain) in SEARCH_SPACES[algo].items():
        if name in fixed:
            continue
        if name == "n_steps" and n_envs > 1:
            domain = sorted({max(int(c) // n_envs, 1) for c in domain})
        if kind == "categorical":
            sampled[name] = trial.suggest_categorical(name, domain)
        elif kind in ("log", "uniform"):
            sampled[name] = trial.suggest_float(name, *domain, log=kind == "log")
        else:
            raise ConfigError(f"search space of {name!r}: kind must be one of "
                              f"['categorical', 'log', 'uniform'], got {kind!r}")
    return sampled


def trial_hyperparams(config: Mapping[str, Any], sampled: Mapping[str, Any]) -> dict[str, Any]:
    """The base hyperparameters with ``sampled`` over them; PPO's ``batch_size`` is capped at
    the rollout size ``n_steps x n_envs`` (SB3 needs a minibatch within one rollout)."""
    hyperparams = {**config["hyperparams"], **sampled}
    if "n_steps" in hyperparams and "batch_size" in hyperparams:
        rollout = int(hyperparams["n_steps"]) * int(config["n_envs"])
        hyperparams["batch_size"] = min(int(hyperparams["batch_size"]), rollout)
    return hyperparams


class TrialReport(BaseCallback):
    """Called after each evaluation of the eval callback: reports its mean return to the
    trial and stops training when the pruner says so (zoo's ``TrialEvalCallback``)."""

    def __init__(self, trial: Any) -> None:
        super().__init__()
        self.trial = trial
        self.pruned = False
        self.last: tuple[int, float] | None = None

    def _on_step(self) -> bool:
        assert self.parent is not None
        value, step = float(self.parent.last_mean_reward), int(self.parent.num_timesteps)
        self.last = (step, value)
        self.trial.report(value, step)
        self.pruned = self.trial.should_prune()
        return not self.pruned


def run_trial(trial: Any, settings: TrainSettings, config: Mapping[str, Any],
              search: SearchSettings) -> float:
    """Train and evaluate one trial's model; returns the objective (last mean return).

    Raises:
        optuna.TrialPruned: when the pruner stopped it.
    """
    optuna = require_optuna()
    sampled = sample_hyperparams(trial, settings.algo, settings.hyperparams,
                                 int(config["n_envs"]))
    hyperparams = trial_hyperparams(config, sampled)
    validate_hyperparams(settings.algo, hyperparams)
    n_envs, n_timesteps = int(config["n_envs"]), int(config["n_timesteps"])
    eval_seed = eval_seed_of(settings)
    with ExitStack() as stack:
        venv = make_vec_env(settings.env_id, n_envs, settings.seed, config["env_kwargs"],
                            settings.vec_env)
        stack.callback(venv.close)
        eval_env = make_vec_env(settings.env_id, 1, eval_seed, config["eval_env_kwargs"],
                                "dummy")
        stack.callback(eval_env.close)
        model = make_model(settings.algo, venv, hyperparams, settings.seed,
                           device=resolve_device(settings.device, hyperparams), verbose=0)
        report = TrialReport(trial)
        cls = (SeededMaskableEvalCallback if settings.algo in MASKED_ALGOS
               else SeededEvalCallback)
        every = max(n_timesteps // search.n_evaluations // n_envs, 1)
        evaluation = cls(eval_env, n_eval_episodes=settings.eval_episodes, eval_freq=every,
                         deterministic=True, verbose=0, eval_seed=eval_seed,
                         callback_after_eval=report)
        model.learn(total_timesteps=n_timesteps, callback=evaluation)
        if report.pruned:
            raise optuna.TrialPruned()
        if report.last is None or report.last[0] != model.num_timesteps:
            evaluation.n_calls, evaluation.eval_freq = 0, 1  # evaluate now, at the end
            evaluation.on_step()
    assert report.last is not None
    return report.last[1]


def trial_records(study: Any) -> list[dict[str, Any]]:
    """One record per trial: number, state, value (None unless complete), duration, error
    (the message of a failed trial), then its parameters."""
    records = []
    for trial in study.trials:
        duration = trial.duration.total_seconds() if trial.duration is not None else None
        records.append({
            "number": trial.number, "state": trial.state.name,
            "value": trial.value if trial.state.name == "COMPLETE" else None,
            "duration_s": duration, "error": trial.user_attrs.get("error", ""),
            **{f"params_{k}": v for k, v in trial.params.items()},
        })
    return records


def write_trials(run_dir: Path, records: list[dict[str, Any]]) -> None:
    """``trials.csv`` (union of the records' columns) and ``trials.json``, atomically."""
    columns = list(TRIAL_COLUMNS) + sorted({k for r in records for k in r} - set(TRIAL_COLUMNS))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    atomic_write_text(run_dir / "trials.csv", buffer.getvalue())
    atomic_write_text(run_dir / "trials.json", json.dumps(plain(records), indent=1) + "\n")


def make_study(optuna: Any, settings: TrainSettings, search: SearchSettings) -> Any:
    """An in-memory maximising study with the seeded sampler and the chosen pruner."""
    if search.sampler not in SAMPLERS or search.pruner not in PRUNERS:
        raise ConfigError(f"--sampler must be one of {list(SAMPLERS)} and --pruner one of "
                          f"{list(PRUNERS)}, got {search.sampler!r} and {search.pruner!r}")
    if search.sampler == "tpe":
        sampler = optuna.samplers.TPESampler(n_startup_trials=search.n_startup_trials,
                                             seed=settings.seed)
    else:
        sampler = optuna.samplers.RandomSampler(seed=settings.seed)
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=search.n_startup_trials,
                                          n_warmup_steps=0)
              if search.pruner == "median" else optuna.pruners.NopPruner())
    return optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)


def optimize(settings: TrainSettings, search: SearchSettings) -> SearchResult:
    """Run the search (see the module docstring); trials run one after the other.

    A trial whose hyperparameters SB3 rejects (``ValueError`` / ``AssertionError`` /
    ``ConfigError``) is recorded as ``FAIL`` with its error and the search goes on.

    Raises:
        ConfigError: without optuna, for bad settings (before the folder is made).
    """
    optuna = require_optuna()
    check_search(settings, search)
    config = resolve_config(settings)
    if settings.num_threads > 0:
        import torch

        torch.set_num_threads(settings.num_threads)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    run_dir = claim_run_dir(settings.log_folder, settings.env_id, f"{settings.algo}_optimize")
    write_yaml(run_dir / "study.yml", {
        "search": asdict(search), "sampler_seed": settings.seed,
        "search_space": {k: list(v) for k, v in SEARCH_SPACES[settings.algo].items()
                         if k not in settings.hyperparams},
        "fixed_hyperparams": dict(settings.hyperparams), "base_config": config,
    })
    study = make_study(optuna, settings, search)

    def objective(trial: Any) -> float:
        started = time.perf_counter()
        try:
            return run_trial(trial, settings, config, search)
        except (ValueError, AssertionError, ConfigError) as exc:
            trial.set_user_attr("error", f"{type(exc).__name__}: {exc}")
            return math.nan
        finally:
            trial.set_user_attr("train_s", time.perf_counter() - started)

    def record(study: Any, _trial: Any) -> None:
        write_trials(run_dir, trial_records(study))

    study.optimize(objective, n_trials=search.n_trials, callbacks=[record])
    records = trial_records(study)
    complete = [r for r in records if r["state"] == "COMPLETE"]
    best = max(complete, key=lambda r: r["value"]) if complete else None
    best_hyperparams = None
    if best is not None:
        sampled = {k.removeprefix("params_"): v for k, v in best.items()
                   if k.startswith("params_")}
        best_hyperparams = trial_hyperparams(config, sampled)
        write_yaml(run_dir / "best_hyperparams.yml", {"trial": best["number"],
                                                      "value": best["value"],
                                                      "hyperparams": best_hyperparams})
    return SearchResult(run_dir, records, best, best_hyperparams)
