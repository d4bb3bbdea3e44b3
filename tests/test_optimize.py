"""``train.py --optimize``: Optuna search, trials recorded, seeded, scored like train.py.

Trials train 64 steps on 12-job windows. The best trial's value is checked against a
``train.py`` run with its hyperparameters (same seed): its evaluation at step 64 on the same
episodes must give the same mean return. Skipped without the ``train`` extra or optuna.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")

from agents.sb3.optimize import (  # noqa: E402
    PPO_SPACE,
    SearchSettings,
    optimize,
    sample_hyperparams,
)
from agents.sb3.training import TrainSettings, train  # noqa: E402
from palgym.errors import ConfigError  # noqa: E402

FIXED = {"n_steps": 32, "n_epochs": 1,
         "policy_kwargs": "dict(scorer_arch=[16], net_arch=dict(pi=[], vf=[16]))"}


def settings(folder: Path, **changes) -> TrainSettings:
    base = TrainSettings(n_timesteps=64, trace="sia-philly-gen-0", window=12, eval_episodes=1,
                         log_folder=str(folder), hyperparams=FIXED, verbose=0, references=(),
                         n_envs=1)
    return TrainSettings(**{**base.__dict__, **changes})


SEARCH = SearchSettings(n_trials=2, sampler="random", pruner="none", n_evaluations=2)


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("optuna", reason="optuna is not installed (pip install -e '.[optuna]')")
    folder = tmp_path_factory.mktemp("search")
    return optimize(settings(folder), SEARCH), optimize(settings(folder), SEARCH)


def test_trials_are_recorded_in_the_search_folder(searched) -> None:
    first, second = searched
    assert first.run_dir.name == "palgym_PALPlacement-v0_maskable_ppo_optimize_0"
    assert second.run_dir.name == "palgym_PALPlacement-v0_maskable_ppo_optimize_1"
    with (first.run_dir / "trials.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [row["number"] for row in rows] == ["0", "1"]
    assert all(row["state"] == "COMPLETE" for row in rows)
    assert json.loads((first.run_dir / "trials.json").read_text())[0]["number"] == 0
    for row in rows:  # sampled inside the space; the fixed keys are not sampled
        assert "params_n_steps" not in row and "params_n_epochs" not in row
        assert int(row["params_batch_size"]) in PPO_SPACE["batch_size"][1]
        low, high = PPO_SPACE["learning_rate"][1]
        assert low <= float(row["params_learning_rate"]) <= high
    assert first.best is not None and first.best["value"] == max(
        float(row["value"]) for row in rows)


def test_same_seed_proposes_and_scores_the_same_trials(searched) -> None:
    first, second = searched
    strip = [{k: v for k, v in r.items() if k != "duration_s"} for r in first.trials]
    assert strip == [{k: v for k, v in r.items() if k != "duration_s"} for r in second.trials]


def test_best_value_is_what_train_py_measures(searched, tmp_path: Path) -> None:
    """The same hyperparameters and seed in train.py: evaluation at step 64 = trial value."""
    best, hyperparams = searched[0].best, searched[0].best_hyperparams
    assert best is not None and hyperparams is not None
    assert hyperparams["batch_size"] <= 32  # capped at the rollout of 32 steps x 1 env
    result = train(settings(tmp_path, hyperparams=hyperparams, eval_freq=64))
    with np.load(result.run_dir / "evaluations.npz") as data:
        assert data["timesteps"].tolist() == [64]
        assert float(data["results"].mean()) == pytest.approx(best["value"], rel=1e-12)


def test_n_steps_choices_are_env_steps_per_update() -> None:
    """With 8 envs a trial samples n_steps per env from the space's rollout sizes / 8, so the
    searched updates hold the same env steps as a one-env search's."""
    optuna = pytest.importorskip("optuna", reason="optuna is not installed")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sizes = PPO_SPACE["n_steps"][1]
    for n_envs in (1, 8):
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        for _ in range(5):
            trial = study.ask()
            sampled = sample_hyperparams(trial, "maskable_ppo", {"gamma": 0.99}, n_envs)
            choices = trial.distributions["n_steps"].choices
            assert [c * n_envs for c in choices] == sizes
            assert sampled["n_steps"] * n_envs in sizes and "gamma" not in sampled


def test_bad_search_settings_raise(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("optuna", reason="optuna is not installed")
    with pytest.raises(ConfigError, match="--n-trials must be >= 1, got 0"):
        optimize(settings(tmp_path), SearchSettings(n_trials=0))
    with pytest.raises(ConfigError, match="drop --resume"):
        optimize(settings(tmp_path, resume=True), SEARCH)
    with pytest.raises(ConfigError, match="drop --input-driven"):
        optimize(settings(tmp_path, input_driven=4), SEARCH)
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"needs optuna: pip install -e '.\[optuna\]'"):
        optimize(settings(tmp_path), SEARCH)
    assert not any(tmp_path.iterdir())
