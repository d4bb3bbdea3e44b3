"""Windows, rebasing, arrival resampling, the oversize policy (traces/windows.py) and describe."""

from __future__ import annotations

import math

import numpy as np
import pytest

from palgym.errors import ConfigError, TraceFormatError
from traces.describe import describe, format_summary
from traces.schema import CanonicalTrace, make_canonical
from traces.windows import cut, fit_to_cluster, make_windows, poisson_arrivals


def trace_of(submit: list[float], gpus: list[int], duration: list[float] | None = None,
             unit: str = "seconds") -> CanonicalTrace:
    num = len(submit)
    return make_canonical(
        "t", job_id=list(range(num)), submit_time_s=submit, num_gpus=gpus,
        duration=duration or [100.0] * num, duration_unit=unit, model="unknown",
        source="t.csv", source_line=list(range(2, num + 2)),
    )


TRACE = trace_of([5, 7, 7, 20, 31, 40, 100], [1, 2, 16, 4, 1, 1, 8])


def times(trace: CanonicalTrace) -> list[float]:
    return trace.jobs["submit_time_s"].tolist()


def test_cut_by_job_count_rebases_and_drops_the_partial_window() -> None:
    windows = cut(TRACE, num_jobs=3)
    assert [times(w) for w in windows] == [[0.0, 2.0, 2.0], [0.0, 11.0, 20.0]]
    assert [w.jobs["job_id"].tolist() for w in windows] == [[0, 1, 2], [3, 4, 5]]
    assert [w.name for w in windows] == ["t-w000", "t-w001"]
    assert windows[1].metadata["window_start_s"] == "20.0"
    assert windows[1].metadata["window_index"] == "1"
    partial = cut(TRACE, num_jobs=3, keep_partial=True)
    assert [times(w) for w in partial][-1] == [0.0]


def test_cut_by_span_skips_empty_windows() -> None:
    windows = cut(TRACE, span_s=30.0)  # [5, 35), [35, 65), [95, 125): [65, 95) is empty
    assert [w.jobs["job_id"].tolist() for w in windows] == [[0, 1, 2, 3, 4], [5], [6]]
    assert times(windows[0]) == [0.0, 2.0, 2.0, 15.0, 26.0]
    with pytest.raises(ConfigError):
        cut(TRACE, num_jobs=3, span_s=10.0)
    with pytest.raises(ConfigError):
        cut(TRACE, span_s=0.0)


def test_oversize_policies() -> None:
    with pytest.raises(TraceFormatError) as error:
        fit_to_cluster(TRACE, 8, "reject")
    assert (error.value.line, error.value.field) == (4, "num_gpus")  # job 2, 16 GPUs
    dropped = fit_to_cluster(TRACE, 8, "drop")
    assert dropped.jobs["job_id"].tolist() == [0, 1, 3, 4, 5, 6]
    assert [(e.action, e.lines) for e in dropped.report.entries] == [("dropped", (4,))]
    clipped = fit_to_cluster(TRACE, 4, "clip")
    assert clipped.jobs["num_gpus"].tolist() == [1, 2, 4, 4, 1, 1, 4]
    assert [(e.action, e.lines) for e in clipped.report.entries] == [("changed", (4, 8))]
    assert fit_to_cluster(TRACE, 16, "reject") is TRACE
    with pytest.raises(TraceFormatError):
        fit_to_cluster(trace_of([0], [9]), 8, "drop")  # nothing left


def test_make_windows_drops_oversized_before_counting() -> None:
    windows = make_windows(TRACE, num_jobs=3, cluster_gpus=8, oversize="drop")
    assert [w.jobs["job_id"].tolist() for w in windows] == [[0, 1, 3], [4, 5, 6]]
    assert times(windows[0]) == [0.0, 2.0, 15.0]


def test_poisson_arrivals_hit_the_target_load() -> None:
    """Mean gap = 1 / lambda with lambda = rho G / mean(g d); over n gaps the relative error of
    the mean gap has standard deviation 1 / sqrt(n) (exponential gaps): checked at 4 sigma."""
    num = 20_000
    gpus = [1, 2, 4, 8] * (num // 4)
    big = trace_of(list(range(num)), gpus, [100.0, 300.0, 50.0, 10.0] * (num // 4))
    rho, cluster = 0.7, 64
    resampled = poisson_arrivals(big, rho, cluster, np.random.default_rng(1))
    mean_work = (100 + 600 + 200 + 80) / 4  # GPU-seconds per job
    expected_gap = mean_work / (rho * cluster)
    submit = np.asarray(times(resampled))
    assert submit[0] == 0.0 and (np.diff(submit) >= 0).all()
    observed_gap = submit[-1] / (num - 1)
    assert abs(observed_gap / expected_gap - 1) <= 4 / math.sqrt(num - 1)
    assert resampled.jobs["job_id"].tolist() == list(range(num))  # order kept
    summary = describe(resampled, cluster)
    assert summary.load_frac == pytest.approx(rho * expected_gap / observed_gap, rel=1e-9)


def test_poisson_windows_are_seeded_per_window() -> None:
    kwargs = {"num_jobs": 2, "arrivals": "poisson", "load": 0.5, "cluster_gpus": 16}
    first = make_windows(TRACE, seed=3, **kwargs)
    again = make_windows(TRACE, seed=3, **kwargs)
    other = make_windows(TRACE, seed=4, **kwargs)
    assert [w.content_hash() for w in first] == [w.content_hash() for w in again]
    assert first[0].content_hash() != other[0].content_hash()
    shorter = make_windows(TRACE.select(np.arange(7) < 4), seed=3, **kwargs)
    assert [w.content_hash() for w in shorter] == [w.content_hash() for w in first[:2]]
    with pytest.raises(ConfigError):
        make_windows(TRACE, num_jobs=2, arrivals="poisson", load=0.5)  # no cluster
    with pytest.raises(ConfigError):
        make_windows(TRACE, num_jobs=2, load=0.5)  # load without poisson


def test_describe_hand_computed() -> None:
    trace = trace_of([0, 10, 30], [1, 2, 4], [100.0, 200.0, 50.0])
    summary = describe(trace, cluster_gpus=8)
    assert summary.num_jobs == 3 and summary.span_s == 30.0
    assert summary.jobs_per_hour == pytest.approx(2 / 30 * 3600)
    assert summary.gpu_mix == ((1, 1), (2, 1), (4, 1))
    assert dict(summary.duration_percentiles)[50.0] == 100.0
    assert summary.gpu_seconds == 100 + 400 + 200
    # rate 2/30 jobs/s x mean work 700/3 GPU-s / 8 GPUs
    assert summary.load_frac == pytest.approx(2 / 30 * 700 / 3 / 8)
    text = format_summary(summary)
    assert "jobs         3" in text and "load         1.944 on 8 GPUs" in text


def test_describe_iterations_of_unknown_model_has_no_seconds() -> None:
    trace = trace_of([0, 5], [1, 1], [10.0, 20.0], unit="iterations")
    summary = describe(trace, cluster_gpus=4)
    assert summary.duration_s_percentiles == () and summary.load_frac is None
    assert dict(summary.duration_percentiles)[100.0] == 20.0
