"""``evaluate.py --trace`` on formats other than Sia / PAL CSV (detected from the header or
given with ``--trace-format``), checked against the same jobs written as a Sia CSV."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pandas")

import traces  # noqa: E402

EVALUATE = Path(__file__).resolve().parents[1] / "evaluate.py"
PROFILE = """\
gpu,perfvar_classA,perfvar_classB,perfvar_classC,perfvar_classD
0,1.0,1.0,1.0,1.0
1,1.2,1.0,1.0,1.0
2,1.0,1.0,1.5,1.0
3,1.0,1.1,1.0,1.0
"""
# A Philly job-level extract: unsorted, times 0 / 60 / 60 / 400 s after the first arrival.
PHILLY = """\
timestamp,duration,num_gpus,gpu_time,cluster
2017-10-01 00:01:00,1000.0,1,1000.0,vc1
2017-10-01 00:00:00,500.0,2,1000.0,vc1
2017-10-01 00:01:00,700.0,4,2800.0,vc1
2017-10-01 00:06:40,300.0,1,300.0,vc1
"""
# The same jobs as a Sia CSV in arrival order, durations in seconds: the Philly loader's rule
# (seconds on a median GPU, simulated as 1-second iterations) is Sia's --duration-unit seconds.
SIA_SECONDS = """\
job_id,num_gpus,submit_time,duration,model
0,2,0,500,unknown
1,1,60,1000,unknown
2,4,60,700,unknown
3,1,400,300,unknown
"""


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EVALUATE), *(str(a) for a in args)],
                          capture_output=True, text=True, timeout=120, check=False)


def avg_jct(path: Path) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["policy"]: row["avg_jct_s"] for row in csv.DictReader(handle)}


def test_format_names_match_the_traces_package() -> None:
    from agents.evaluation.args import TRACE_FORMAT_NAMES

    assert TRACE_FORMAT_NAMES == traces.TRACE_FORMATS


@pytest.mark.parametrize("format_args", [(), ("--trace-format", "philly")])
def test_philly_file_gives_the_results_of_its_sia_seconds_twin(
    tmp_path: Path, format_args: tuple[str, ...]
) -> None:
    (tmp_path / "profile.csv").write_text(PROFILE, encoding="utf-8")
    (tmp_path / "jobs.csv").write_text(PHILLY, encoding="utf-8")
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "jobs.csv").write_text(SIA_SECONDS, encoding="utf-8")
    common = ("--cluster", "2x2", "--profile", tmp_path / "profile.csv", "--quiet",
              "--policy", "pal", "packed-sticky")
    ours = run_cli("--trace", tmp_path / "jobs.csv", *format_args, *common,
                   "--output", tmp_path / "philly.csv")
    assert ours.returncode == 0, ours.stderr
    theirs = run_cli("--trace", twin / "jobs.csv", "--duration-unit", "seconds", *common,
                     "--output", tmp_path / "sia.csv")
    assert theirs.returncode == 0, theirs.stderr
    assert avg_jct(tmp_path / "philly.csv") == avg_jct(tmp_path / "sia.csv")


def test_wrong_format_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(PHILLY, encoding="utf-8")
    process = run_cli("--trace", path, "--trace-format", "sia", "--quiet")
    assert process.returncode == 2
    assert "jobs.csv" in process.stderr and "Traceback" not in process.stderr
