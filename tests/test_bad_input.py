"""Every loader rejects malformed input with an error naming file, line and field (docs/TESTING.md).

Line numbers are 1-based physical lines: the header is line 1, the first data row line 2.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ConfigError, PalgymError, TraceFormatError
from palgym.io import read_sia_trace
from palgym.policies import FIFO
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import SimConfig, preset
from palgym.sim.engine import Simulator
from palgym.sim.types import FREE
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import drive, make_episode, run_episode
from palgym.testing import check_episode_outcome

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


# --------------------------------------------------------------------------- Sia traces
@pytest.mark.parametrize(
    ("bad_row", "field", "words"),
    [
        ((2, "abc", 0, 1000, "resnet50"), "num_gpus", "not a number"),
        ((2, 2.5, 0, 1000, "resnet50"), "num_gpus", "not an integer"),
        ((2, 0, 0, 1000, "resnet50"), "num_gpus", "> 0"),
        ((2, -1, 0, 1000, "resnet50"), "num_gpus", "> 0"),
        ((2, 1, -5, 1000, "resnet50"), "submit_time", ">= 0"),
        ((2, 1, "1e3x", 1000, "resnet50"), "submit_time", "not a number"),
        ((2, 1, 0, 0, "resnet50"), "duration", "> 0"),
        ((2, 1, 0, -10, "resnet50"), "duration", "> 0"),
        ((2, 1, 0, "nan", "resnet50"), "duration", "not a finite number"),
        ((2, 1, 0, "inf", "resnet50"), "duration", "not a finite number"),
        ((2, 1, "NaN", 10, "resnet50"), "submit_time", "not a finite number"),
        (("x7", 1, 0, 10, "resnet50"), "job_id", "not a number"),
        ((2.5, 1, 0, 10, "resnet50"), "job_id", "not an integer"),
        ((2, "", 0, 10, "resnet50"), "num_gpus", "empty value"),
        ((2, 1, 0, 10, ""), "model", "empty value"),
        ((2, 1, 0, 10, "AlexNet"), "model", "unknown model 'AlexNet'"),
        ((1, 1, 0, 10, "resnet50"), "job_id", "duplicate job id 1 (first on line 2)"),
    ],
)
def test_sia_bad_cell(write_sia_csv, bad_row: tuple, field: str, words: str) -> None:
    # The good row is line 2, the bad row line 3, a good row after it line 4.
    path = write_sia_csv([GOOD, bad_row, (3, 1, 0, 10, "BERT")])
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, 3, field)
    assert words in str(error.value)


def test_sia_missing_column(write_sia_csv) -> None:
    path = write_sia_csv([(1, 2, 0, "resnet50")], header="job_id,num_gpus,submit_time,model")
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, 1, "duration")
    assert "missing column" in str(error.value)


def test_sia_wrong_number_of_fields(write_sia_csv) -> None:
    path = write_sia_csv([GOOD, "2,1,0,10"])
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, 3, None)
    assert "expected 5 fields, got 4" in str(error.value)


def test_sia_empty_file(write_sia_csv) -> None:
    path = write_sia_csv([], header=None)
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, 1, None)
    assert "empty file" in str(error.value)


def test_sia_header_only(write_sia_csv) -> None:
    path = write_sia_csv([])
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, 2, None)
    assert "no jobs" in str(error.value)


def test_sia_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.csv"
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, None, None)
    assert "cannot read file" in str(error.value)


def test_sia_line_numbers_count_comments_and_blank_lines(write_sia_csv) -> None:
    # Line 1 a comment, line 2 the header, line 3 a good row, line 4 blank, line 5 bad.
    path = write_sia_csv(
        ["# provenance", "job_id,num_gpus,submit_time,duration,model", "1,1,0,10,BERT", "",
         "2,1,0,-1,BERT"],
        header=None,
    )
    with pytest.raises(TraceFormatError) as error:
        read_sia_trace(path)
    assert_names(error, path, 5, "duration")


def test_sia_good_file_with_extra_column_and_unsorted_rows(write_sia_csv) -> None:
    # batch_size is ignored; rows are sorted by submit time (stable) and durations are
    # iterations: ideal duration = 1000 x 0.179 s for BERT.
    path = write_sia_csv(
        [(5, 1, 30, 1000, "BERT", 16), (7, 2, 10, 10, "resnet50", 32), (6, 1, 30, 5, "vgg19", 8)],
        header="job_id,num_gpus,submit_time,duration,model,batch_size",
    )
    trace = read_sia_trace(path)
    assert trace.job_id.tolist() == [7, 5, 6]
    assert trace.perf_class.tolist() == [0, 1, 2]
    assert trace.ideal_duration_s[1] == pytest.approx(1000 * 0.179)
    assert trace.name == "trace" and trace.source == str(path)


def test_unknown_model_in_seconds_is_class_a_with_a_warning(write_sia_csv, caplog) -> None:
    path = write_sia_csv([(1, 1, 0, 600, "AlexNet"), (2, 1, 0, 60, "BERT")])
    with caplog.at_level(logging.WARNING):
        trace = read_sia_trace(path, duration_unit="seconds")
    assert trace.perf_class.tolist() == [0, 1]  # unknown -> A; BERT -> B
    assert trace.iteration_time_s.tolist() == [1.0, 1.0]
    assert trace.total_iterations.tolist() == [600.0, 60.0]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("AlexNet" in r.getMessage() and "class A" in r.getMessage() for r in warnings)


def test_bad_duration_unit(write_sia_csv) -> None:
    path = write_sia_csv([GOOD])
    with pytest.raises(ValueError, match="minutes"):
        read_sia_trace(path, duration_unit="minutes")


def test_public_traces_load(data_dir: Path) -> None:
    # The published Sia-Philly workloads are well-formed 160-job traces.
    folder = data_dir / "traces" / "sia_philly_pal"
    files = sorted(folder.glob("workload-*.csv"))
    assert files, f"no workload files in {folder}"
    for path in files:
        assert read_sia_trace(path).num_jobs == 160


# --------------------------------------------------------------------------- impossible jobs
def one_job_trace(num_gpus: int, job_id: int = 42) -> Trace:
    return Trace.from_columns(
        "big", job_id=[1, job_id], submit_time_s=[0.0, 10.0], num_gpus=[1, num_gpus],
        total_iterations=[10.0, 10.0], iteration_time_s=[1.0, 1.0], model=["m", "m"],
    )


def test_job_larger_than_the_cluster_is_rejected_at_load() -> None:
    cluster = ClusterSpec(2, 2)
    trace = one_job_trace(5)
    profile = VariabilityProfile.homogeneous(4)
    with pytest.raises(TraceFormatError) as error:
        Simulator(trace, profile, cluster, preset("default"))
    message = str(error.value)
    assert "num_gpus" in message and "job 42" in message and "5 GPUs" in message
    with pytest.raises(TraceFormatError, match="job 42"):  # refused before any run
        make_episode(trace, cluster=cluster, profile=profile)
    # Exactly the cluster size is fine.
    assert run_episode(make_episode(one_job_trace(4), cluster=cluster, profile=profile),
                       "packed-sticky").metrics.num_completed == 2


class NeverPlaces:
    """A (broken) placement that never places anything."""

    name = "never"
    sticky = False
    deterministic = True

    def place(self, sim: Simulator, order: np.ndarray, sampler: object) -> np.ndarray:
        return np.full(sim.cluster.num_gpus, FREE, dtype=np.int64)


def test_a_policy_that_never_places_is_reported_not_looped() -> None:
    # After the last arrival (t = 10 s -> admitted at 360) nothing can change: the loop must
    # stop with an error instead of spinning (alibaba/open-simulator PR 34).
    sim = Simulator(one_job_trace(2), VariabilityProfile.homogeneous(4), ClusterSpec(2, 2),
                    preset("default"))
    with pytest.raises(PalgymError, match="could never end"):
        drive(sim, FIFO(), NeverPlaces(), np.random.default_rng(0))  # type: ignore[arg-type]
    assert sim.now_s == 360.0


def test_strict_packed_sticky_reports_a_cluster_sized_job() -> None:
    # With the artifact's Packed-Sticky rule (spread over nodes only when strictly more than N
    # GPUs are free) a job of exactly G = 4 GPUs on 2x2 can never be placed: the run must stop
    # with an error once nothing else can happen, not loop. Without the rule it runs.
    trace = Trace.from_columns("full", job_id=[1], submit_time_s=[0.0], num_gpus=[4],
                               total_iterations=[10.0], iteration_time_s=[1.0], model=["m"])
    profile = VariabilityProfile.homogeneous(4)
    strict = make_episode(trace, cluster=ClusterSpec(2, 2), profile=profile,
                          config=preset("default", packed_sticky_strict_total=True))
    with pytest.raises(PalgymError, match="could never end"):
        run_episode(strict, "packed-sticky")
    assert run_episode(strict, "packed-non-sticky").metrics.num_completed == 1


def test_max_rounds_truncates_instead_of_running_forever() -> None:
    # 1x1 cluster, a 1-GPU job of 3600 s (10 rounds of 360 s) capped at 3 rounds: the episode
    # ends truncated with the job incomplete (NaN completion), never hanging.
    trace = Trace.from_columns("long", job_id=[1], submit_time_s=[0.0], num_gpus=[1],
                               total_iterations=[3600.0], iteration_time_s=[1.0], model=["m"])
    episode = make_episode(trace, cluster=ClusterSpec(1, 1), config=preset("default",
                           max_rounds=3), profile=VariabilityProfile.homogeneous(1))
    result = run_episode(episode, "packed-sticky")
    assert result.num_rounds == 3
    assert result.metrics.num_completed == 0
    assert np.isnan(result.records.completion_time_s).all()
    sim = Simulator(trace, episode.profile, episode.cluster, episode.config)
    sim.commit(np.array([0]))
    for _ in range(3):
        sim.advance()
    assert sim.truncated and not sim.done
    check_episode_outcome(sim)  # truncated: incomplete jobs are allowed


# --------------------------------------------------------------------------- configuration
@pytest.mark.parametrize("text", ["16by4", "16x", "x4", "16x4x2", "", "-1x4"])
def test_cluster_parse_rejects(text: str) -> None:
    with pytest.raises(ConfigError) as error:
        ClusterSpec.parse(text)
    assert repr(text) in str(error.value)


def test_cluster_parse_and_shape() -> None:
    assert ClusterSpec.parse(" 16 X 4 ") == ClusterSpec(16, 4)
    for nodes, gpus in ((0, 4), (4, 0)):
        with pytest.raises(ConfigError):
            ClusterSpec(nodes, gpus)


def test_preset_errors_name_the_culprit() -> None:
    with pytest.raises(ConfigError) as error:
        preset("nope")
    assert "'nope'" in str(error.value) and "pal-artifact" in str(error.value)
    with pytest.raises(ConfigError) as error:
        preset("default", bogus=1)
    assert "bogus" in str(error.value)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"round_duration_s": 0.0}, "round_duration_s"),
        ({"round_duration_s": float("nan")}, "round_duration_s"),
        ({"locality_penalty": 0.5}, "locality penalty must be >= 1, got 0.5"),
        ({"locality_penalty_by_class": (1.0, 1.0, 1.0)}, "locality_penalty_by_class"),
        ({"restart_cost_s": -1.0}, "restart_cost_s"),
        ({"las_service": "cpu-time"}, "las_service"),
        ({"locality_rule": "anywhere"}, "locality_rule"),
        ({"pal_node_order": "random"}, "pal_node_order"),
        ({"slowdown_clusters": "elbow"}, "slowdown_clusters"),
        ({"max_rounds": 0}, "max_rounds"),
    ],
)
def test_sim_config_rejects(options: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        SimConfig(**options)  # type: ignore[arg-type]


def test_trace_from_columns_rejects() -> None:
    base: dict[str, object] = dict(job_id=[1, 2], submit_time_s=[0.0, 1.0], num_gpus=[1, 1],
                                   total_iterations=[1.0, 1.0], iteration_time_s=[1.0, 1.0],
                                   model=["m", "m"])
    for field, value, words in (
        ("job_id", [1, 1], "duplicate job id 1"),
        ("submit_time_s", [0.0, -1.0], "job 2"),
        ("total_iterations", [1.0, 0.0], "job 2"),
        ("iteration_time_s", [np.inf, 1.0], "job 1"),
        ("num_gpus", [1, 2, 3], "expected 2 values"),
    ):
        with pytest.raises(TraceFormatError, match=words) as error:
            Trace.from_columns("t", **{**base, field: value})  # type: ignore[arg-type]
        assert error.value.field == field
    with pytest.raises(TraceFormatError, match="no jobs"):
        Trace.from_columns("t", job_id=[], submit_time_s=[], num_gpus=[], total_iterations=[],
                           iteration_time_s=[], model=[])


# --------------------------------------------------------------------------- times, integers
def two_job_trace(**columns: object) -> Trace:
    base: dict[str, object] = dict(job_id=[1, 2], submit_time_s=[0.0, 10.0], num_gpus=[1, 1],
                                   total_iterations=[10.0, 10.0], iteration_time_s=[1.0, 1.0],
                                   model=["m", "m"])
    return Trace.from_columns("t", **{**base, **columns})  # type: ignore[arg-type]


@pytest.mark.parametrize("submit_s", [1e18, 1e308])
def test_a_time_the_clock_cannot_resolve_is_refused_naming_file_line_field(
        write_sia_csv, submit_s: float) -> None:
    # At 1e18 the float64 spacing is 128 s (one 360 s round moves the clock by 384 s); at
    # 1e308 a round does not move it at all. Both are far above 360 s x 2**-20.
    path = write_sia_csv([GOOD, (2, 1, repr(submit_s), 1000, "resnet50")])
    trace = read_sia_trace(path)
    with pytest.raises(TraceFormatError) as error:
        make_episode(trace, cluster=ClusterSpec(1, 2), profile=VariabilityProfile.homogeneous(2))
    assert_names(error, path, 3, "submit_time_s")
    assert "clock's resolution" in str(error.value) and "job 2" in str(error.value)
    with pytest.raises(TraceFormatError, match="clock's resolution"):
        Simulator(trace, VariabilityProfile.homogeneous(2), ClusterSpec(1, 2), preset("default"))


def test_the_clock_resolution_bound_is_the_float64_spacing() -> None:
    # numpy.spacing is 2**-12 s on [2**40, 2**41) and 2**-11 s from 2**41: 360 s x 2**-20 =
    # 3.4e-4 s lies between them, so 2**40 s (+ 10 s of work) is accepted and 2**41 s is not.
    cluster, profile = ClusterSpec(1, 1), VariabilityProfile.homogeneous(1)
    make_episode(two_job_trace(submit_time_s=[0.0, 2.0 ** 40]), cluster=cluster, profile=profile)
    with pytest.raises(TraceFormatError, match="'submit_time_s'"):
        make_episode(two_job_trace(submit_time_s=[0.0, 2.0 ** 41]), cluster=cluster,
                     profile=profile)
    # The ideal end counts too: a job arriving at 0 with 1e300 iterations of 10 s.
    with pytest.raises(TraceFormatError, match="'total_iterations'.*would end") as error:
        make_episode(two_job_trace(total_iterations=[10.0, 1e300], iteration_time_s=[1.0, 10.0]),
                     cluster=cluster, profile=profile)
    assert "job 2 (row 1, 0-based)" in str(error.value)


def test_a_first_arrival_after_the_round_cap_is_refused() -> None:
    # 10 rounds of 360 s end at 3600 s: a trace starting there could never admit a job.
    config = preset("default", max_rounds=10)
    cluster, profile = ClusterSpec(1, 1), VariabilityProfile.homogeneous(1)
    with pytest.raises(TraceFormatError, match="max_rounds 10 x round_duration_s 360 = 3600"):
        make_episode(two_job_trace(submit_time_s=[3600.0, 4000.0]), cluster=cluster,
                     profile=profile, config=config)
    episode = make_episode(two_job_trace(submit_time_s=[3599.0, 4000.0]), cluster=cluster,
                           profile=profile, config=config)
    assert run_episode(episode, "packed-sticky").metrics.truncated


def test_improvement_never_divides_by_zero(caplog) -> None:
    from palgym.sim.metrics import improvement

    assert improvement(1.0, 4.0) == 0.75
    for policy_s, baseline_s in ((1.0, 0.0), (0.0, 0.0), (float("nan"), 2.0)):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert np.isnan(improvement(policy_s, baseline_s))
        assert "JCT ratio undefined" in caplog.text


@pytest.mark.parametrize(
    ("field", "values", "row", "shown"),
    [
        ("num_gpus", [1.5, 2], 0, "1.5"),
        ("num_gpus", [1, float("nan")], 1, "nan"),
        ("job_id", [1, 2.5], 1, "2.5"),
        ("job_id", [1, "x"], 1, "'x'"),
        ("perf_class", [0, 0.5], 1, "0.5"),
    ],
)
def test_integer_columns_refuse_fractions(field: str, values: list[object], row: int,
                                          shown: str) -> None:
    with pytest.raises(TraceFormatError) as error:
        two_job_trace(**{field: values})
    assert error.value.field == field
    assert f"(row {row}, 0-based): value {shown} is not a whole number" in str(error.value)
    # With the source lines known, the line is named instead.
    with pytest.raises(TraceFormatError) as error:
        two_job_trace(**{field: values}, source="f.csv", source_line=[2, 3])
    assert error.value.line == row + 2 and error.value.path == "f.csv"


def test_integer_columns_take_whole_floats() -> None:
    trace = two_job_trace(num_gpus=[1.0, 2.0], job_id=[7.0, 8.0])
    assert trace.num_gpus.tolist() == [1, 2] and trace.job_id.tolist() == [7, 8]
