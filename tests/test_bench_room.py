"""The room in palgym-bench: aging guards as field members (run on the engine, recorded,
replayed), the ``best-known`` and ``lower-bound`` reference entries, and the leaderboard's
*gap closed* column."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from palgym.bench.entries import entry_kind, entry_name
from palgym.bench.leaderboard_page import gap_text
from palgym.bench.leaderboard_tables import gap_closed
from palgym.bench.reference_entry import DEFAULT_EVALUATIONS, best_known_options, evaluations_of
from palgym.bench.results import BOUND_SCHEMA, SCHEDULE_SCHEMA, read_results
from palgym.errors import ConfigError
from tests.bench_suites import tiny_suite
from tests.room_support import Room, jcts, problems, rows

TASK = "scheduling-clairvoyant"
GUARD = "srtf/pal+backfill+age=8h:fifo/pal+easy"
FIELD = ["srtf/pal+backfill", "fifo/pal+easy", GUARD]
ROOM = Room("room", lambda folder: tiny_suite(folder, [TASK, "placement-default"], window=12,
                                             seeds=(0, 1), fields={TASK: FIELD}),
            tasks=(TASK,), best_known="best-known:evaluations=20")
suite, folder, field, best_known, bound = ROOM.fixtures()


def test_spec_kinds_and_names() -> None:
    assert entry_kind(GUARD) == "heuristic"  # a guard's ':' is not MODULE:CLASS
    assert entry_kind("tests.node_fastest:NodeFastest") == "module"
    assert entry_kind("best-known") == "best-known"
    assert entry_kind("best-known:evaluations=7") == "best-known"
    assert entry_kind("lower-bound") == "lower-bound"
    assert entry_name("best-known:evaluations=7", "best-known") == "best-known"
    assert evaluations_of("best-known:evaluations=7") == 7
    for bad in ("best-known:evaluations=0", "best-known:budget=3", "best-known:evaluations="):
        with pytest.raises(ConfigError, match="best-known:evaluations=N"):
            evaluations_of(bad)


def test_a_guard_in_the_field_is_recorded_and_replays(suite: Path, field: Path) -> None:
    results = read_results(field)
    assert results.header.schema == SCHEDULE_SCHEMA
    members = results.header.members[TASK]
    assert members[GUARD]["schedule"]["placement"] == GUARD.split("/", 1)[1]
    assert members[GUARD]["schedule"]["queue_order"] == "srtf"
    assert "schedule" not in members["srtf/pal+backfill"]
    assert problems(field, suite) == []


def test_a_guard_as_the_entry_replays(suite: Path, folder: Path, field: Path) -> None:
    path = ROOM.run(suite, GUARD, folder / "guard.jsonl")
    assert read_results(path).header.entry_kind == "heuristic"
    assert problems(path, suite) == []
    # the same episodes as the guard's field rows (one engine run per episode)
    assert jcts(path) == jcts(field, GUARD)


def test_best_known_is_no_worse_than_any_field_member_and_replays(
        suite: Path, field: Path, best_known: Path) -> None:
    known = jcts(best_known)
    assert len(known) == 2
    for member in FIELD:
        for key, value in jcts(field, member).items():
            assert known[key] <= value + 1e-9, (member, key)
    results = read_results(best_known)
    assert results.header.entry_kind == "best-known"
    assert results.header.members[TASK]["best-known"]["schedule"]["placement"] == "best-known"
    assert problems(best_known, suite) == []


def test_the_lower_bound_is_below_best_known_and_replays(suite: Path, best_known: Path,
                                                         bound: Path) -> None:
    known, low = jcts(best_known), jcts(bound)
    assert low.keys() == known.keys()
    assert all(0 < low[k] <= known[k] for k in low)
    results = read_results(bound)
    assert results.header.schema == BOUND_SCHEMA
    assert all(row.decisions == 0 and row.p99_jct_s is None for _, row in results.episodes)
    assert problems(bound, suite) == []


def test_a_tampered_bound_is_refused(suite: Path, bound: Path, tmp_path: Path) -> None:
    lines = bound.read_text().splitlines()
    row = json.loads(lines[1])
    row["avg_jct_s"] *= 0.9  # a bound that claims more room than there is
    lines[1] = json.dumps(row)
    path = tmp_path / "lower-bound.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found = problems(path, suite)
    assert found and any("avg_jct_s" in str(p) for p in found)


def test_gap_closed_by_hand() -> None:
    # best-known 0.9x the best: an entry at 0.95x takes half the room, 1.02x is behind
    assert gap_closed(0.95, 0.9) == pytest.approx(0.5)
    assert gap_closed(0.9, 0.9) == pytest.approx(1.0)
    assert gap_closed(1.02, 0.9) == pytest.approx(-0.2)
    assert gap_closed(0.95, 1.0) is None  # no room found: undefined
    assert gap_closed(math.inf, 0.9) is None


def test_gap_text_never_shows_a_negative_zero() -> None:
    # best-known 0.9x: an entry at 1.0004x is -0.004 of the room, which rounds to zero
    assert gap_text(gap_closed(1.0004, 0.9)) == "0.00"
    assert gap_text(gap_closed(1.02, 0.9)) == "-0.20"
    assert gap_text(gap_closed(0.95, 0.9)) == "0.50"
    assert gap_text(None) == "–"


def test_best_known_with_workers_writes_the_serial_rows(suite: Path, best_known: Path,
                                                        tmp_path: Path) -> None:
    path = ROOM.run(suite, ROOM.best_known, tmp_path / "bk.jsonl", workers=2)
    fields = ("trace", "seed", "avg_jct_s", "actions", "episode_hash")
    assert rows(path, *fields) == rows(best_known, *fields)


CANDIDATES = ("agents.priority.pretrained:ResponseRatioA3/pal+backfill+age=8h:fifo/pal+easy",
              "srsf/pal+backfill")


def test_best_known_options_parse_and_refuse() -> None:
    spec = f"best-known:evaluations=5,candidates={'|'.join(CANDIDATES)}"
    assert best_known_options(spec) == (5, CANDIDATES)
    assert best_known_options("best-known:candidates=fifo/pal") == (DEFAULT_EVALUATIONS,
                                                                    ("fifo/pal",))
    for bad in ("best-known:candidates=", "best-known:candidates=a||b",
                "best-known:evaluations=2,evaluations=3", "best-known:evaluations=2,x"):
        with pytest.raises(ConfigError, match="candidates=NAME"):
            best_known_options(bad)


def test_candidates_join_best_known_on_a_free_task_only(suite: Path, best_known: Path,
                                                        tmp_path: Path) -> None:
    # with candidates, each free-task row is the lower of the row without them and the
    # candidates' own runs (ties keep the earlier schedule); the placement task's rows, whose
    # queue order is fixed, are those of a run without candidates
    spec = f"best-known:evaluations=20,candidates={'|'.join(CANDIDATES)}"
    both = ROOM.run(suite, spec, tmp_path / "with.jsonl", (TASK, "placement-default"))
    alone = ROOM.run(suite, "best-known:evaluations=20", tmp_path / "without.jsonl",
                     ("placement-default",))
    runs = [jcts(ROOM.run(suite, c, tmp_path / f"c{i}.jsonl")) for i, c in enumerate(CANDIDATES)]
    before, after = jcts(best_known), jcts(both)
    for key, value in before.items():
        assert after[key] == min([value, *(run[key] for run in runs)]), key
    # on this uncontended 12-job window every candidate ties the field's best, so the earlier
    # schedule is kept: the rows are those without candidates, decisions included
    fields = ("trace", "seed", "avg_jct_s", "actions")
    assert rows(both, *fields, task=TASK) == rows(best_known, *fields)
    assert rows(both, *fields, task="placement-default") == rows(alone, *fields)
    assert problems(both, suite) == []
    assert read_results(both).header.entry_spec == spec
