"""Fuzz: hypothesis-generated malformed and edge-case files for every loader.

Each file gives either a clean canonical trace (invariants below) or a PalgymError naming the
file (and, for a TraceFormatError, a line inside the file when one is given): never an exception
from deep inside pandas / numpy / csv. Cases: unsorted rows, equal timestamps, zero-length jobs,
first arrival > 0, huge values, missing and extra fields, wrong types, blank / comment lines.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palgym.errors import PalgymError, TraceFormatError
from palgym.io import read_sia_trace
from traces.convert import to_trace
from traces.formats import load_canonical
from traces.schema import CanonicalTrace

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

WEIRD = st.sampled_from([
    "", " ", "abc", "-1", "0", "-0.0", "1e400", "nan", "inf", "-inf", "1.5", "2.0",
    "99999999999999999999999", "1e308", "0x10", "1_000", '"7"', "3 4", "é", "2017-13-45 99:00:00",
])
SMALL_INT = st.integers(min_value=0, max_value=50).map(str)
TIME = st.integers(min_value=0, max_value=10).map(str)  # few values: many equal timestamps
POSITIVE = st.sampled_from(["0", "1", "2.5", "60", "1e6", "1e15"])
MODEL = st.sampled_from(["vgg19", "resnet50", "BERT", "GPT2", "x", ""])
STAMP = st.sampled_from(["2017-10-01 00:00:00", "2017-10-01 00:00:00", "2017-10-02 08:30:15",
                         "2017-09-30 23:59:59", "1506816000"])


def cell(good: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Mostly good cells, sometimes a weird one."""
    return st.one_of(good, good, good, WEIRD)


def maybe_broken(row: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
    """A CSV line; sometimes a field is missing or extra, or the line is a comment / blank."""
    def render(cells: list[str], damage: int) -> str:
        if damage == 1 and cells:
            cells = cells[:-1]
        elif damage == 2:
            cells = [*cells, "extra"]
        elif damage == 3:
            return "# a comment"
        elif damage == 4:
            return ""
        return ",".join(cells)
    damage = st.sampled_from([0] * 12 + [1, 2, 3, 4])
    return st.builds(render, row, damage)


def file_of(header: str, row: st.SearchStrategy[list[str]]) -> st.SearchStrategy[str]:
    lines = st.lists(maybe_broken(row), min_size=0, max_size=12)
    return lines.map(lambda rows: "\n".join([header, *rows]) + "\n")


SIA_ROW = st.tuples(cell(SMALL_INT), cell(SMALL_INT), cell(TIME), cell(POSITIVE),
                    cell(MODEL)).map(list)
POLLUX_ROW = st.tuples(cell(st.just("j")), cell(TIME), cell(MODEL), cell(SMALL_INT),
                       cell(SMALL_INT)).map(list)
PHILLY_ROW = st.tuples(cell(STAMP), cell(POSITIVE), cell(SMALL_INT), cell(POSITIVE),
                       cell(st.sampled_from(["vcA", "vcB"]))).map(list)
HELIOS_ROW = st.tuples(cell(SMALL_INT), st.just("u"), cell(st.just("vc1")), cell(SMALL_INT),
                       st.just("4"), st.just("1"),
                       cell(st.sampled_from(["COMPLETED", "FAILED", "CANCELLED"])), cell(STAMP),
                       st.just(""), st.just(""), cell(POSITIVE), st.just("q")).map(list)
ALIBABA_ROW = st.tuples(st.just("p"), st.just("1000"), st.just("10"), cell(SMALL_INT),
                        cell(st.sampled_from(["0", "500", "1000"])), st.just("V100"),
                        st.just("LS"), cell(st.sampled_from(["Running", "Pending"])),
                        cell(TIME), cell(st.sampled_from(["", "5", "20", "1e12"])),
                        cell(st.sampled_from(["", "3", "10"]))).map(list)

HEADERS = {
    "sia": "job_id,num_gpus,submit_time,duration,model",
    "pollux": "name,time,application,num_replicas,batch_size",
    "philly": "timestamp,duration,num_gpus,gpu_time,cluster",
    "helios": ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
               "duration,queue"),
    "alibaba": ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                "creation_time,deletion_time,scheduled_time"),
}


