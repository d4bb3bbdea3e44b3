"""Bad variability input: profile files, measurement folders and profile values -> errors
naming file, line and field."""


from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ProfileError
from palgym.io import LONGHORN_CLASS_FILES, read_measurements, read_profile
from palgym.sim.variability import VariabilityProfile

GOOD = (1, 2, 0, 1000, "resnet50")


def assert_names(error: pytest.ExceptionInfo[Exception], path: Path, line: int | None,
                 field: str | None) -> None:
    """The message names the file, the line and the field (and the attributes agree)."""
    message = str(error.value)
    assert str(path) in message, message
    if line is not None:
        assert f"line {line}" in message, message
        assert error.value.line == line  # type: ignore[attr-defined]
    if field is not None:
        assert f"'{field}'" in message, message
        assert error.value.field == field  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- profiles
PROFILE_HEADER = "gpu,perfvar_classA,perfvar_classB,perfvar_classC,perfvar_classD"


def write_profile_text(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "profile.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("1,1.0,x,1.0,1.0", "perfvar_classB", "not a number"),
        ("1,1.0,1.0,0,1.0", "perfvar_classC", "> 0"),
        ("1,1.0,1.0,1.0,-2", "perfvar_classD", "> 0"),
        ("1,nan,1.0,1.0,1.0", "perfvar_classA", "not a finite number"),
        ("2,1.0,1.0,1.0,1.0", "gpu", "expected GPU id 1, got 2"),
        ("1.5,1.0,1.0,1.0,1.0", "gpu", "not an integer"),
    ],
)
def test_profile_bad_cell(tmp_path: Path, row: str, field: str, words: str) -> None:
    path = write_profile_text(tmp_path, PROFILE_HEADER, "0,1.0,1.0,1.0,1.0", row)
    with pytest.raises(ProfileError) as error:
        read_profile(path)
    assert_names(error, path, 3, field)
    assert words in str(error.value)


def test_profile_missing_column_and_empty(tmp_path: Path) -> None:
    path = write_profile_text(tmp_path, "gpu,perfvar_classA,perfvar_classB,perfvar_classC",
                              "0,1,1,1")
    with pytest.raises(ProfileError) as error:
        read_profile(path)
    assert_names(error, path, 1, "perfvar_classD")
    path = write_profile_text(tmp_path, PROFILE_HEADER)
    with pytest.raises(ProfileError) as error:
        read_profile(path)
    assert_names(error, path, None, None)
    assert "no GPU rows" in str(error.value)


def test_profile_round_trip(tmp_path: Path) -> None:
    path = write_profile_text(tmp_path, "# made by hand", PROFILE_HEADER, "0,1.0,0.5,2.0,1.25",
                              "1,1.1,1.0,1.0,3.0")
    profile = read_profile(path)
    assert profile.perfvar.tolist() == [[1.0, 1.1], [0.5, 1.0], [2.0, 1.0], [1.25, 3.0]]


def test_variability_profile_rejects_bad_values() -> None:
    with pytest.raises(ProfileError, match="shape"):
        VariabilityProfile("p", np.ones((3, 4)))
    bad = np.ones((4, 4))
    bad[2, 3] = np.nan
    with pytest.raises(ProfileError) as error:
        VariabilityProfile("p", bad)
    assert "GPU 3" in str(error.value) and "perfvar_classC" in str(error.value)
    with pytest.raises(ProfileError, match="covers 4 GPUs"):
        VariabilityProfile.homogeneous(4).take(8)


# --------------------------------------------------------------------------- measurements
def write_measurements(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


GOOD_RUNS = "uuid,perf,temp\nGPU-a,10.0,50\nGPU-a,11.0,51\nGPU-b,12.0,49\n"


def test_measurements_folder_missing_a_file(tmp_path: Path) -> None:
    resnet, bert, _, pagerank = LONGHORN_CLASS_FILES
    folder = write_measurements(tmp_path / "m", {resnet: GOOD_RUNS, bert: GOOD_RUNS})
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    assert_names(error, folder / pagerank, None, None)
    # And with the file present everything reads: norm = perf / median(10, 11, 12) = perf / 11.
    write_measurements(folder, {pagerank: GOOD_RUNS})
    data = read_measurements(folder)
    np.testing.assert_allclose(data.norm_runs[0], [10 / 11, 1.0, 12 / 11])
    # Per-GPU medians: GPU-a median(10/11, 1) = 21/22, GPU-b 12/11.
    np.testing.assert_allclose(data.gpu_medians[3], [21 / 22, 12 / 11])


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("uuid,perf\nGPU-a,10\nGPU-b,abc\n", 3, "perf", "not a number"),
        ("uuid,perf\nGPU-a,10\nGPU-b,0\n", 3, "perf", "> 0"),
        ("uuid,perf\nGPU-a,10\n,12\n", 3, "uuid", "empty value"),
        ("uuid,time\nGPU-a,10\n", 1, "perf", "missing column"),
        ("uuid,perf\n", 2, None, "no measurement rows"),
    ],
)
def test_measurements_bad_file(
    tmp_path: Path, text: str, line: int, field: str | None, words: str
) -> None:
    resnet, bert, _, pagerank = LONGHORN_CLASS_FILES
    folder = write_measurements(tmp_path / "m", {resnet: GOOD_RUNS, bert: text,
                                                 pagerank: GOOD_RUNS})
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    assert_names(error, folder / bert, line, field)
    assert words in str(error.value)


def test_measurements_not_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="not a folder"):
        read_measurements(tmp_path / "nothing-here")


def test_public_measurements_missing_a_file(data_dir: Path, tmp_path: Path) -> None:
    # A copy of the public Longhorn folder without the PageRank file is rejected, naming it.
    source = data_dir / "variability" / "longhorn_pal"
    folder = tmp_path / "longhorn"
    folder.mkdir()
    for name in LONGHORN_CLASS_FILES[:2]:
        shutil.copy(source / name, folder / name)
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    assert_names(error, folder / LONGHORN_CLASS_FILES[3], None, None)
