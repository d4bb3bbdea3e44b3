"""Hostile and careless files on the surfaces where outsiders' files enter palgym: results
files, ``--submission`` files, selector files, suites, model zips, trace CSVs and the size
arguments of the command lines. Each case ends in a clear error (exit 2 and one ``error:``
line, no traceback; ``validate``: a REJECTED line naming the file, line and field, exit 1, as
docs/BENCH.md documents), or in the documented behaviour. The bombs here are small versions of
those of ``benchmarks/hostile_files.py`` (which prints their peak memory and seconds).
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from palgym.bench.__main__ import main as bench_main
from palgym.bench.jsonlines import MAX_RESULTS_BYTES
from palgym.bench.results import (
    ResultsError,
    decode_actions,
    encode_actions,
    read_results,
    recovery_path,
    write_results_or_recover,
)
from palgym.bench.suites import DataRoots, load_suite, split_traces
from palgym.errors import ConfigError, TraceFormatError
from palgym.io.bounded import InflateLimitError, inflate
from palgym.io.strict_json import MAX_DEPTH, StrictJsonError, check_tree, loads, read_json
from tests.bench_suites import lite_data

REPO = Path(__file__).resolve().parents[1]
PAL_LITE = REPO / "benchmarks" / "leaderboard" / "palgym-bench-v1-lite" / "pal.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _zlib_zeros(size: int) -> bytes:
    """zlib of ``size`` zero bytes, compressed in 1 MiB pieces (never held whole)."""
    compressor = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [compressor.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + compressor.flush()


def _one_error(err: str, *parts: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], err


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
    bomb = _zlib_zeros(16 << 20)
    with pytest.raises(InflateLimitError):
        inflate(bomb, 1 << 20)
    assert inflate(zlib.compress(b"abc"), 3) == b"abc"
    with pytest.raises(zlib.error):
        inflate(zlib.compress(b"abc")[:-2], 100)


# ---------------------------------------------------------------- finding 1: bombs
def test_an_actions_bomb_is_refused_without_inflating_it(tmp_path: Path) -> None:
    lines = _lines(PAL_LITE)
    row = lines[1]
    assert decode_actions(row["actions"]).size == row["decisions"]
    bomb = base64.b64encode(_zlib_zeros(64 << 20)).decode("ascii")  # 64 MiB of actions
    path = _write_lines(tmp_path / "bomb.jsonl", [lines[0], {**row, "actions": bomb}])
    with pytest.raises(ResultsError) as caught:
        read_results(path)
    assert (caught.value.line, caught.value.field) == (2, "actions")
    assert f"holds more than {row['decisions']} actions" in str(caught.value)
    with pytest.raises(ValueError, match="holds more than 3 actions"):
        decode_actions(bomb, 3)


def test_actions_and_decisions_must_agree(tmp_path: Path) -> None:
    lines = _lines(PAL_LITE)
    row = lines[1]
    fewer = encode_actions(decode_actions(row["actions"])[:-1])
    path = _write_lines(tmp_path / "short.jsonl", [lines[0], {**row, "actions": fewer}])
    with pytest.raises(ResultsError, match=f"holds {row['decisions'] - 1} actions, the row's "
                                           f"decisions are {row['decisions']}"):
        read_results(path)


def test_a_repeated_row_is_refused_where_it_repeats(tmp_path: Path) -> None:
    lines = _lines(PAL_LITE)
    path = _write_lines(tmp_path / "repeated.jsonl", [lines[0], *[lines[1]] * 1000])
    row = lines[1]
    with pytest.raises(ResultsError, match=rf"line 3: episode \('{row['task']}', "
                                           rf"'{row['trace']}', {row['seed']}\) repeats line 2"):
        read_results(path)


def test_a_line_past_its_limit_is_refused(tmp_path: Path) -> None:
    from palgym.bench.jsonlines import MAX_LINE_BYTES

    lines = _lines(PAL_LITE)
    path = _write_lines(tmp_path / "long.jsonl",
                        [lines[0], {**lines[1], "member": "x" * MAX_LINE_BYTES}])
    with pytest.raises(ResultsError, match="line 2: a line longer than the limit of 4 MiB"):
        read_results(path)


def test_a_results_file_past_its_limit_is_refused_by_validate_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(PAL_LITE.read_bytes())
    with big.open("r+b") as handle:  # sparse beyond the committed lines
        handle.truncate(MAX_RESULTS_BYTES + 1)
    assert bench_main(["validate", str(big)]) == 1
    out = capsys.readouterr().out
    assert f"REJECTED {big}" in out and "larger than the limit of 16 MiB for a results file; "\
        "--allow-large lifts the limit" in out


def _model_zip(path: Path, data_size: int) -> Path:
    """A zip like SB3's whose ``data`` entry holds ``data_size`` zero bytes (streamed in)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("data", "w") as entry:
            chunk = bytes(1 << 20)
            for _ in range(data_size >> 20):
                entry.write(chunk)
        archive.writestr("policy.pth", b"x")
    path.write_bytes(buffer.getvalue())
    return path


