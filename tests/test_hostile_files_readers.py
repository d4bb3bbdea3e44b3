"""Hostile and careless input to palgym's readers themselves: the strict JSON reader (numbers
that are not finite float64, nesting past its depth, files past their size, paths that are no
regular file, a loaded tree's alias budget), bounded inflation, and numbers written with
underscores in trace CSVs. Each is refused with an error naming the file, line and field.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from palgym.errors import TraceFormatError
from palgym.io.bounded import InflateLimitError, inflate
from palgym.io.strict_json import MAX_DEPTH, StrictJsonError, check_tree, loads, read_json
from tests.hostile import (
    zlib_zeros,
)


# ---------------------------------------------------------------- the strict reader itself
@pytest.mark.parametrize(("text", "field", "why"), [
    ('{"a": NaN}', "a", "NaN is not a JSON number"),
    ('{"a": [1, -Infinity]}', "a[1]", "-Infinity is not a JSON number"),
    ('{"a": {"b": 1e999}}', "a.b", "1e999 is not a finite float64"),
    ('{"w": ' + "9" * 400 + "}", "w", "an integer of 400 digits overflows float64"),
])
def test_numbers_that_are_not_finite_float64_are_refused_naming_the_field(
        text: str, field: str, why: str) -> None:
    with pytest.raises(StrictJsonError) as caught:
        loads(text, "f.json")
    assert caught.value.field == field and why in str(caught.value)


def test_deep_nesting_is_refused_without_recursion_naming_the_line() -> None:
    # 100,000 levels: far past Python's recursion limit, refused before json.loads runs
    text = '{"ok": 1,\n"deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(StrictJsonError, match=f"nested deeper than {MAX_DEPTH}") as caught:
        loads(text, "f.json")
    assert caught.value.line == 2
    # brackets inside strings do not count
    assert loads(json.dumps({"s": "[" * 1000}), "f.json") == {"s": "[" * 1000}
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.json") is not None


def test_a_file_past_its_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:  # sparse: 2 MiB that take no disk
        handle.truncate(2 << 20)
    with pytest.raises(StrictJsonError, match=r"larger than the limit of 1 MiB for a test "
                                              r"file; --flag lifts the limit"):
        read_json(big, max_bytes=1 << 20, what="a test file", option="--flag")


def test_a_path_that_is_no_regular_file_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer
    for path in (fifo, tmp_path, Path("/dev/zero")):
        with pytest.raises(StrictJsonError, match="not a regular file"):
            read_json(path, max_bytes=1 << 20, what="a test file")


def test_a_loaded_tree_is_checked_with_an_alias_budget() -> None:
    shared: list[Any] = [1.0] * 10
    for _ in range(6):  # each level refers 10 times to the one below: 10**7 values reached
        shared = [shared] * 10
    with pytest.raises(StrictJsonError, match="more than 1000000 values"):
        check_tree({"a": shared}, "s.yaml")
    with pytest.raises(StrictJsonError) as caught:
        check_tree({"a": [1.0, float("nan")]}, "s.yaml")
    assert caught.value.field == "a[1]"


def test_inflate_stops_at_its_ceiling() -> None:
    bomb = zlib_zeros(16 << 20)
    with pytest.raises(InflateLimitError):
        inflate(bomb, 1 << 20)
    assert inflate(zlib.compress(b"abc"), 3) == b"abc"
    with pytest.raises(zlib.error):
        inflate(zlib.compress(b"abc")[:-2], 100)


# ---------------------------------------------------------------- trace CSVs
def test_an_underscore_number_in_a_trace_csv_is_refused(tmp_path: Path) -> None:
    from palgym.io.sia import read_sia_trace

    path = tmp_path / "t.csv"
    path.write_text("job_id,num_gpus,submit_time,duration,model\n"
                    "0,1,0,100,resnet50\n"
                    "1,1_0,5,100,resnet50\n")
    with pytest.raises(TraceFormatError) as caught:
        read_sia_trace(str(path))
    assert (caught.value.line, caught.value.field) == (3, "num_gpus")
    assert "not a number: '1_0'" in str(caught.value)


def test_an_underscore_number_in_a_canonical_csv_is_refused(tmp_path: Path) -> None:
    from traces.canonical_io import read_canonical

    path = tmp_path / "c.csv"
    good = ("job_id,submit_time_s,num_gpus,duration,duration_unit,model\n"
            "0,0,1,100,seconds,resnet50\n")
    path.write_text(good)
    assert read_canonical(path).num_jobs == 1
    path.write_text(good.replace(",100,", ",1_00,"))
    with pytest.raises(TraceFormatError) as caught:
        read_canonical(path)
    assert caught.value.field == "duration" and "1_00" in str(caught.value)
