"""Run configurations record a path inside the public data folder relative to
``PALGYM_DATA_DIR`` (``$PALGYM_DATA_DIR/...``), so a committed model's ``.yml`` means the same
on every machine; readers resolve both that form and plain paths (agents/data_dir.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.data_dir import (
    PATH_KWARGS,
    portable_config,
    require_resolved,
    resolve_config,
)
from palgym.errors import ConfigError

PRETRAINED = Path(__file__).resolve().parents[1] / "agents" / "pretrained"


def test_paths_inside_the_data_dir_are_written_relative_and_read_back(tmp_path: Path) -> None:
    root = tmp_path / "data"
    inside, outside = root / "variability" / "longhorn_pal", tmp_path / "elsewhere.csv"
    config = {"algo": "ppo",
              "env_kwargs": {"variability_data": str(inside), "profile": str(outside),
                             "preset": "pal-artifact"},
              "eval_env_kwargs": {"variability_data": str(root)}}
    written = portable_config(config, str(root))
    assert written["env_kwargs"] == {
        "variability_data": "$PALGYM_DATA_DIR/variability/longhorn_pal",
        "profile": str(outside), "preset": "pal-artifact"}
    assert written["eval_env_kwargs"] == {"variability_data": "$PALGYM_DATA_DIR"}
    assert config["env_kwargs"]["variability_data"] == str(inside)  # not modified
    assert resolve_config(written, str(root)) == config
    other = tmp_path / "other-machine"
    assert resolve_config(written, str(other))["env_kwargs"]["variability_data"] == str(
        other / "variability" / "longhorn_pal")


def test_committed_model_configs_hold_no_machine_path() -> None:
    for path in sorted(PRETRAINED.glob("*_maskable_ppo.yml")):
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        for section in ("env_kwargs", "eval_env_kwargs"):
            for key in PATH_KWARGS:
                value = (config.get(section) or {}).get(key)
                assert value is None or str(value).startswith("$PALGYM_DATA_DIR/"), (
                    f"{path.name} {section}.{key}: {value}")


def test_a_committed_model_config_resolves_against_the_variable(tmp_path: Path,
                                                                monkeypatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.learned import model_config

    monkeypatch.setenv("PALGYM_DATA_DIR", str(tmp_path))
    config = model_config(PRETRAINED / "sia-philly-artifact-scratch_maskable_ppo.zip")
    assert config["env_kwargs"]["variability_data"] == str(tmp_path / "variability/longhorn_pal")
    monkeypatch.delenv("PALGYM_DATA_DIR")
    kwargs = model_config(PRETRAINED / "sia-philly-artifact_maskable_ppo.zip")["env_kwargs"]
    with pytest.raises(ConfigError, match=r"m.zip: variability_data is '\$PALGYM_DATA_DIR/"
                                          r"variability/longhorn_pal', .* is not set"):
        require_resolved(kwargs, "m.zip")
    override = {**kwargs, "variability_data": "/x"}  # a path given on the command line
    assert require_resolved(override, "m.zip")["variability_data"] == "/x"


def test_training_writes_the_relative_form(tmp_path: Path, monkeypatch) -> None:
    """config.yml of a run whose profile lies in PALGYM_DATA_DIR (the run fails at once
    after writing it, to stay fast)."""
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import agents.sb3.training as training
    from palgym.io import write_profile
    from palgym.sim.variability import VariabilityProfile

    root = tmp_path / "data"
    profile = write_profile(VariabilityProfile.homogeneous(64), root / "profiles" / "flat.csv")
    monkeypatch.setenv("PALGYM_DATA_DIR", str(root))

    def stop(*_args: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "learn", stop)
    settings = training.TrainSettings(trace="sia-philly-gen-0", window=10, n_timesteps=64,
                                      eval_freq=0, references=(), verbose=0,
                                      log_folder=str(tmp_path / "runs"),
                                      env_kwargs={"profile": str(profile)},
                                      hyperparams={"n_steps": 32, "batch_size": 32})
    with pytest.raises(KeyboardInterrupt):
        training.train(settings)
    run = tmp_path / "runs" / "palgym_PALPlacement-v0_maskable_ppo_0"
    written = yaml.safe_load((run / "config.yml").read_text(encoding="utf-8"))
    assert written["env_kwargs"]["profile"] == "$PALGYM_DATA_DIR/profiles/flat.csv"
    assert (run / "INTERRUPTED").read_text(encoding="utf-8").startswith("interrupted")
    assert not (run / "RUNNING").exists() and not (run / "FAILED").exists()
