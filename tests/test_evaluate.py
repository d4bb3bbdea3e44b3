"""Tests of ``evaluate.py`` (subprocess smoke runs) and of :mod:`palgym.report`.

The tiny trace below runs on a 2 x 2 cluster under the ``default`` preset (R = 360 s) with a
hand-written profile whose values are all >= 1.0 (no GPU is faster than the median), so no job
can beat its ideal run time: a job submitted at ``s`` is first seen at the round boundary
``a = ceil(s / R) * R``, needs at least ``k = ceil(ideal / R)`` rounds, completes at a boundary
(rounded up), so ``JCT >= a + k * R - s``.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.evaluation.comparison import heuristic_table
from palgym.io import read_sia_trace
from palgym.policies import PLACEMENT_NAMES
from palgym.report import (
    Evaluation,
    EvaluationSetup,
    policies_to_run,
)
from palgym.report_output import (
    CSV_COLUMNS,
    format_columns,
    format_geomean_table,
    format_percent,
    format_results_table,
    results_csv,
    without_negative_zero,
)
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.variability import VariabilityProfile

EVALUATE = Path(__file__).resolve().parents[1] / "evaluate.py"
ROUND_S = 360.0

TINY_TRACE = """\
job_id,num_gpus,submit_time,duration,model
0,1,0,5000,vgg19
1,2,100,3000,resnet50
2,4,200,2000,PointNet
3,1,400,10000,BERT
4,2,900,4000,DCGAN
5,3,1000,1500,vgg19
"""
# Hand-worked lower bounds (ideal = iterations x T_it; a = first boundary >= submit):
# job  ideal (s)                   rounds k  a     a + k R  JCT >=
# 0    5000 x 0.300610341 = 1503.1  5        0     1800     1800
# 1    3000 x 0.175404294 =  526.2  2        360   1080      980
# 2    2000 x 0.28125     =  562.5  2        360   1080      880
# 3   10000 x 0.179       = 1790.0  5        720   2520     2120
# 4    4000 x 0.046926693 =  187.7  1        1080  1440      540
# 5    1500 x 0.300610341 =  450.9  2        1080  1800      800
TINY_JCT_LOWER_BOUNDS_S = (1800.0, 980.0, 880.0, 2120.0, 540.0, 800.0)

TINY_PROFILE = """\
gpu,perfvar_classA,perfvar_classB,perfvar_classC,perfvar_classD
0,1.0,1.0,1.0,1.0
1,1.0,1.0,1.0,1.0
2,1.25,1.0,1.5,1.0
3,1.0,1.1,1.0,1.0
"""


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``evaluate.py`` with ``args`` in a subprocess."""
    return subprocess.run(
        [sys.executable, str(EVALUATE), *(str(a) for a in args)],
        capture_output=True, text=True, timeout=120, check=False,
    )


