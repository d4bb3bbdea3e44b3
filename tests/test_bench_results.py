"""palgym-bench results files: the action codec, the round trip, and named refusals."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from palgym.bench.results import (
    SCHEMA,
    ChoiceRow,
    EpisodeRow,
    Header,
    ResultsError,
    decode_actions,
    encode_actions,
    read_results,
    write_results,
)


def test_actions_are_base64_of_zlib_little_endian_int32() -> None:
    expected = base64.b64encode(zlib.compress(struct.pack("<4i", 0, 7, 300, 2**31 - 1), 9))
    assert encode_actions([0, 7, 300, 2**31 - 1]) == expected.decode("ascii")
    assert decode_actions(encode_actions([0, 7, 300, 2**31 - 1])).tolist() == [0, 7, 300,
                                                                                2**31 - 1]
    assert decode_actions(encode_actions([])).tolist() == []


def test_undecodable_actions_are_refused() -> None:
    with pytest.raises(ValueError, match="not base64"):
        decode_actions("not-base64!")
    with pytest.raises(ValueError, match="whole number of int32"):
        decode_actions(base64.b64encode(zlib.compress(b"abc")).decode("ascii"))


HEADER = Header("s", "0" * 64, "pal", "heuristic", "pal", "0.1.0", "unknown",
                {"t": "6e60869fa7d52cec"}, [0, 1],
                {"t": {"pal": {"env_kwargs": {"max_tiers": 16}, "env_layout": "945904c44a90ad53"}}})
ROW = EpisodeRow("t", "test", "tr", "f" * 64, 1, "pal", 0.1 + 0.2, None, 1e300, 0.5, 30, 29, 1,
                 0, 3, 0.25, "abcd", encode_actions([1, 2, 3]))


def test_a_written_file_reads_back_equal_floats_bit_for_bit(tmp_path: Path) -> None:
    choice = ChoiceRow("t", "srtf/pal", "validation", ["srtf/pal", "fifo/pal"],
                       {"srtf/pal": 1.5, "fifo/pal": None})
    path = write_results(tmp_path / "r.jsonl", HEADER, [choice, ROW])
    read = read_results(path)
    assert read.header == HEADER
    assert read.choices == ((2, choice),) and read.episodes == ((3, ROW),)
    assert read.episodes[0][1].avg_jct_s.hex() == (0.1 + 0.2).hex()  # type: ignore[union-attr]
    first = json.loads(path.read_text().splitlines()[0])
    assert list(first)[:2] == ["record", "schema"] and first["schema"] == SCHEMA


def _lines(tmp_path: Path) -> list[dict[str, object]]:
    text = write_results(tmp_path / "r.jsonl", HEADER, [ROW]).read_text()
    return [json.loads(line) for line in text.splitlines()]


def _refusal(tmp_path: Path, lines: list[dict[str, object]]) -> ResultsError:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ResultsError) as caught:
        read_results(path)
    assert str(path) in str(caught.value)
    return caught.value


def test_an_unknown_schema_is_refused(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    lines[0]["schema"] = "palgym-bench-results/9"
    error = _refusal(tmp_path, lines)
    assert (error.line, error.field) == (1, "schema")


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("seed", "0", "must be int"),
    ("avg_jct_s", "fast", "must be float|None"),
    ("decisions", True, "must be int"),
    ("actions", "%%%", "not base64"),
    ("colour", "red", "unknown field"),
])
def test_a_bad_episode_field_is_named_with_its_line(tmp_path: Path, field: str, value: object,
                                                    problem: str) -> None:
    lines = _lines(tmp_path)
    lines[1][field] = value
    error = _refusal(tmp_path, lines)
    assert (error.line, error.field) == (2, field) and problem in str(error)


def test_a_missing_field_and_an_unknown_record_are_named(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    del lines[1]["episode_hash"]
    error = _refusal(tmp_path, lines)
    assert (error.line, error.field) == (2, "episode_hash") and "missing" in str(error)
    lines = _lines(tmp_path)
    lines[1]["record"] = "note"
    assert (_refusal(tmp_path, lines).field) == "record"
    lines = _lines(tmp_path)
    lines[0]["entry_kind"] = "oracle"
    assert (_refusal(tmp_path, lines).line, _refusal(tmp_path, lines).field) == (1, "entry_kind")


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(write_results(tmp_path / "r.jsonl", HEADER, [ROW]).read_text() + "{oops\n")
    with pytest.raises(ResultsError) as caught:
        read_results(path)
    assert caught.value.line == 3


@pytest.mark.parametrize(("old", "new", "line", "field", "problem"), [
    ('"makespan_s": 1e+300', '"makespan_s": NaN', 2, "makespan_s",
     "NaN is not a JSON number"),
    ('"makespan_s": 1e+300', '"makespan_s": -Infinity', 2, "makespan_s",
     "-Infinity is not a JSON number"),
    ('"makespan_s": 1e+300', '"makespan_s": 1e999', 2, "makespan_s",
     "1e999 is not a finite float64"),
    ('"seeds": [0, 1]', '"seeds": [0, Infinity]', 1, "seeds[1]",
     "Infinity is not a JSON number"),
    ('"seed": 1', f'"seed": {"9" * 5000}', 2, "seed",
     "an integer of 5000 digits overflows float64"),
])
def test_a_number_that_is_not_finite_is_named_with_its_line_and_field(
        tmp_path: Path, old: str, new: str, line: int, field: str, problem: str) -> None:
    # a float that is not finite is written as null; the JSON extensions NaN and Infinity,
    # and a literal too large for a float64, are refused instead of read as nan or inf
    text = write_results(tmp_path / "r.jsonl", HEADER, [ROW]).read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "bad.jsonl"
    path.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(ResultsError) as caught:
        read_results(path)
    assert (caught.value.line, caught.value.field) == (line, field)
    assert str(caught.value).startswith(f"{path}, line {line}, field {field!r}: {problem}")


def test_a_number_that_is_not_finite_inside_the_submission_names_its_key(
        tmp_path: Path) -> None:
    head = replace(HEADER, submission={"parameters": {"lr": 1.0, "clip": 0.2}})
    text = write_results(tmp_path / "r.jsonl", head, [ROW]).read_text(encoding="utf-8")
    path = tmp_path / "bad.jsonl"
    path.write_text(text.replace('"clip": 0.2', '"clip": NaN'), encoding="utf-8")
    with pytest.raises(ResultsError, match=r"line 1, field 'submission\.parameters\.clip': "
                                           "NaN is not a JSON number"):
        read_results(path)


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"record": "header", "entry": "caf\xe9"}\n')
    with pytest.raises(ResultsError, match="not UTF-8") as caught:
        read_results(path)
    assert caught.value.path == str(path)


def test_the_submission_object_is_optional_and_round_trips(tmp_path: Path) -> None:
    # A header without it reads as None (and is written without the key); one stated by
    # ``run --submission`` is written as given and read back equal.

    from palgym.bench.results import Header, read_results, write_results

    base = Header("s", "0" * 64, "pal", "heuristic", "pal", "0.1.0", "unknown", {"t": "h"},
                  [0], {})
    plain = write_results(tmp_path / "plain.jsonl", base, [])
    assert '"submission"' not in plain.read_text(encoding="utf-8")
    assert read_results(plain).header.submission is None
    stated = {"submitter": "me", "deterministic": True, "parameters": {"lr": 0.0003}}
    path = write_results(tmp_path / "stated.jsonl", replace(base, submission=stated), [])
    assert read_results(path).header.submission == stated


def test_mistyped_values_of_mapping_fields_are_named(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    lines[0]["env_layouts"] = {"t": 7}
    error = _refusal(tmp_path, lines)
    assert (error.line, error.field) == (1, "env_layouts.t")
    choice = {"record": "choice", "task": "t", "member": "a", "selection_split": "validation",
              "field": ["a"], "validation_geomean_avg_jct_s": {"a": "fast"}}
    error = _refusal(tmp_path, [_lines(tmp_path)[0], choice])
    assert (error.line, error.field) == (2, "validation_geomean_avg_jct_s.a")
