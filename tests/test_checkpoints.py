"""A run folder given to ``evaluate.py --agent``: its ``best_model.zip`` when it exists (else
``model.zip``), ``model.zip`` with ``--last``, each named on stderr with the windows it trained
on and is evaluated on."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from agents.evaluation.checkpoints import checkpoint_notes, chosen_checkpoint

ROOT = Path(__file__).resolve().parents[1]
PRETRAINED = ROOT / "agents" / "pretrained" / "PALPlacement-v0_maskable_ppo"


def test_the_best_checkpoint_unless_last(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "model.zip").write_bytes(b"last")
    assert chosen_checkpoint(str(run)) == str(run / "model.zip")  # no best: the last
    (run / "best_model.zip").write_bytes(b"best")
    assert chosen_checkpoint(str(run)) == str(run / "best_model.zip")
    assert chosen_checkpoint(str(run), last=True) == str(run / "model.zip")
    assert chosen_checkpoint("pretrained") == "pretrained"
    assert chosen_checkpoint(str(run / "model.zip")) == str(run / "model.zip")


def test_the_notes_name_the_file_and_the_windows(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "best_model.zip").write_bytes(b"")
    configs: dict[str, dict[str, Any]] = {
        str(run / "best_model.zip"): {"env_kwargs": {"window": 40}},
        "pretrained": {"env_kwargs": {"window": 60}}, "x.zip": {}}
    lines = checkpoint_notes([str(run), "pretrained", "x.zip"],
                             [str(run / "best_model.zip"), "pretrained", "x.zip"], None,
                             configs.__getitem__)
    assert lines == [
        f"--agent {run}: evaluating {run / 'best_model.zip'} (the best evaluation checkpoint; "
        "--last evaluates model.zip, the last); evaluated on whole traces, trained on 40-job "
        "windows (--window 40 evaluates on windows like those)",
        "--agent pretrained; evaluated on whole traces, trained on 60-job windows (--window 60 "
        "evaluates on windows like those)",
        "--agent x.zip; evaluated on whole traces"]
    same = checkpoint_notes(["pretrained"], ["pretrained"], 60, configs.__getitem__)
    assert same == ["--agent pretrained; evaluated on 60-job windows, trained on 60-job windows"]


@pytest.mark.parametrize("last", [False, True])
def test_evaluate_takes_and_names_the_checkpoint(tmp_path: Path, last: bool,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("stable_baselines3", reason="the train extra")
    from agents.evaluation.cli import main

    run = tmp_path / "run"
    run.mkdir()
    for name in ("model.zip", "best_model.zip"):
        shutil.copy(PRETRAINED.with_suffix(".zip"), run / name)
    shutil.copy(PRETRAINED.with_suffix(".yml"), run / "config.yml")
    argv = ["--agent", str(run), "--trace-set", "bundled", "--split", "test", "--seeds", "0",
            "--window", "12", "--policy", "pal", "--quiet", *(["--last"] if last else [])]
    assert main(argv) == 0
    captured = capsys.readouterr()
    chosen = run / ("model.zip" if last else "best_model.zip")
    assert f"note: --agent {run}: evaluating {chosen} (" in captured.err
    assert "evaluated on 12-job windows, trained on 60-job windows" in captured.err
