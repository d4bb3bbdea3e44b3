"""The canonical schema (traces/schema.py), its files (canonical_io) and conversion (convert)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from palgym.errors import TraceFormatError
from palgym.sim.workload import MODEL_ITERATION_TIME_S
from traces.canonical_io import read_canonical, write_canonical
from traces.convert import duration_seconds, to_seconds, to_trace
from traces.formats import detect_format, load_trace
from traces.schema import CANONICAL_COLUMNS, make_canonical


def small(**overrides: object):  # type: ignore[no-untyped-def]
    columns: dict[str, object] = {
        "job_id": [2, 1, 3], "submit_time_s": [5.0, 0.0, 5.0], "num_gpus": [1, 2, 4],
        "duration": [10.0, 20.5, 30.0], "duration_unit": "iterations",
        "model": ["vgg19", "resnet50", "BERT"], "perf_class": ["", "", "D"],
        "batch_size": [np.nan, 32.0, 64.0],
    }
    columns.update(overrides)
    return make_canonical("small", metadata={"format": "test"}, **columns)  # type: ignore[arg-type]


def test_rows_are_sorted_stably_with_exact_text() -> None:
    trace = small()
    assert trace.to_csv_text().splitlines() == [
        ",".join(CANONICAL_COLUMNS),
        "1,0.0,2,20.5,iterations,resnet50,,32",
        "2,5.0,1,10.0,iterations,vgg19,,",
        "3,5.0,4,30.0,iterations,BERT,D,64",
    ]


def test_csv_round_trip_keeps_rows_metadata_and_hash(tmp_path: Path) -> None:
    trace = small(submit_time_s=[0.1 + 0.2, 0.0, 1e-9])  # floats that need repr to survive
    path = write_canonical(trace, tmp_path / "t.csv")
    text = path.read_text().splitlines()
    assert text[0] == "# format: test" and text[1] == f"# content_hash: {trace.content_hash()}"
    back = read_canonical(path)
    assert detect_format(path) == "canonical"
    assert back.content_hash() == trace.content_hash()
    assert back.metadata == {"format": "test"}
    assert back.jobs["submit_time_s"].tolist() == [0.0, 1e-9, 0.1 + 0.2]


def test_edited_file_fails_its_hash(tmp_path: Path) -> None:
    path = write_canonical(small(), tmp_path / "t.csv")
    path.write_text(path.read_text().replace("20.5", "21.5"))
    with pytest.raises(TraceFormatError) as error:
        read_canonical(path)
    assert error.value.field == "content_hash"


def test_parquet_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    trace = small()
    path = write_canonical(trace, tmp_path / "t.parquet")
    back = read_canonical(path)
    assert back.content_hash() == trace.content_hash() and back.metadata == {"format": "test"}
    assert load_trace(path).content_hash() == to_trace(trace).content_hash()


def test_to_trace_units_and_classes() -> None:
    trace = to_trace(small())
    assert trace.iteration_time_s.tolist() == [
        MODEL_ITERATION_TIME_S["resnet50"], MODEL_ITERATION_TIME_S["vgg19"],
        MODEL_ITERATION_TIME_S["BERT"],
    ]
    assert trace.perf_class.tolist() == [0, 2, 3]  # resnet50 A, vgg19 C, explicit D
    seconds = to_trace(small(duration_unit="seconds"))
    assert seconds.iteration_time_s.tolist() == [1.0, 1.0, 1.0]
    assert seconds.total_iterations.tolist() == [20.5, 10.0, 30.0]


def test_to_seconds_and_mixed_units() -> None:
    mixed = small(duration_unit=["seconds", "iterations", "iterations"])
    with pytest.raises(TraceFormatError) as error:
        to_trace(mixed)
    assert error.value.field == "duration_unit"
    # rows sorted: resnet50 (iterations), vgg19 (seconds), BERT (iterations)
    expected = [
        20.5 * MODEL_ITERATION_TIME_S["resnet50"], 10.0, 30.0 * MODEL_ITERATION_TIME_S["BERT"],
    ]
    assert duration_seconds(mixed).tolist() == expected
    converted = to_seconds(mixed)
    assert set(converted.jobs["duration_unit"]) == {"seconds"}
    assert to_trace(converted).ideal_duration_s.tolist() == expected


@pytest.mark.parametrize("field, value", [
    ("num_gpus", [0, 1, 1]), ("duration", [1.0, 0.0, 1.0]), ("submit_time_s", [-1.0, 0, 0]),
    ("duration_unit", "minutes"), ("model", ["", "a", "b"]), ("perf_class", ["E", "", ""]),
    ("batch_size", [0.5, 1, 1]), ("job_id", [1, 1, 2]),
])
def test_schema_violations_name_the_field(field: str, value: object) -> None:
    with pytest.raises(TraceFormatError) as error:
        small(**{field: value})
    assert error.value.field == field