def read_csv_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny trace and profile, written once for the module."""
    folder = tmp_path_factory.mktemp("tiny")
    trace = folder / "tiny.csv"
    trace.write_text(TINY_TRACE, encoding="utf-8")
    profile = folder / "profile.csv"
    profile.write_text(TINY_PROFILE, encoding="utf-8")
    return {"trace": trace, "profile": profile, "folder": folder}


def has_matplotlib() -> bool:
    """Whether the ``viz`` extra (matplotlib) is installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def tiny_run(tiny_files: dict[str, Path]) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One run of every policy on the tiny trace, with a CSV output and (if matplotlib is
    installed) plots in ``<folder>/plots``; one subprocess keeps the suite fast."""
    output = tiny_files["folder"] / "results.csv"
    plot_args = ("--plot", tiny_files["folder"] / "plots") if has_matplotlib() else ()
    process = run_cli(
        "--trace", tiny_files["trace"], "--cluster", "2x2", "--preset", "default",
        "--profile", tiny_files["profile"], "--output", output, "--quiet", *plot_args,
    )
    return process, output


def test_tiny_run_succeeds_and_prints_the_table(
    tiny_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    process, _ = tiny_run
    assert process.returncode == 0, process.stderr
    for policy in PLACEMENT_NAMES:
        assert re.search(rf"^tiny +{policy} +fifo ", process.stdout, re.MULTILINE), policy
    assert "vs packed-non-sticky (%)" in process.stdout
    assert "episode hashes:" in process.stdout


def test_tiny_csv_has_exact_header_and_one_row_per_policy(
    tiny_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    process, output = tiny_run
    assert process.returncode == 0, process.stderr
    assert output.read_text(encoding="utf-8").splitlines()[0] == ",".join(CSV_COLUMNS)
    header, rows = read_csv_rows(output)
    assert tuple(header) == CSV_COLUMNS
    assert [row["policy"] for row in rows] == list(PLACEMENT_NAMES)
    assert {(row["trace"], row["queue_order"], row["num_jobs"]) for row in rows} == {
        ("tiny", "fifo", "6")
    }
    assert len({row["episode_hash"] for row in rows}) == 1


def test_tiny_avg_jct_respects_hand_computed_lower_bound(
    tiny_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, output = tiny_run
    bound_s = sum(TINY_JCT_LOWER_BOUNDS_S) / len(TINY_JCT_LOWER_BOUNDS_S)  # 1186.67 s
    for row in read_csv_rows(output)[1]:
        avg_s = float(row["avg_jct_s"])
        assert avg_s > 0.0
        assert avg_s >= bound_s - 1e-9, row["policy"]
        # jct_j >= bound_j for every job, so each order statistic of the JCTs bounds that of
        # the bounds, and numpy's interpolated percentile is monotone in the order statistics.
        assert float(row["p99_jct_s"]) >= np.percentile(TINY_JCT_LOWER_BOUNDS_S, 99) - 1e-9
        assert 0.0 < float(row["utilization_effective"]) <= float(row["utilization_allocated"])


def test_tiny_improvement_is_relative_to_packed_sticky(
    tiny_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, output = tiny_run
    rows = {row["policy"]: row for row in read_csv_rows(output)[1]}
    assert rows["packed-sticky"]["improvement_vs_baseline"] == "0.0"
    baseline_s = float(rows["packed-sticky"]["avg_jct_s"])
    for row in rows.values():
        assert row["baseline"] == "packed-sticky"
        expected = 1.0 - float(row["avg_jct_s"]) / baseline_s
        assert float(row["improvement_vs_baseline"]) == pytest.approx(expected, abs=1e-15)


def test_plot_writes_cdf_and_normalised_pngs(
    tiny_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    if not has_matplotlib():
        pytest.skip("plots need the viz extra (matplotlib): pip install -e .[viz]")
    process, output = tiny_run
    assert process.returncode == 0, process.stderr
    plots = output.parent / "plots"
    names = sorted(p.name for p in plots.iterdir())
    assert names == ["jct-cdf_tiny_fifo.png", "normalised-jct_fifo.png"]
    for path in plots.iterdir():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {plots / 'normalised-jct_fifo.png'}" not in process.stdout  # --quiet


@pytest.fixture(scope="module")
def failed_run(
    tiny_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path, Path, str]:
    """A run on a trace without the ``model`` column, over an existing good output CSV."""
    folder = tmp_path_factory.mktemp("bad")
    bad = folder / "no-model.csv"
    bad.write_text("job_id,num_gpus,submit_time,duration\n0,1,0,100\n", encoding="utf-8")
    output = folder / "results.csv"
    good = "trace,policy\nkept,pal\n"
    output.write_text(good, encoding="utf-8")
    process = run_cli("--trace", tiny_files["trace"], bad, "--output", output, "--quiet")
    return process, bad, output, good


def test_malformed_trace_exits_2_naming_file_and_column(
    failed_run: tuple[subprocess.CompletedProcess[str], Path, Path, str],
) -> None:
    process, bad, _, _ = failed_run
    assert process.returncode == 2
    assert process.stderr.startswith("error: ")
    assert str(bad) in process.stderr
    assert "'model'" in process.stderr and "missing column" in process.stderr
    assert "Traceback" not in process.stderr
    assert process.stdout == ""


def test_failed_run_keeps_the_existing_output(
    failed_run: tuple[subprocess.CompletedProcess[str], Path, Path, str],
) -> None:
    process, _, output, good = failed_run
    assert process.returncode == 2
    assert output.read_text(encoding="utf-8") == good
    assert sorted(p.name for p in output.parent.iterdir()) == ["no-model.csv", "results.csv"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--profile", "p.csv", "--variability-data", "d"), "not allowed with"),
        (("--policy", "fastest"), "argument --policy: 'fastest': unknown placement"),
        (("--cluster", "16by4"), "cluster must look like"),
    ],
)
def test_bad_arguments_exit_2(args: tuple[str, ...], message: str) -> None:
    process = run_cli(*args)
    assert process.returncode == 2
    assert message in process.stderr


def test_bad_option_value_exits_2_without_traceback(tiny_files: dict[str, Path]) -> None:
    process = run_cli("--trace", tiny_files["trace"], "--locality-penalty", "0.5", "--quiet")
    # argparse rejects it before any work, naming the option
    assert process.returncode == 2
    assert "argument --locality-penalty: must be >= 1, got 0.5" in process.stderr
    assert "Traceback" not in process.stderr


# ------------------------------------------------------------------ palgym.report in process
def test_policies_to_run_appends_missing_baselines() -> None:
    assert policies_to_run(["pal"]) == ("pal", "packed-sticky", "packed-non-sticky")
    assert policies_to_run(["pal", "pal"], "pm-first") == ("pal", "pm-first")
    assert policies_to_run(PLACEMENT_NAMES) == PLACEMENT_NAMES


def test_geomean_improvement_over_two_traces(tiny_files: dict[str, Path], tmp_path: Path) -> None:
    first = read_sia_trace(tiny_files["trace"])
    shifted = tmp_path / "shifted.csv"
    shifted.write_text(TINY_TRACE.replace(",0,5000,", ",50,7000,"), encoding="utf-8")
    flat = VariabilityProfile("flat", np.ones((4, 4)))  # one value per class: no k-means needed
    setup = EvaluationSetup(cluster=ClusterSpec(2, 2), config=preset("default"), profile=flat)
    evaluation = heuristic_table([first, read_sia_trace(shifted)], ["pal"], ["fifo"], setup)
    assert evaluation.policies == ("pal", "packed-sticky", "packed-non-sticky")  # baselines added
    ratios = [
        evaluation.result(t, "fifo", "pal").metrics.avg_jct_s
        / evaluation.result(t, "fifo", "packed-non-sticky").metrics.avg_jct_s
        for t in ("tiny", "shifted")
    ]
    expected = 1.0 - math.sqrt(ratios[0] * ratios[1])
    got = evaluation.geomean_improvement("pal", "fifo", "packed-non-sticky")
    assert got == pytest.approx(expected, rel=1e-12)
    assert evaluation.geomean_improvement("packed-sticky", "fifo") == 0.0
    lines = results_csv(evaluation).splitlines()
    assert len(lines) == 1 + 2 * 3 and lines[0] == ",".join(CSV_COLUMNS)


def test_format_columns_aligns_text_left_and_numbers_right() -> None:
    lines = format_columns(["name", "value"], [["a", "1.5"], ["long-name", "10.25"]])
    assert lines == [
        "name       value",
        "---------  -----",
        "a            1.5",
        "long-name  10.25",
    ]


def test_format_percent_prints_zero_without_a_sign() -> None:
    # -0.0004 is -0.04 %, which rounds to zero: "0.0", not "-0.0"
    assert format_percent(-0.0004, signed=True) == "0.0"
    assert format_percent(-0.0, signed=True) == "0.0"
    assert format_percent(0.0, signed=True) == "0.0"
    assert format_percent(0.0004, signed=True) == "0.0"
    assert format_percent(-0.0004) == "0.0"
    assert format_percent(-0.0006, signed=True) == "-0.1"  # -0.06 % rounds to -0.1 %
    assert format_percent(0.0123, signed=True) == "+1.2"
    assert format_percent(0.5) == "50.0"
    assert format_percent(float("nan"), signed=True) == "nan"


def test_without_negative_zero_keeps_every_other_value() -> None:
    assert math.copysign(1.0, without_negative_zero(-0.0)) == 1.0
    assert without_negative_zero(-1e-18) == -1e-18
    assert without_negative_zero(np.float64(2.5)) == 2.5
    assert math.isnan(without_negative_zero(float("nan")))


def test_policy_a_hair_slower_than_the_baseline_prints_zero(tiny_files: dict[str, Path]) -> None:
    """PAL's avg JCT set to baseline x (1 + 2e-4): improvement -2e-4 = -0.02 %, printed as
    "0.0" in both tables; the CSV keeps the full-precision value."""
    flat = VariabilityProfile("flat", np.ones((4, 4)))
    setup = EvaluationSetup(cluster=ClusterSpec(2, 2), config=preset("default"), profile=flat)
    evaluation = heuristic_table([read_sia_trace(tiny_files["trace"])], ["pal"], ["fifo"], setup)
    baseline_s = evaluation.result("tiny", "fifo", "packed-sticky").metrics.avg_jct_s
    results = tuple(
        dataclasses.replace(r, metrics=dataclasses.replace(
            r.metrics, avg_jct_s=baseline_s * (1.0 + 2e-4),
            censored_avg_jct_s=baseline_s * (1.0 + 2e-4))) if r.policy == "pal" else r
        for r in evaluation.results
    )
    evaluation = Evaluation(results, evaluation.traces, evaluation.policies,
                            evaluation.queue_orders, evaluation.baseline,
                            evaluation.episode_hashes)
    table = format_results_table(evaluation).splitlines()
    last_cell = {line.split()[1]: line.split()[-1] for line in table[2:]}
    assert last_cell["pal"] == "0.0"
    assert last_cell["packed-sticky"] == "0.0"
    geomean = format_geomean_table(evaluation).splitlines()
    vs_packed_sticky = {line.split()[0]: line.split()[2] for line in geomean[3:]}
    assert vs_packed_sticky["pal"] == "0.0"
    assert vs_packed_sticky["packed-sticky"] == "0.0"
    assert "-0.0" not in "\n".join(table + geomean)
    rows = {row["policy"]: row for row in csv.DictReader(results_csv(evaluation).splitlines())}
    assert float(rows["pal"]["improvement_vs_baseline"]) == pytest.approx(-2e-4, rel=1e-9)
    assert rows["packed-sticky"]["improvement_vs_baseline"] == "0.0"


# ------------------------------------------------------------------ real data (optional)
PAL_WORKLOAD_1_AVG_JCT_H = {  # PAL_MODEL section 7: the unmodified artifact, FIFO, lf = 1.7
    "packed-sticky": (8.401, 0.02),
    "packed-non-sticky": (8.343, 0.02),
    "pm-first": (7.074, 0.02),
    "pal": (7.034, 0.02),
    "random-sticky": (8.509, 0.10),
    "random-non-sticky": (9.115, 0.10),
}


def test_pal_artifact_reproduces_workload_1(data_dir: Path, tmp_path: Path) -> None:
    output = tmp_path / "workload-1.csv"
    process = run_cli(
        "--preset", "pal-artifact",
        "--variability-data", data_dir / "variability" / "longhorn_pal",
        "--trace", data_dir / "traces" / "sia_philly_pal" / "workload-1.csv",
        "--output", output, "--quiet",
    )
    assert process.returncode == 0, process.stderr
    rows = {row["policy"]: row for row in read_csv_rows(output)[1]}
    assert set(rows) == set(PAL_WORKLOAD_1_AVG_JCT_H)
    for policy, (expected_h, tolerance) in PAL_WORKLOAD_1_AVG_JCT_H.items():
        got_h = float(rows[policy]["avg_jct_s"]) / 3600.0
        assert got_h == pytest.approx(expected_h, rel=tolerance), policy
        assert rows[policy]["num_jobs"] == "160"
