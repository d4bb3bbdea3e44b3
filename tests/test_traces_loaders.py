"""Loaders of public trace formats (traces/loaders, traces/formats) on small hand-written files.

Every expected canonical row below was worked out by hand from the file written in the test.
Line numbers are physical: the header is line 1, the first data row line 2.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ConfigError, TraceFormatError
from palgym.io import read_sia_trace
from palgym.sim.types import PerfClass
from palgym.sim.workload import perf_class_of_model
from traces.formats import TRACE_FORMATS, detect_format, load_canonical, load_trace
from traces.philly_fit import PHILLY_DURATIONS_BY_GPUS

PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
HELIOS_HEADER = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
                 "end_time,duration,queue")
ALIBABA_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                  "creation_time,deletion_time,scheduled_time")
POLLUX_HEADER = "name,time,application,num_replicas,batch_size"


def write(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(trace) -> list[tuple]:  # type: ignore[no-untyped-def]
    jobs = trace.jobs
    return list(zip(jobs["job_id"].tolist(), jobs["submit_time_s"].tolist(),
                    jobs["num_gpus"].tolist(), jobs["duration"].tolist(),
                    jobs["duration_unit"].tolist(), jobs["model"].tolist(), strict=True))


def test_sia_rows_sorted_and_batch_size(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", "job_id,num_gpus,submit_time,duration,model,batch_size",
                 "7,4,30,100,resnet50,256", "3,1,10,2.5,vgg19,")
    trace = load_canonical(path)
    assert detect_format(path) == "sia"
    assert rows(trace) == [(3, 10.0, 1, 2.5, "iterations", "vgg19"),
                           (7, 30.0, 4, 100.0, "iterations", "resnet50")]
    assert trace.jobs["batch_size"].isna().tolist() == [True, False]
    assert int(trace.jobs["batch_size"].iloc[1]) == 256
    assert trace.source_line.tolist() == [3, 2]
    assert trace.report.rows_kept == 2 and not trace.report.entries


@pytest.mark.parametrize("unit", ["iterations", "seconds"])
def test_sia_load_trace_equals_read_sia_trace(tmp_path: Path, unit: str) -> None:
    path = write(tmp_path, "s.csv", "# a comment", "job_id,num_gpus,submit_time,duration,model",
                 "0,2,5,10,BERT", "1,1,0,3.5,vgg19", "2,8,5,1e3,GPT2")
    ours = load_trace(path, duration_unit=unit)
    theirs = read_sia_trace(path, duration_unit=unit)
    assert ours.content_hash() == theirs.content_hash()
    assert ours.source_line.tolist() == theirs.source_line.tolist() == [4, 3, 5]
    assert ours.name == theirs.name == "s"


def test_sia_unknown_model_with_iterations_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", "job_id,num_gpus,submit_time,duration,model",
                 "0,2,5,10,BERT", "1,1,0,3.5,mystery")
    with pytest.raises(TraceFormatError) as error:
        load_trace(path)
    assert error.value.line == 3 and error.value.field == "model"
    assert load_trace(path, duration_unit="seconds").iteration_time_s.tolist() == [1.0, 1.0]


def test_pollux_durations_follow_the_seeded_philly_rule(tmp_path: Path) -> None:
    path = write(tmp_path, "w.csv", POLLUX_HEADER, "cifar10-0,0,cifar10,1,128",
                 "bert-1,60,bert,4,12", "ncf-2,30,ncf,2,")
    first = load_canonical(path, seed=3)
    again = load_canonical(path, seed=3)
    other = load_canonical(path, seed=4)
    assert detect_format(path) == "pollux"
    jobs = first.jobs
    assert jobs["job_id"].tolist() == [0, 2, 1]  # file order ids, sorted by time
    assert jobs["submit_time_s"].tolist() == [0.0, 30.0, 60.0]
    assert jobs["model"].tolist() == ["cifar10", "ncf", "bert"]
    assert jobs["perf_class"].tolist() == ["A", "D", "B"]
    assert set(jobs["duration_unit"]) == {"seconds"}
    assert first.content_hash() == again.content_hash() != other.content_hash()
    assert "Philly" in first.metadata["duration_rule"] and first.metadata["seed"] == "3"
    bounds = {g.min_gpus: (g.quantiles[0][1], g.quantiles[-1][1]) for g in PHILLY_DURATIONS_BY_GPUS}
    for gpus, duration in zip(jobs["num_gpus"], jobs["duration"], strict=True):
        group = max(m for m in bounds if m <= gpus)
        low, high = bounds[group]
        assert low <= duration <= high and duration == np.rint(duration)


def test_philly_sorts_filters_and_rebases(tmp_path: Path) -> None:
    path = write(
        tmp_path, "philly.csv", PHILLY_HEADER,
        "2017-10-01 00:01:00,100.0,1,100.0,vcA",   # line 2: t = 60
        "2017-10-01 00:00:00,50.0,2,100.0,vcB",    # line 3: t = 0 (earliest)
        "2017-10-01 00:00:30,0.0,1,0.0,vcA",       # line 4: zero-length -> dropped
        "2017-10-01 00:01:00,7.0,4,28.0,vcA",      # line 5: tie with line 2, after it
        "2017-10-02 00:00:00,9.0,1,9.0,vcA",       # line 6: outside the window
    )
    trace = load_canonical(path, end="2017-10-02")
    assert detect_format(path) == "philly"
    assert rows(trace) == [(0, 0.0, 2, 50.0, "seconds", "unknown"),
                           (1, 60.0, 1, 100.0, "seconds", "unknown"),
                           (2, 60.0, 4, 7.0, "seconds", "unknown")]
    assert trace.source_line.tolist() == [3, 2, 5]
    assert trace.metadata["time_origin"] == "2017-10-01 00:00:00"
    assert trace.metadata["time_window"] == "[-, 2017-10-02 00:00:00)"
    reasons = {(e.field, e.count, e.lines) for e in trace.report.entries}
    assert reasons == {("timestamp", 1, (6,)), ("duration", 1, (4,))}
    assert trace.report.rows_read == 5 and trace.report.rows_kept == 3
    only_a = load_canonical(path, clusters=["vcA"], start="2017-10-01 00:00:45")
    assert rows(only_a) == [(0, 0.0, 1, 100.0, "seconds", "unknown"),
                            (1, 0.0, 4, 7.0, "seconds", "unknown"),
                            (2, 86340.0, 1, 9.0, "seconds", "unknown")]


def test_helios_gpu_jobs_states_and_vcs(tmp_path: Path) -> None:
    path = write(
        tmp_path, "cluster_log.csv", HELIOS_HEADER,
        "11,u1,vc1,8,16,1,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,"
        "2020-04-01 01:01:00,3600,q",
        "12,u2,vc1,0,4,1,COMPLETED,2020-04-01 00:00:00,,,100,q",          # CPU job
        "13,u2,vc2,1,4,1,FAILED,2020-04-01 00:00:20,,,30,q",
        "14,u3,vc1,2,4,1,CANCELLED,2020-04-01 00:00:30,,,,q",             # never ran
        "15,u3,vc1,4,4,1,COMPLETED,2020-04-01 00:00:40,,,40,q",
    )
    trace = load_canonical(path)
    assert detect_format(path) == "helios"
    assert rows(trace) == [(11, 0.0, 8, 3600.0, "seconds", "unknown"),
                           (13, 10.0, 1, 30.0, "seconds", "unknown"),
                           (15, 30.0, 4, 40.0, "seconds", "unknown")]
    dropped = {e.field: e.lines for e in trace.report.entries}
    assert dropped == {"gpu_num": (3,), "duration": (5,)}
    completed = load_canonical(path, states=["COMPLETED"], vcs=["vc1"])
    assert completed.jobs["job_id"].tolist() == [11, 15]
    assert completed.jobs["submit_time_s"].tolist() == [0.0, 30.0]


def test_helios_non_numeric_ids_are_renumbered(tmp_path: Path) -> None:
    path = write(tmp_path, "c.csv", "job_id,vc,gpu_num,state,submit_time,duration",
                 "jB,v,1,COMPLETED,100,5", "jA,v,1,COMPLETED,50,5")
    trace = load_canonical(path, format="helios")
    assert trace.jobs["job_id"].tolist() == [0, 1]
    assert trace.jobs["submit_time_s"].tolist() == [0.0, 50.0]
    assert trace.source_line.tolist() == [3, 2]


def alibaba_file(tmp_path: Path) -> Path:
    return write(
        tmp_path, "openb_pod_list.csv", ALIBABA_HEADER,
        "p0,8000,1000,1,1000,V100,LS,Succeeded,100,500,110",   # whole GPU: 390 s
        "p1,8000,1000,1,500,,BE,Succeeded,120,300,130",        # half a GPU
        "p2,8000,1000,0,0,,BE,Succeeded,90,200,95",            # CPU pod
        "p3,8000,1000,2,1000,,LS,Pending,140,,",               # never scheduled
        "p4,8000,1000,4,1000,,LS,Running,150,,160",            # never deleted
        "p5,8000,1000,2,1000,,LS,Succeeded,160,170,170",       # zero length
    )


def test_alibaba_default_rules_drop(tmp_path: Path) -> None:
    trace = load_canonical(alibaba_file(tmp_path))
    assert rows(trace) == [(0, 0.0, 1, 390.0, "seconds", "unknown")]
    dropped = {e.reason.split(" (")[0]: e.lines for e in trace.report.entries}
    assert dropped == {"CPU pod": (4,), "fractional GPU": (3,), "never scheduled": (5,),
                       "never deleted": (6,), "zero-length pod": (7,)}


def test_alibaba_round_up_and_truncate(tmp_path: Path) -> None:
    trace = load_canonical(alibaba_file(tmp_path), fractional="round_up", open_ended="truncate")
    # trace end = latest time in the file = 500 (p0's deletion)
    assert rows(trace) == [(0, 0.0, 1, 390.0, "seconds", "unknown"),
                           (1, 20.0, 1, 170.0, "seconds", "unknown"),
                           (2, 50.0, 4, 340.0, "seconds", "unknown")]
    changed = [e for e in trace.report.entries if e.action == "changed"]
    assert [(e.field, e.lines) for e in changed] == [("gpu_milli", (3,)), ("deletion_time", (6,))]
    with pytest.raises(ConfigError):
        load_canonical(alibaba_file(tmp_path), fractional="share")


def test_alibaba_gpu_milli_out_of_range_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", ALIBABA_HEADER, "p0,1,1,1,1000,,LS,Running,1,5,2",
                 "p1,1,1,1,1500,,LS,Running,1,5,2")
    with pytest.raises(TraceFormatError) as error:
        load_canonical(path)
    assert (error.value.line, error.value.field) == (3, "gpu_milli")
    assert str(path) in str(error.value)


def test_detect_format_and_errors(tmp_path: Path) -> None:
    assert set(TRACE_FORMATS) == {"canonical", "sia", "pollux", "philly", "helios", "alibaba"}
    unknown = write(tmp_path, "u.csv", "a,b,c", "1,2,3")
    with pytest.raises(TraceFormatError) as error:
        detect_format(unknown)
    assert error.value.line == 1 and str(unknown) in str(error.value)
    empty = write(tmp_path, "e.csv", "# only a comment")
    with pytest.raises(TraceFormatError):
        detect_format(empty)
    sia = write(tmp_path, "s.csv", "job_id,num_gpus,submit_time,duration,model", "0,1,0,5,vgg19")
    with pytest.raises(ConfigError):
        load_canonical(sia, format="nope")
    with pytest.raises(ConfigError):
        load_canonical(sia, clusters=["x"])  # a Philly option given to a Sia file
    with pytest.raises(TraceFormatError) as error:
        load_canonical(sia, format="philly")
    assert error.value.field == "timestamp"


def test_no_job_left_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "p.csv", PHILLY_HEADER, "2017-10-01 00:00:00,0,1,0,vc")
    with pytest.raises(TraceFormatError, match="no jobs left"):
        load_canonical(path)


def test_load_trace_turns_seconds_into_one_second_iterations(tmp_path: Path) -> None:
    """Every seconds-format loader gives palgym Traces with T_it = 1 s and iterations = seconds
    (the rule of ``read_sia_trace(..., duration_unit="seconds")``)."""
    files = {
        "philly": write(tmp_path, "p.csv", PHILLY_HEADER, "2017-10-01 00:00:10,5.0,2,10.0,v",
                        "2017-10-01 00:00:00,7.0,1,7.0,v"),
        "helios": write(tmp_path, "h.csv", "job_id,vc,gpu_num,state,submit_time,duration",
                        "1,v,1,COMPLETED,100,5", "2,v,2,FAILED,130,9"),
        "alibaba": alibaba_file(tmp_path),
    }
    expected = {"philly": ([0.0, 10.0], [7.0, 5.0], [1, 2]),
                "helios": ([0.0, 30.0], [5.0, 9.0], [1, 2]),
                "alibaba": ([0.0], [390.0], [1])}
    for fmt, path in files.items():
        trace = load_trace(path, duration_unit="iterations")  # ignored: these are seconds
        submit, duration, gpus = expected[fmt]
        assert trace.submit_time_s.tolist() == submit, fmt
        assert trace.total_iterations.tolist() == duration, fmt
        assert trace.iteration_time_s.tolist() == [1.0] * len(submit), fmt
        assert trace.num_gpus.tolist() == gpus, fmt
        assert trace.perf_class.tolist() == [0] * len(submit), fmt  # unknown model: class A


def unknown_model_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "unknown model" in r.getMessage()]


def test_unknown_model_warns_once_per_model_name(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="palgym.sim.workload"):
        assert perf_class_of_model("NoSuchNet") is PerfClass.A
        assert perf_class_of_model("NoSuchNet") is PerfClass.A
        assert unknown_model_warnings(caplog) == ["unknown model 'NoSuchNet': perf class A assumed"]
        assert perf_class_of_model("OtherNet") is PerfClass.A
        assert perf_class_of_model("vgg19") is PerfClass.C  # known: no warning
        assert perf_class_of_model("NoSuchNet") is PerfClass.A
    assert unknown_model_warnings(caplog) == ["unknown model 'NoSuchNet': perf class A assumed",
                                              "unknown model 'OtherNet': perf class A assumed"]


def test_loading_philly_derived_traces_warns_once(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Philly rows have no model ("unknown"); a Sia file with 4 rows of one unknown model.
    Loading each twice logs one warning per model name."""
    philly = write(tmp_path, "p.csv", PHILLY_HEADER,
                   *(f"2017-10-01 00:00:{i:02d},{5 + i}.0,1,{5 + i}.0,v" for i in range(4)))
    sia = write(tmp_path, "s.csv", "job_id,num_gpus,submit_time,duration,model",
                *(f"{i},1,{10 * i},60,AlexNet" for i in range(4)))
    with caplog.at_level(logging.WARNING, logger="palgym.sim.workload"):
        for _ in range(2):
            assert load_trace(philly).perf_class.tolist() == [0] * 4
            assert read_sia_trace(sia, duration_unit="seconds").perf_class.tolist() == [0] * 4
    assert unknown_model_warnings(caplog) == ["unknown model 'unknown': perf class A assumed",
                                              "unknown model 'AlexNet': perf class A assumed"]
