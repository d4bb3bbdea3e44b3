"""``python -m agents.evaluation.plot_curve``: a run's learning curve beside PAL's line, as PNG or
SVG, the same bytes for the same files; a clear error without a curve."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agents.evaluation.plot_curve import curve_files, main

ROOT = Path(__file__).resolve().parents[1]
NAME = "dynamic-online_maskable_ppo"
PRETRAINED = ROOT / "agents" / "pretrained"


def test_a_run_folder_and_a_pretrained_name_find_the_same_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(PRETRAINED / f"{NAME}-evaluations.npz", run / "evaluations.npz")
    shutil.copy(PRETRAINED / f"{NAME}-references.yml", run / "references.yml")
    assert curve_files(str(run)) == (run / "evaluations.npz", run / "references.yml", "run")
    assert curve_files(f"pretrained:{NAME}") == (
        PRETRAINED / f"{NAME}-evaluations.npz", PRETRAINED / f"{NAME}-references.yml", NAME)


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_the_figure_is_written_the_same_twice(tmp_path: Path, suffix: str,
                                              magic: bytes) -> None:
    pytest.importorskip("matplotlib", reason="the viz extra")
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    assert main([f"pretrained:{NAME}", "--output", str(first)]) == 0
    assert main([f"pretrained:{NAME}", "--output", str(second)]) == 0
    assert first.read_bytes().startswith(magic)
    assert first.read_bytes() == second.read_bytes()


def test_no_curve_and_a_bad_suffix_are_one_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--output", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "evaluations.npz does not exist" in err
    assert main([f"pretrained:{NAME}", "--output", str(tmp_path / "x.pdf")]) == 2
    assert "a .png or .svg file" in capsys.readouterr().err
