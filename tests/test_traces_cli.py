"""``python -m traces convert|describe|split|generate`` (in-process through ``main``, plus one
subprocess run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from traces.__main__ import main
from traces.canonical_io import read_canonical

REPO_ROOT = Path(__file__).resolve().parents[1]
PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:10:00,100.0,1,100.0,vcA
2017-10-01 00:00:00,50.0,2,100.0,vcB
2017-10-01 00:20:00,30.0,16,480.0,vcA
2017-10-01 00:30:00,10.0,4,40.0,vcA
2017-10-01 00:40:00,20.0,1,20.0,vcB
"""


@pytest.fixture
def philly(tmp_path: Path) -> Path:
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY)
    return path


def test_convert_writes_canonical_with_provenance(philly: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.csv"
    assert main(["convert", str(philly), "--vc", "vcA", "--output", str(out)]) == 0
    trace = read_canonical(out)
    assert trace.jobs["submit_time_s"].tolist() == [0.0, 600.0, 1200.0]
    assert trace.jobs["num_gpus"].tolist() == [1, 16, 4]
    assert trace.metadata["format"] == "philly" and trace.metadata["clusters"] == "vcA"
    assert "--vc vcA" in trace.metadata["converted_by"]
    printed = capsys.readouterr().out
    assert "dropped 2 row(s) [cluster]" in printed and f"wrote {out}" in printed


def test_describe_prints_the_figures(philly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(philly), "--cluster-gpus", "16"]) == 0
    text = capsys.readouterr().out
    assert "jobs         5" in text
    assert "span         2400 s" in text
    assert "arrival rate 6.00 jobs/h" in text  # 4 gaps over 2400 s
    assert "GPU mix      1:2, 2:1, 4:1, 16:1" in text
    # GPU-seconds 100 + 100 + 480 + 40 + 20 = 740; load = 4/2400 x 740/5 / 16
    assert f"load         {4 / 2400 * 740 / 5 / 16:.3f} on 16 GPUs" in text


def test_split_by_jobs_with_oversize_drop(philly: Path, tmp_path: Path) -> None:
    out = tmp_path / "w"
    code = main(["split", str(philly), "--num-jobs", "2", "--cluster-gpus", "8",
                 "--oversize", "drop", "--output-dir", str(out)])
    assert code == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["philly-w000.csv", "philly-w001.csv"]
    second = read_canonical(out / "philly-w001.csv")
    assert second.jobs["submit_time_s"].tolist() == [0.0, 600.0]
    assert second.jobs["num_gpus"].tolist() == [4, 1]


def test_split_reject_is_a_clean_error(philly: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["split", str(philly), "--num-jobs", "2", "--cluster-gpus", "8",
                 "--output-dir", str(tmp_path / "w")])
    assert code == 2
    err = capsys.readouterr().err
    assert "line 4" in err and "'num_gpus'" in err and str(philly) in err


def test_wrong_option_for_the_format_is_a_clean_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    sia = tmp_path / "s.csv"
    sia.write_text("job_id,num_gpus,submit_time,duration,model\n0,1,0,5,vgg19\n")
    assert main(["describe", str(sia), "--vc", "x"]) == 2
    assert "takes options" in capsys.readouterr().err


def test_generate_and_describe_in_a_subprocess(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    out = tmp_path / "g.csv"
    subprocess.run([sys.executable, "-m", "traces", "generate", "--kind", "gavel",
                    "--num-jobs", "20", "--seed", "2", "--output", str(out)],
                   cwd=tmp_path, env=env, check=True, capture_output=True, timeout=60)
    done = subprocess.run([sys.executable, "-m", "traces", "describe", str(out)], cwd=tmp_path,
                          env=env, check=True, capture_output=True, text=True, timeout=60)
    assert "jobs         20" in done.stdout
