"""Loaders on the public data files (skipped unless PALGYM_DATA_DIR is set).

Expected figures come from each folder's SOURCE.md (computed independently of this code).
Speed is measured by ``benchmarks/traces_load.py``, never asserted here.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from palgym.io import read_sia_trace
from traces.describe import describe
from traces.formats import detect_format, load_canonical, load_trace
from traces.windows import make_windows

PAL_MODEL_T_IT_S = {  # PAL_MODEL.md section 2: base iteration time per model (s)
    "BERT": 0.179, "DCGAN": 0.0469266931, "GPT2": 3.5714, "PointNet": 0.28125,
    "resnet50": 0.17540429367763434, "vgg19": 0.300610341,
}


def test_philly_extract_loads_and_describes_itself(data_dir: Path) -> None:
    path = data_dir / "traces" / "philly_sia_artifact" / "philly.csv"
    assert detect_format(path) == "philly"
    trace = load_canonical(path)
    summary = describe(trace, cluster_gpus=64)
    assert summary.num_jobs == 82_247 and trace.report.rows_kept == 82_247
    # SOURCE.md "Shape" / "Summary": GPU counts, 108.9 days, 31.5 jobs/h, p50 1,144 s
    assert dict(summary.gpu_mix) == {1: 76_627, 2: 1_818, 4: 1_870, 8: 1_643, 12: 7, 16: 199,
                                     24: 7, 32: 67, 64: 6, 128: 3}
    assert summary.span_s / 86_400 == pytest.approx(108.9, abs=0.05)
    assert summary.jobs_per_hour == pytest.approx(31.5, abs=0.05)
    assert dict(summary.duration_percentiles)[50.0] == 1_144.0
    assert dict(summary.duration_percentiles)[100.0] == 4_628_226.0
    assert trace.metadata["time_origin"].startswith("2017-09-04 10:30")
    assert load_trace(path).num_jobs == 82_247


def test_philly_window_and_vc(data_dir: Path) -> None:
    path = data_dir / "traces" / "philly_sia_artifact" / "philly.csv"
    vc = load_canonical(path, clusters=["6214e9"])
    assert vc.num_jobs == 41_226  # SOURCE.md: 6214e9 (41k jobs); exact count from the file
    october = load_canonical(path, start="2017-10-01", end="2017-11-01")
    assert october.num_jobs == pytest.approx(47_200, abs=50)  # SOURCE.md "By month": Oct 47.2k
    windows = make_windows(october, num_jobs=160, cluster_gpus=64, oversize="drop")
    kept = int((october.jobs["num_gpus"] <= 64).sum())  # "drop" removes the larger jobs only
    assert len(windows) == kept // 160 and kept // 160 > 200  # no partial last window
    assert all(w.num_jobs == 160 for w in windows)
    assert all((w.jobs["num_gpus"] <= 64).all() for w in windows)


@pytest.mark.parametrize("relative", [
    "traces/sia_philly_pal/workload-1.csv", "traces/sia_philly_pal/workload-5.csv",
    "traces/pal_testbed/sia-160job-trace.csv", "traces/pal_testbed/sia-160job-reduced.csv",
])
def test_sia_files_equal_read_sia_trace(data_dir: Path, relative: str) -> None:
    path = data_dir / relative
    assert detect_format(path) == "sia"
    ours = load_trace(path)
    assert ours.content_hash() == read_sia_trace(path).content_hash()
    # The independent side: the file read with the csv module, durations converted with the
    # base iteration times typed from PAL_MODEL.md section 2 (not palgym's model table).
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    assert len(rows) == ours.num_jobs == 160
    by_id = {int(row["job_id"]): row for row in rows}
    for i, job_id in enumerate(ours.job_id.tolist()):
        row = by_id[job_id]
        assert ours.num_gpus[i] == int(row["num_gpus"])
        assert ours.submit_time_s[i] == float(row["submit_time"])
        assert ours.ideal_duration_s[i] == pytest.approx(
            float(row["duration"]) * PAL_MODEL_T_IT_S[row["model"]], rel=1e-12)


def test_testbed_batch_sizes_and_shockwave_seconds(data_dir: Path) -> None:
    testbed = load_canonical(data_dir / "traces" / "pal_testbed" / "sia-160job-trace.csv")
    assert testbed.num_jobs == 160 and testbed.jobs["batch_size"].notna().all()
    shock = data_dir / "traces" / "shockwave_synthetic_pal" / "poisson_trace_50+1.0.csv"
    ours = load_trace(shock, duration_unit="seconds")
    assert ours.content_hash() == read_sia_trace(shock, duration_unit="seconds").content_hash()
    summary = describe(load_canonical(shock, duration_unit="seconds"))
    assert dict(summary.duration_percentiles)[50.0] == pytest.approx(3774, abs=1)  # SOURCE.md
