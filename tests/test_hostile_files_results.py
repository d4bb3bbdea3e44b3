"""Hostile and careless results files: an actions bomb, actions that disagree with the row's
decisions, a repeated row, lines and files past their limits, nesting past its depth, a header
whose seeds, members or tasks contradict its rows or the suite, a header naming a suite path or a
module to import; and rows that cannot be written go to a recovery file. ``validate`` answers
each with a REJECTED line naming the file, line and field (exit 1, as docs/BENCH.md documents),
the reader with an error naming them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

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
from palgym.bench.suites import load_suite
from palgym.errors import ConfigError
from palgym.io.strict_json import MAX_DEPTH
from tests.hostile import (
    PAL_LITE,
    REPO,
    lines_of,
    trap_module,
    write_lines,
    zlib_zeros,
)


# ---------------------------------------------------------------- the reader and the writer
def test_an_actions_bomb_is_refused_without_inflating_it(tmp_path: Path) -> None:
    lines = lines_of(PAL_LITE)
    row = lines[1]
    assert decode_actions(row["actions"]).size == row["decisions"]
    bomb = base64.b64encode(zlib_zeros(64 << 20)).decode("ascii")  # 64 MiB of actions
    path = write_lines(tmp_path / "bomb.jsonl", [lines[0], {**row, "actions": bomb}])
    with pytest.raises(ResultsError) as caught:
        read_results(path)
    assert (caught.value.line, caught.value.field) == (2, "actions")
    assert f"holds more than {row['decisions']} actions" in str(caught.value)
    with pytest.raises(ValueError, match="holds more than 3 actions"):
        decode_actions(bomb, 3)


def test_actions_and_decisions_must_agree(tmp_path: Path) -> None:
    lines = lines_of(PAL_LITE)
    row = lines[1]
    fewer = encode_actions(decode_actions(row["actions"])[:-1])
    path = write_lines(tmp_path / "short.jsonl", [lines[0], {**row, "actions": fewer}])
    with pytest.raises(ResultsError, match=f"holds {row['decisions'] - 1} actions, the row's "
                                           f"decisions are {row['decisions']}"):
        read_results(path)


def test_a_repeated_row_is_refused_where_it_repeats(tmp_path: Path) -> None:
    lines = lines_of(PAL_LITE)
    path = write_lines(tmp_path / "repeated.jsonl", [lines[0], *[lines[1]] * 1000])
    row = lines[1]
    with pytest.raises(ResultsError, match=rf"line 3: episode \('{row['task']}', "
                                           rf"'{row['trace']}', {row['seed']}\) repeats line 2"):
        read_results(path)


def test_a_line_past_its_limit_is_refused(tmp_path: Path) -> None:
    from palgym.bench.jsonlines import MAX_LINE_BYTES

    lines = lines_of(PAL_LITE)
    path = write_lines(tmp_path / "long.jsonl",
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


# ---------------------------------------------------------------- validate
def test_deep_nesting_in_a_results_file_is_a_rejection(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1" in out and f"nested deeper than {MAX_DEPTH}" in out


def test_validate_rejects_a_header_whose_seeds_contradict_its_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of(PAL_LITE)
    seeds = sorted({line["seed"] for line in lines[1:]})
    assert seeds == [0, 1]
    path = write_lines(tmp_path / "seeds.jsonl", [{**lines[0], "seeds": [0]}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1, field 'seeds': expected [0, 1], found [0]" in out


@pytest.mark.parametrize("kwargs", [{"max_tiers": 10**9}, {"num_slots": 10**9},
                                    {"num_slots": 1024, "max_tiers": 1024}])
def test_a_member_cannot_make_validate_build_a_huge_env(
        tmp_path: Path, kwargs: dict[str, int], capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of(PAL_LITE)
    members = json.loads(json.dumps(lines[0]["members"]))
    members["placement-default"]["pal"]["env_kwargs"] = kwargs
    path = write_lines(tmp_path / "huge.jsonl", [{**lines[0], "members": members}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "field 'members.placement-default.pal.env_kwargs'" in out and "at most" in out


def test_validate_builds_no_env_per_member_of_a_flood(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of(PAL_LITE)
    members = json.loads(json.dumps(lines[0]["members"]))
    one = members["placement-default"]["pal"]
    members["placement-default"] = {f"m{i}": one for i in range(20_000)}  # under 4 MiB
    path = write_lines(tmp_path / "flood.jsonl", [{**lines[0], "members": members},
                                                   *lines[1:]])
    field = len(load_suite("palgym-bench-v1-lite").task("placement-default").heuristic_field)
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"field 'members.placement-default': expected 'at most {field} members" in out


def test_validate_rejects_a_header_whose_members_name_other_tasks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of(PAL_LITE)
    members = {k: v for k, v in lines[0]["members"].items() if k != "cross-cluster"}
    path = write_lines(tmp_path / "tasks.jsonl",
                        [{**lines[0], "members": members}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    assert f"{path}, line 1, field 'members'" in capsys.readouterr().out


def test_validate_never_reads_a_suite_path_a_header_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = lines_of(PAL_LITE)
    suite = tmp_path / "evil.yaml"
    suite.write_text((REPO / "palgym" / "bench" / "suites" / "palgym-bench-v1-lite.yaml")
                     .read_text())
    path = write_lines(tmp_path / "r.jsonl", [{**lines[0], "suite": str(suite)}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1, field 'suite': expected \"one of the committed suites" in out


def test_validate_imports_no_module_a_header_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    marker = trap_module(tmp_path, monkeypatch)
    lines = [line for line in lines_of(PAL_LITE)
             if line.get("task", "scheduling-clairvoyant") == "scheduling-clairvoyant"]
    header = lines[0]
    members = {"scheduling-clairvoyant": json.loads(json.dumps(
        header["members"]["scheduling-clairvoyant"]))}
    members["scheduling-clairvoyant"]["pal"]["env_kwargs"]["queue_order"] = "trapmod:X"
    path = write_lines(tmp_path / "trap.jsonl", [
        {**header, "members": members,
         "env_layouts": {"scheduling-clairvoyant": header["env_layouts"][
             "scheduling-clairvoyant"]}}, *lines[1:]])
    assert bench_main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "module 'trapmod' not imported: validate imports no module a results file names" \
        in out and "field 'members.scheduling-clairvoyant.pal.env_kwargs'" in out
    assert not marker.exists()