def _lying_zip(path: Path, data_size: int, declared: int) -> Path:
    """A zip whose ``data`` entry inflates to ``data_size`` bytes but declares ``declared``
    (its local and central headers patched)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data", bytes(data_size))
    raw = bytearray(buffer.getvalue())
    assert raw[:4] == b"PK\x03\x04"
    central = raw.index(b"PK\x01\x02")
    for offset in (22, central + 24):  # the uncompressed size of each header
        assert int.from_bytes(raw[offset:offset + 4], "little") == data_size
        raw[offset:offset + 4] = declared.to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    return path


def test_a_model_zip_bomb_is_refused_from_its_declared_size(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.model_zip import read_model_zip

    bomb = _model_zip(tmp_path / "bomb.zip", 80 << 20)  # past the 64 MiB ceiling of data
    with pytest.raises(ConfigError, match=r"entry 'data' declares 83886080 bytes, past its "
                                          r"ceiling of 67108864 bytes .*PALGYM_ALLOW_LARGE"):
        read_model_zip(bomb)


def test_evaluate_refuses_a_model_zip_bomb_with_one_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from tests.test_bad_input_cli import load_script

    bomb = _model_zip(tmp_path / "bomb.zip", 80 << 20)
    evaluate = load_script("evaluate")
    assert evaluate.main(["--agent", str(bomb), "--trace", "sia-philly-gen-0", "--window",
                          "10"]) == 2
    _one_error(capsys.readouterr().err, str(bomb), "entry 'data' declares 83886080 bytes")


def test_a_model_zip_of_many_entries_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.model_zip import read_model_zip

    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for index in range(65):
            archive.writestr(f"entry{index}", b"")
    with pytest.raises(ConfigError, match="65 entries, more than 64"):
        read_model_zip(path)


def test_a_model_zip_that_lies_about_its_size_is_refused_while_streaming(
        tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.model_zip import read_model_zip

    liar = _lying_zip(tmp_path / "liar.zip", 16 << 20, declared=1000)
    with zipfile.ZipFile(liar) as archive:
        assert archive.getinfo("data").file_size == 1000  # the lie passes the declared check
    with pytest.raises(ConfigError, match="is not a stable-baselines3 model zip: Bad CRC-32"):
        read_model_zip(liar)


# ---------------------------------------------------------------- finding 2: NaN, lost runs
def _submission(**changes: Any) -> dict[str, Any]:
    return {"submitter": "A <a@example.org>", "env_modified": False, "env_modifications": "",
            "parameters": {"lr": 0.001}, "parameters_tried": {}, "selection_data": {},
            "training_traces": [], "training_env_steps": 0, "training_wall_time_s": 0.0,
            "deterministic": True, "hardware": "x", "model": "y", **changes}


def test_a_nan_in_the_submission_is_refused_before_any_episode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import agents.bench.runner as runner

    def no_episode(*_: Any) -> Any:
        raise AssertionError("an episode ran")

    monkeypatch.setattr(runner, "run_entry", no_episode)
    text = json.dumps(_submission()).replace('"lr": 0.001', '"lr": NaN')
    submission = tmp_path / "s.json"
    submission.write_text(text)
    output = tmp_path / "out.jsonl"
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                       str(output), "--submission", str(submission)]) == 2
    _one_error(capsys.readouterr().err, str(submission), "field 'parameters.lr'",
               "NaN is not a JSON number")
    assert not output.exists()


def test_rows_that_cannot_be_written_go_to_a_recovery_file(tmp_path: Path) -> None:
    from palgym.bench.results import Header, read_results

    read = read_results(PAL_LITE)
    rows = [row for _, row in read.episodes]
    bad = Header(**{**read.header.__dict__, "submission": {"x": float("nan")}})
    output = tmp_path / "out.jsonl"
    with pytest.raises(ConfigError) as caught:
        write_results_or_recover(output, bad, rows)
    recovery = recovery_path(output)
    assert f"the {len(rows)} rows computed are in the recovery file {recovery}" in str(
        caught.value)
    assert not output.exists()
    kept = recovery.read_text().splitlines()
    assert len(kept) == 1 + len(rows) and json.loads(kept[1])["seed"] == rows[0].seed
    # a destination that cannot be written (its folder is a file): the rows are kept too
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="recovery file"):
        write_results_or_recover(blocker / "out.jsonl", read.header, rows)


# ---------------------------------------------------------------- finding 3: deep nesting
def test_deep_nesting_in_a_results_file_is_a_rejection(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1" in out and f"nested deeper than {MAX_DEPTH}" in out


def test_deep_nesting_in_a_submission_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    submission = tmp_path / "s.json"
    submission.write_text('{"parameters": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                       str(tmp_path / "o.jsonl"), "--submission", str(submission)]) == 2
    _one_error(capsys.readouterr().err, str(submission), "nested deeper")


# ---------------------------------------------------------------- finding 4: selector weights
def _selector(tmp_path: Path, weight: str) -> Path:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.selection.selector import LinearSelector

    rules = ["fifo/pal", "srtf/pal+backfill"]
    path = LinearSelector.constant(rules).save(tmp_path / "sel.json")
    data = json.loads(path.read_text())
    text = json.dumps({**data, "weights": [[0.0] * len(data["weights"][0])] * 2})
    path.write_text(text.replace("0.0", weight, 1))
    return path


@pytest.mark.parametrize(("weight", "why"), [
    ("9" * 400, "an integer of 400 digits overflows float64"),
    ("1e308", "must be within [-1e+12, 1e+12], got 1e+308"),
    ("-1e308", "must be within [-1e+12, 1e+12], got -1e+308"),
    ('"1.0"', "must be a number, got the string '1.0'"),
    ("true", "must be a number, got the boolean true"),
    ("[" * 10_000 + "]" * 10_000, "nested deeper"),
])
def test_selector_weights_are_strict(tmp_path: Path, weight: str, why: str) -> None:
    from agents.selection.selector import LinearSelector

    path = _selector(tmp_path, weight)
    with pytest.raises(ConfigError) as caught:
        LinearSelector.load(path)
    assert str(path) in str(caught.value) and why in str(caught.value)
    if "nested" not in why:
        assert "field 'weights[0][0]'" in str(caught.value)


def test_a_bad_selector_file_ends_bench_run_with_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _selector(tmp_path, "true")
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", f"selector:{path}",
                       "--tasks", "scheduling-clairvoyant", "--output",
                       str(tmp_path / "o.jsonl")]) == 2
    _one_error(capsys.readouterr().err, str(path), "weights[0][0]", "boolean true")


# ---------------------------------------------------------------- finding 6: header vs rows
def test_validate_rejects_a_header_whose_seeds_contradict_its_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(PAL_LITE)
    seeds = sorted({line["seed"] for line in lines[1:]})
    assert seeds == [0, 1]
    path = _write_lines(tmp_path / "seeds.jsonl", [{**lines[0], "seeds": [0]}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1, field 'seeds': expected [0, 1], found [0]" in out


@pytest.mark.parametrize("kwargs", [{"max_tiers": 10**9}, {"num_slots": 10**9},
                                    {"num_slots": 1024, "max_tiers": 1024}])
def test_a_member_cannot_make_validate_build_a_huge_env(
        tmp_path: Path, kwargs: dict[str, int], capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(PAL_LITE)
    members = json.loads(json.dumps(lines[0]["members"]))
    members["placement-default"]["pal"]["env_kwargs"] = kwargs
    path = _write_lines(tmp_path / "huge.jsonl", [{**lines[0], "members": members}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "field 'members.placement-default.pal.env_kwargs'" in out and "at most" in out


def test_validate_builds_no_env_per_member_of_a_flood(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(PAL_LITE)
    members = json.loads(json.dumps(lines[0]["members"]))
    one = members["placement-default"]["pal"]
    members["placement-default"] = {f"m{i}": one for i in range(20_000)}  # under 4 MiB
    path = _write_lines(tmp_path / "flood.jsonl", [{**lines[0], "members": members},
                                                   *lines[1:]])
    field = len(load_suite("palgym-bench-v1-lite").task("placement-default").heuristic_field)
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"field 'members.placement-default': expected 'at most {field} members" in out


def test_validate_rejects_a_header_whose_members_name_other_tasks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(PAL_LITE)
    members = {k: v for k, v in lines[0]["members"].items() if k != "cross-cluster"}
    path = _write_lines(tmp_path / "tasks.jsonl",
                        [{**lines[0], "members": members}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    assert f"{path}, line 1, field 'members'" in capsys.readouterr().out


# ---------------------------------------------------------------- finding 7: suite paths
def _suite(tmp_path: Path, **changes: Any) -> Path:
    import yaml

    data = lite_data()
    for key, value in changes.items():
        data[key] = value
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("bad", ["../../../../etc/passwd", "/etc/passwd", "traces/../../x",
                                 "traces\\..\\x"])
def test_a_suite_path_outside_its_folder_is_refused_when_listed(
        tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    files = lite_data()["files"]
    first = next(iter(files))
    path = _suite(tmp_path, files={**files, first: {**files[first], "path": bad}})
    assert bench_main(["list", "--suite", str(path)]) == 2
    _one_error(capsys.readouterr().err, str(path), f"files.{first}.path",
               "must be a relative path inside the source's folder")


def test_a_link_out_of_the_cache_is_refused(tmp_path: Path) -> None:
    suite = load_suite("palgym-bench-v1-lite")
    generated = next(f for f in suite.files.values() if f.source == "generated")
    cache = tmp_path / "cache"
    (cache / generated.path).parent.mkdir(parents=True)
    (cache / generated.path).symlink_to("/etc/passwd")
    with pytest.raises(ConfigError, match="outside its generated folder"):
        DataRoots(None, cache).path(generated)


# ---------------------------------------------------------------- finding 8: silent cases
def test_a_suite_window_past_the_limit_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = lite_data()
    tasks = [{**data["tasks"][0], "world": {**data["tasks"][0]["world"],
                                            "window": 1_000_000_000}}]
    path = _suite(tmp_path, tasks=tasks)
    assert bench_main(["list", "--suite", str(path)]) == 2
    _one_error(capsys.readouterr().err, "tasks[0].world.window", "at most 1000000 jobs")


@pytest.mark.parametrize(("cluster", "why"), [("100000x1000", "at most 100000 GPUs"),
                                               ("16 by 4", "must look like '16x4'")])
def test_a_suite_cluster_is_bounded(tmp_path: Path, cluster: str, why: str) -> None:
    data = lite_data()
    tasks = [{**data["tasks"][0], "world": {**data["tasks"][0]["world"], "cluster": cluster}}]
    with pytest.raises(ConfigError, match=why):
        load_suite(_suite(tmp_path, tasks=tasks))


def test_a_window_larger_than_a_trace_is_refused_not_run_whole(tmp_path: Path) -> None:
    data = lite_data()
    tasks = [{**data["tasks"][0], "world": {**data["tasks"][0]["world"], "window": 161}}]
    suite = load_suite(_suite(tmp_path, tasks=tasks))
    task = suite.tasks[0]
    # the bundled test trace sia-philly-gen-4 has 160 jobs (palgym/data/README.md)
    with pytest.raises(ConfigError, match=r"a window of 161 jobs is larger than trace "
                                          r"'sia-philly-gen-4' of split test \(160 jobs\)"):
        split_traces(suite, task, "test", DataRoots())


def test_bench_run_refuses_a_negative_thread_count(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                    "o.jsonl", "--num-threads", "-3"])
    assert caught.value.code == 2
    assert "--num-threads: must be an integer >= 0, got '-3'" in capsys.readouterr().err


@pytest.mark.parametrize("workers", ["0", "100000"])
def test_bench_run_bounds_its_local_processes(workers: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", "pal", "--output",
                       "never.jsonl", "--workers", workers]) == 2
    _one_error(capsys.readouterr().err, "--workers must be in [1, 256]", workers)
    assert not Path("never.jsonl").exists()


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


# ---------------------------------------------------------------- finding 5: traces sizes
@pytest.mark.parametrize(("argv", "message"), [
    (["model-profile", "--num-gpus", "1000000000"],
     "--num-gpus 1000000000 is larger than the limit of 100000; --allow-large allows up to "
     "100000000"),
    (["generate", "--num-jobs", "100000000000"],
     "--num-jobs 100000000000 is larger than the limit of 1000000; --allow-large allows up to "
     "1000000000"),
    (["generate", "--num-jobs", "0"], "--num-jobs must be >= 1, got 0"),
    (["generate", "--num-jobs", "100000000000", "--allow-large"],
     "--num-jobs 100000000000 is larger than the limit of 1000000000"),
])
def test_traces_sizes_are_bounded(tmp_path: Path, argv: list[str], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    from traces.__main__ import main as traces_main

    output = tmp_path / "out.csv"
    assert traces_main([*argv, "--output", str(output)]) == 2
    _one_error(capsys.readouterr().err, message)
    assert not output.exists()


# ---------------------------------------------------------------- finding 10: variables
def test_the_selector_cli_reads_the_cache_variable(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import agents.selection.cli as cli

    seen: dict[str, Any] = {}

    def episodes(split: str, **kwargs: Any) -> list[Any]:
        seen.update(kwargs)
        return []

    monkeypatch.setattr(cli, "split_episodes", episodes)
    monkeypatch.setenv("PALGYM_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PALGYM_DATA_DIR", str(tmp_path / "data"))
    args = cli.build_parser().parse_args(["train", "--output", str(tmp_path / "s.json")])
    cli._episodes(args, "train")
    assert (seen["cache_dir"], seen["data_dir"]) == (tmp_path / "cache", tmp_path / "data")
    args = cli.build_parser().parse_args(["train", "--output", "s.json", "--cache", "c"])
    cli._episodes(args, "train")
    assert seen["cache_dir"] == Path("c")


# ---------------------------------------------------------------- finding 8: more silent cases
def test_selector_training_refuses_a_task_bench_run_refuses(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.selection.cli import main as selector_main

    assert selector_main(["train", "--suite", "palgym-bench-v1-lite", "--task",
                          "placement-default", "--output", "never.json"]) == 2
    _one_error(capsys.readouterr().err, "train --task placement-default",
               "fixes queue order 'fifo' (regime fixed)")
    assert not Path("never.json").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--confidence", "1.5"], "--confidence must be a number in (0, 1), got '1.5'"),
    (["--confidence", "nan"], "--confidence must be a number in (0, 1), got 'nan'"),
    (["--bootstrap-resamples", "0"], "--bootstrap-resamples must be a positive integer, "
                                     "got '0'"),
])
def test_evaluate_refuses_bootstrap_settings_whatever_runs(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from tests.test_bad_input_cli import load_script

    evaluate = load_script("evaluate")
    with pytest.raises(SystemExit) as caught:
        evaluate.main(["--policy", "pal", "--trace", "sia-philly-gen-0", *argv])
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- finding 9: run folders
def test_a_claimed_run_folder_is_marked_running_and_refused_by_the_loader(
        tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.sb3.learned import model_path
    from agents.sb3.runs import claim_run_dir

    run = claim_run_dir(tmp_path, "palgym/PALPlacement-v0", "maskable_ppo")
    assert (run / "RUNNING").is_file()  # what kill -9 leaves behind
    with pytest.raises(ConfigError, match=r"incomplete run folder, no model.zip: the run is "
                                          r"still running or was killed"):
        model_path(run)


def test_sigterm_marks_the_run_interrupted(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import os
    import signal

    import agents.sb3.training as training
    from agents.sb3.learned import model_path

    def terminated(*_args: object) -> bool:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(training, "learn", terminated)
    settings = training.TrainSettings(trace="sia-philly-gen-0", window=10, n_timesteps=64,
                                      eval_freq=0, references=(), verbose=0,
                                      log_folder=str(tmp_path / "runs"),
                                      hyperparams={"n_steps": 32, "batch_size": 32})
    with pytest.raises(KeyboardInterrupt):
        training.train(settings)
    run = tmp_path / "runs" / "palgym_PALPlacement-v0_maskable_ppo_0"
    marker = (run / "INTERRUPTED").read_text()
    assert marker.startswith("interrupted (signal SIGTERM); no model.zip was written")
    assert not (run / "RUNNING").exists() and not (run / "model.zip").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler was restored
    with pytest.raises(ConfigError, match="the run was interrupted"):
        model_path(run)


def test_validate_never_reads_a_suite_path_a_header_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(PAL_LITE)
    suite = tmp_path / "evil.yaml"
    suite.write_text((REPO / "palgym" / "bench" / "suites" / "palgym-bench-v1-lite.yaml")
                     .read_text())
    path = _write_lines(tmp_path / "r.jsonl", [{**lines[0], "suite": str(suite)}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1, field 'suite': expected \"one of the committed suites" in out


@pytest.mark.parametrize(("command", "why"), [
    ("python -m traces bundle --output-dir /tmp/x", "must run one of"),
    ("python -m traces generate --num-jobs 10 --output /etc/x", "must not give --output"),
])
def test_a_suite_command_writes_only_its_own_file(tmp_path: Path, command: str,
                                                  why: str) -> None:
    files = lite_data()["files"]
    first = next(k for k, v in files.items() if v["source"] == "generated")
    path = _suite(tmp_path, files={**files, first: {**files[first], "command": command}})
    with pytest.raises(ConfigError, match=why):
        load_suite(path)


def test_a_finished_run_leaves_no_marker_and_ctrl_c_in_training_marks_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    import agents.sb3.training as training
    from agents.sb3.learned import model_path

    settings = training.TrainSettings(trace="sia-philly-gen-0", window=10, n_timesteps=64,
                                      eval_freq=0, references=(), verbose=0,
                                      log_folder=str(tmp_path / "runs"),
                                      hyperparams={"n_steps": 32, "batch_size": 32})
    monkeypatch.setattr(training, "learn", lambda *_: False)  # finished
    first = training.train(settings).run_dir
    assert (first / "model.zip").is_file()
    assert [p.name for p in first.iterdir() if p.name.isupper()] == []
    monkeypatch.setattr(training, "learn", lambda *_: True)  # Ctrl-C inside the loop
    second = training.train(settings).run_dir
    assert (second / "model.zip").is_file() and not (second / "RUNNING").exists()
    assert (second / "INTERRUPTED").read_text().startswith("interrupted at 0 of 64 timesteps")
    assert model_path(second) == second / "model.zip"  # loaded, with a warning


# ---------------------------------------------------------------- names that would import code
def _trap(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module ``trapmod`` on the path that leaves ``imported`` in ``folder`` when imported."""
    marker = folder / "imported"
    (folder / "trapmod.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                       "class X:\n    pass\n")
    monkeypatch.syspath_prepend(str(folder))
    return marker


def test_validate_imports_no_module_a_header_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    marker = _trap(tmp_path, monkeypatch)
    lines = [line for line in _lines(PAL_LITE)
             if line.get("task", "scheduling-clairvoyant") == "scheduling-clairvoyant"]
    header = lines[0]
    members = {"scheduling-clairvoyant": json.loads(json.dumps(
        header["members"]["scheduling-clairvoyant"]))}
    members["scheduling-clairvoyant"]["pal"]["env_kwargs"]["queue_order"] = "trapmod:X"
    path = _write_lines(tmp_path / "trap.jsonl", [
        {**header, "members": members,
         "env_layouts": {"scheduling-clairvoyant": header["env_layouts"][
             "scheduling-clairvoyant"]}}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "module 'trapmod' not imported: validate imports no module a results file names" \
        in out and "field 'members.scheduling-clairvoyant.pal.env_kwargs'" in out
    assert not marker.exists()


def test_a_selector_file_imports_no_module_without_trust(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra is not installed")
    from agents.selection.selector import LinearSelector

    marker = _trap(tmp_path, monkeypatch)
    path = LinearSelector.constant(["fifo/pal", "srtf/pal+backfill"]).save(tmp_path / "s.json")
    path.write_text(path.read_text().replace('"srtf/pal+backfill"', '"srtf/trapmod:X"'))
    assert bench_main(["run", "--suite", "palgym-bench-v1-lite", "--agent", f"selector:{path}",
                       "--tasks", "scheduling-clairvoyant", "--output",
                       str(tmp_path / "o.jsonl")]) == 2
    _one_error(capsys.readouterr().err, "module 'trapmod' not imported", "--trust-model")
    assert not marker.exists()
