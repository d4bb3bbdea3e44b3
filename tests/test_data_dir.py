"""``PALGYM_DATA_DIR`` handling (tests/conftest.py): relative values resolve against the folder
pytest starts in, and a set but missing or incomplete folder stops the run loudly instead of
skipping the real-data tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REQUIRED_DATA_FILES, DataDirError, resolve_data_dir

REPO_ROOT = Path(__file__).resolve().parents[1]


def _fake_data(root: Path, skip: str | None = None) -> Path:
    for name in REQUIRED_DATA_FILES:
        if name != skip:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text("x\n", encoding="utf-8")
    return root


def test_unset_means_no_data(tmp_path: Path) -> None:
    assert resolve_data_dir(None, tmp_path) is None
    assert resolve_data_dir("", tmp_path) is None


def test_relative_value_resolves_against_the_start_folder(tmp_path: Path) -> None:
    data = _fake_data(tmp_path / "shared" / "data")
    start = tmp_path / "wt"
    start.mkdir()
    assert resolve_data_dir("../shared/data", start) == data
    assert resolve_data_dir(str(data), tmp_path / "elsewhere") == data


def test_missing_folder_names_itself(tmp_path: Path) -> None:
    with pytest.raises(DataDirError, match=f"{tmp_path / 'nope'} does not exist"):
        resolve_data_dir("nope", tmp_path)


def test_incomplete_folder_names_the_missing_file(tmp_path: Path) -> None:
    missing = "variability/longhorn_pal/bert-longhorn-agg.csv"
    _fake_data(tmp_path, skip=missing)
    with pytest.raises(DataDirError, match=f"lacks 1 of the {len(REQUIRED_DATA_FILES)} "
                                           f"required files: {missing}"):
        resolve_data_dir(str(tmp_path), tmp_path)


def _pytest(args: list[str], cwd: Path, data_dir: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("PALGYM_DATA_DIR", None)
    if data_dir is not None:
        env["PALGYM_DATA_DIR"] = data_dir
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd,
        env=env, capture_output=True, text=True, timeout=300,
    )


def test_a_missing_folder_fails_the_run_instead_of_skipping(tmp_path: Path) -> None:
    """What CI sees when the data folder it was promised is absent: a non-zero exit naming it."""
    missing = tmp_path / "no-data-here"
    done = _pytest([str(REPO_ROOT / "tests" / "test_traces_real_data.py")], REPO_ROOT,
                   str(missing))
    assert done.returncode != 0
    assert f"folder {missing} does not exist" in done.stdout + done.stderr
    assert "passed" not in done.stdout and "skipped" not in done.stdout


def test_a_relative_value_reaches_subprocesses(data_dir: Path) -> None:
    """The profile-regeneration tests run ``python -m traces profile`` from a temporary folder;
    with a relative ``PALGYM_DATA_DIR`` they pass because conftest made it absolute."""
    relative = os.path.relpath(data_dir, REPO_ROOT)
    assert not Path(relative).is_absolute()
    done = _pytest([str(Path("tests") / "test_traces_regenerate.py"), "-k", "profile_regenerates",
                    "-rs"], REPO_ROOT, relative)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout and "skipped" not in done.stdout, done.stdout