def check_outcome(text: str, fmt: str, **options: object) -> CanonicalTrace | None:
    """Load ``text`` as ``fmt``: a valid trace, or a PalgymError naming the file and a line."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_text(text, encoding="utf-8")
        num_lines = len(text.splitlines())
        try:
            trace = load_canonical(path, fmt, **options)
        except PalgymError as error:
            assert str(path) in str(error)
            if isinstance(error, TraceFormatError) and error.line is not None:
                assert 1 <= error.line <= max(num_lines, 1)
            return None
        check_invariants(trace)
        return trace


def check_invariants(trace: CanonicalTrace) -> None:
    jobs = trace.jobs
    submit = jobs["submit_time_s"].to_numpy()
    assert trace.num_jobs >= 1
    assert np.isfinite(submit).all() and (submit >= 0).all() and (np.diff(submit) >= 0).all()
    assert (jobs["num_gpus"].to_numpy() >= 1).all()
    duration = jobs["duration"].to_numpy()
    assert np.isfinite(duration).all() and (duration > 0).all()
    assert jobs["job_id"].is_unique
    assert trace.report is None or trace.report.rows_kept == trace.num_jobs
    if set(jobs["duration_unit"]) == {"seconds"}:
        assert to_trace(trace).num_jobs == trace.num_jobs


@SETTINGS
@given(file_of(HEADERS["sia"], SIA_ROW), st.sampled_from(["iterations", "seconds"]))
def test_sia_fuzz_agrees_with_read_sia_trace(text: str, unit: str) -> None:
    """Differential: where palgym's own reader accepts the file, the palgym Traces are equal;
    where it rejects it, the canonical loader (or the conversion) rejects it too."""
    trace = check_outcome(text, "sia", duration_unit=unit)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_text(text, encoding="utf-8")
        try:
            expected = read_sia_trace(path, duration_unit=unit)
        except PalgymError:
            expected = None
    if expected is None:
        if trace is not None:
            try:
                to_trace(trace)
            except PalgymError:
                return
            raise AssertionError("read_sia_trace rejects a file the canonical loader accepts")
        return
    assert trace is not None
    assert to_trace(trace, name=expected.name).content_hash() == expected.content_hash()


@SETTINGS
@given(file_of(HEADERS["pollux"], POLLUX_ROW), st.integers(0, 3))
def test_pollux_fuzz(text: str, seed: int) -> None:
    check_outcome(text, "pollux", seed=seed)


@SETTINGS
@given(file_of(HEADERS["philly"], PHILLY_ROW))
def test_philly_fuzz(text: str) -> None:
    trace = check_outcome(text, "philly")
    if trace is not None:
        assert trace.jobs["submit_time_s"].iloc[0] == 0.0  # rebased
        assert trace.jobs["job_id"].tolist() == list(range(trace.num_jobs))


@SETTINGS
@given(file_of(HEADERS["helios"], HELIOS_ROW))
def test_helios_fuzz(text: str) -> None:
    check_outcome(text, "helios")


@SETTINGS
@given(file_of(HEADERS["alibaba"], ALIBABA_ROW),
       st.sampled_from(["drop", "round_up"]), st.sampled_from(["drop", "truncate"]))
def test_alibaba_fuzz(text: str, fractional: str, open_ended: str) -> None:
    check_outcome(text, "alibaba", fractional=fractional, open_ended=open_ended)


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.csv"
        path.write_bytes(data)
        for fmt in HEADERS:
            try:
                trace = load_canonical(path, fmt)
            except PalgymError as error:
                assert str(path) in str(error)
            else:
                check_invariants(trace)


def test_found_by_fuzzing_huge_integers_and_python_floats(tmp_path: Path) -> None:
    """Regressions: a 23-digit job id was an OverflowError in palgym's reader; ``1_000`` (which
    ``float()`` reads as 1000) is refused by both readers."""
    header = HEADERS["sia"]
    huge = tmp_path / "huge.csv"
    huge.write_text(f"{header}\n99999999999999999999999,1,0,1,vgg19\n")
    for read in (read_sia_trace, lambda p: load_canonical(p, "sia")):
        try:
            read(huge)
        except TraceFormatError as error:
            assert (error.line, error.field) == (2, "job_id")
        else:
            raise AssertionError("a 23-digit job id was accepted")
    underscore = tmp_path / "underscore.csv"  # both readers refuse it alike (not a number)
    underscore.write_text(f"{header}\n0,1,1_000,1,vgg19\n")
    for read in (read_sia_trace, lambda p: load_canonical(p, "sia")):
        with pytest.raises(TraceFormatError, match="'1_000'") as caught:
            read(underscore)
        assert (caught.value.line, caught.value.field) == (2, "submit_time")


RUNS_ROW = st.tuples(cell(st.sampled_from(["g1", "g2", "g3"])), cell(POSITIVE),
                     st.just("x")).map(list)


@SETTINGS
@given(file_of("uuid,perf,other", RUNS_ROW))
def test_runs_table_fuzz(text: str) -> None:
    """A runs table gives normalised runs (median 1) or a ProfileError naming the file."""
    from palgym.errors import ProfileError
    from traces.variability_io import load_runs_table

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.csv"
        path.write_text(text, encoding="utf-8")
        try:
            table = load_runs_table(path)
        except ProfileError as error:
            assert str(path) in str(error)
            return
    assert np.median(table.norm_runs) == pytest.approx(1.0, rel=1e-12)
    assert (table.gpu_medians > 0).all() and len(table.gpu_ids) == table.gpu_medians.size
