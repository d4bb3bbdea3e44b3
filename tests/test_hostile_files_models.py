"""Hostile model zips and the run folders training leaves: a zip bomb (read directly and through
``evaluate.py``), a zip of too many entries, an entry that lies about its size; a run folder
claimed by a running or killed run, one interrupted by SIGTERM or Ctrl-C, a finished one. Each
ends in a clear error (exit 2 and one ``error:`` line, no traceback) or in the documented
behaviour.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from palgym.errors import ConfigError
from tests.hostile import (
    one_error,
)


# ---------------------------------------------------------------- model zips
def _model_zip(path: Path, data_size: int) -> Path:
    """A zip like SB3's whose ``data`` entry holds ``data_size`` zero bytes (streamed in)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("data", "w") as entry:
            chunk = bytes(1 << 20)
            for _ in range(data_size >> 20):
                entry.write(chunk)
        archive.writestr("policy.pth", b"x")
    path.write_bytes(buffer.getvalue())
    return path


def _lying_zip(path: Path, data_size: int, declared: int) -> Path:
    """A zip whose ``data`` entry inflates to ``data_size`` bytes but declares ``declared``
    (its local and central headers patched)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data", bytes(data_size))
    raw = bytearray(buffer.getvalue())
    assert raw[:4] == b"PK\x03\x04"
    central = raw.index(b"PK\x01\x02")
    for offset in (22, central + 24):  # the uncompressed size of each header
        assert int.from_bytes(raw[offset:offset + 4], "little") == data_size
        raw[offset:offset + 4] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    return path


def test_a_model_zip_bomb_is_refused_from_its_declared_size(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.model_zip import read_model_zip

    bomb = _model_zip(tmp_path / "bomb.zip", 80 << 20)  # past the 64 MiB ceiling of data
    with pytest.raises(ConfigError, match=r"entry 'data' declares 83886080 bytes, past its "
                                          r"ceiling of 67108864 bytes .*PALGYM_ALLOW_LARGE"):
        read_model_zip(bomb)


def test_evaluate_refuses_a_model_zip_bomb_with_one_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from tests.test_bad_input_cli import load_script

    bomb = _model_zip(tmp_path / "bomb.zip", 80 << 20)
    evaluate = load_script("evaluate")
    assert evaluate.main(["--agent", str(bomb), "--trace", "sia-philly-gen-0", "--window",
                          "10"]) == 2
    one_error(capsys.readouterr().err, str(bomb), "entry 'data' declares 83886080 bytes")


def test_a_model_zip_of_many_entries_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.model_zip import read_model_zip

    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for index in range(65):
            archive.writestr(f"entry{index}", b"")
    with pytest.raises(ConfigError, match="65 entries, more than 64"):
        read_model_zip(path)


def test_a_model_zip_that_lies_about_its_size_is_refused_while_streaming(
        tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.model_zip import read_model_zip

    liar = _lying_zip(tmp_path / "liar.zip", 16 << 20, declared=1000)
    with zipfile.ZipFile(liar) as archive:
        assert archive.getinfo("data").file_size == 1000  # the lie passes the declared check
    with pytest.raises(ConfigError, match="is not a stable-baselines3 model zip: Bad CRC-32"):
        read_model_zip(liar)


# ---------------------------------------------------------------- run folders
def test_a_claimed_run_folder_is_marked_running_and_refused_by_the_loader(
        tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.learned import model_path
    from agents.sb3.runs import claim_run_dir

    run = claim_run_dir(tmp_path, "palgym/PALPlacement-v0", "maskable_ppo")
    assert (run / "RUNNING").is_file()  # what kill -9 leaves behind
    with pytest.raises(ConfigError, match=r"incomplete run folder, no model.zip: the run is "
                                          r"still running or was killed"):
        model_path(run)


def test_sigterm_marks_the_run_interrupted(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import os
    import signal

    import agents.sb3.training as training
    from agents.sb3.learned import model_path

    def terminated(*_args: object) -> bool:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(training, "learn", terminated)
    settings = training.TrainSettings(trace="sia-philly-gen-0", window=10, n_timesteps=64,
                                      eval_freq=0, references=(), verbose=0,
                                      log_folder=str(tmp_path / "runs"),
                                      hyperparams={"n_steps": 32, "batch_size": 32})
    with pytest.raises(KeyboardInterrupt):
        training.train(settings)
    run = tmp_path / "runs" / "palgym_PALPlacement-v0_maskable_ppo_0"
    marker = (run / "INTERRUPTED").read_text()
    assert marker.startswith("interrupted (signal SIGTERM); no model.zip was written")
    assert not (run / "RUNNING").exists() and not (run / "model.zip").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler was restored
    with pytest.raises(ConfigError, match="the run was interrupted"):
        model_path(run)


def test_a_finished_run_leaves_no_marker_and_ctrl_c_in_training_marks_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import agents.sb3.training as training
    from agents.sb3.learned import model_path

    settings = training.TrainSettings(trace="sia-philly-gen-0", window=10, n_timesteps=64,
                                      eval_freq=0, references=(), verbose=0,
                                      log_folder=str(tmp_path / "runs"),
                                      hyperparams={"n_steps": 32, "batch_size": 32})
    monkeypatch.setattr(training, "learn", lambda *_: False)  # finished
    first = training.train(settings).run_dir
    assert (first / "model.zip").is_file()
    assert [p.name for p in first.iterdir() if p.name.isupper()] == []
    monkeypatch.setattr(training, "learn", lambda *_: True)  # Ctrl-C inside the loop
    second = training.train(settings).run_dir
    assert (second / "model.zip").is_file() and not (second / "RUNNING").exists()
    assert (second / "INTERRUPTED").read_text().startswith("interrupted at 0 of 64 timesteps")
    assert model_path(second) == second / "model.zip"  # loaded, with a warning
