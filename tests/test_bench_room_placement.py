"""The room's reference entries on the fixed-order (placement) tasks and on Ray: ``best-known``
searches placements only (the task's FIFO fixes the order), ``lower-bound`` bounds every
schedule of a static world, both run in the dynamic world (a world with drift is refused by
the bound), and ``--ray`` gives the serial rows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from agents.bench.runner import plan_entry
from palgym.bench.entries import RunRequest
from palgym.bench.reference_entry import DYNAMIC_PLACEMENT_SEARCH, PLACEMENT_SEARCH, _groups
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots
from palgym.errors import ConfigError
from palgym.headroom.search import TRUE_SPEEDS
from palgym.schedule_record import ScheduleRecord, replay_schedule
from tests.bench_suites import tiny_suite
from tests.room_support import Room, jcts, problems, rows

PLACEMENT = ("placement-default", "placement-pal-artifact")
SCHEDULING = "scheduling-clairvoyant"
DYNAMIC = "dynamic-online"
FIELD = ("pal", "pm-first", "packed-sticky", "packed-non-sticky", "random-sticky",
         "random-non-sticky")


ROOM = Room("room-placement",
            lambda folder: tiny_suite(folder, [*PLACEMENT, SCHEDULING, DYNAMIC], window=12,
                                      seeds=(0, 1),
                                      fields={SCHEDULING: ["srtf/pal+backfill", "fifo/pal+easy"],
                                              **{name: list(FIELD) for name in PLACEMENT}}),
            tasks=PLACEMENT)
suite, folder, field, best_known, bound = ROOM.fixtures()


def test_the_placement_search_decides_on_the_true_speeds_without_backfilling() -> None:
    assert all(p.endswith(TRUE_SPEEDS) and "+" not in p for p in PLACEMENT_SEARCH)


def test_best_known_is_no_worse_than_any_field_member_and_replays(
        suite: Path, field: Path, best_known: Path) -> None:
    known = jcts(best_known)
    assert len(known) == 2 * 2  # two tasks x one test trace x two seeds
    for member in FIELD:
        member_jcts = jcts(field, member)
        assert member_jcts.keys() == known.keys()
        for key, value in member_jcts.items():
            assert known[key] <= value * (1 + 1e-12), (member, key)
    results = read_results(best_known)
    for task in PLACEMENT:
        schedule = results.header.members[task]["best-known"]["schedule"]
        assert schedule == {"format": "palgym-schedule/1", "placement": "best-known",
                            "queue_order": "fifo"}  # the task's own order: placement only
    assert problems(best_known, suite) == []


def test_a_best_known_schedule_keeps_the_fifo_order(suite: Path, best_known: Path) -> None:
    # FIFO without backfilling never lets a job start before one submitted earlier: the
    # first starts, in submit order, never go down
    from palgym.bench.entries import resolve_splits
    from palgym.bench.results import decode_actions
    from palgym.bench.suites import load_suite

    loaded = load_suite(suite)
    checked = 0
    for _, row in read_results(best_known).episodes:
        task = loaded.task(row.task)
        split = resolve_splits(loaded, [task], ["test"], DataRoots())[(task.name, "test")]
        env = split.make_env()
        try:
            [(episode, _)] = [(e, d) for e, d in split.episodes(env, [0])
                              if e.episode_hash() == row.episode_hash]
        finally:
            env.close()
        record = ScheduleRecord.from_ints(decode_actions(row.actions))
        result = replay_schedule(episode, record)
        submit = episode.trace.submit_time_s
        order = np.lexsort((np.arange(submit.size), submit))
        starts = result.records.first_start_time_s[order]
        assert not np.isnan(starts).any()
        assert np.all(np.diff(starts) >= 0), (row.task, row.seed)
        checked += 1
    assert checked == 4


def test_the_bound_is_below_every_schedule_and_replays(suite: Path, field: Path,
                                                       best_known: Path, bound: Path) -> None:
    low, known = jcts(bound), jcts(best_known)
    assert low.keys() == known.keys()
    for key, value in low.items():
        assert 0 < value <= known[key] * (1 + 1e-12), key
        for member in FIELD:
            assert value <= jcts(field, member)[key] * (1 + 1e-12), (member, key)
    assert problems(bound, suite) == []


def test_the_dynamic_world_has_both_references(suite: Path, folder: Path) -> None:
    """On ``dynamic-online`` best-known is no worse than any member of its field (run under the
    task's online belief) and the bound no higher than either; both replay."""
    field_file = ROOM.run(suite, "field", folder / "dynamic-field.jsonl", (DYNAMIC,))
    known = jcts(ROOM.run(suite, "best-known", folder / "dynamic-best-known.jsonl", (DYNAMIC,)))
    low = jcts(ROOM.run(suite, "lower-bound", folder / "dynamic-bound.jsonl", (DYNAMIC,)))
    assert len(known) == 2 and low.keys() == known.keys()  # one test trace x two seeds
    members = {row.member for _, row in read_results(field_file).episodes}
    assert members == {"pal", "pm-first", "packed-sticky", "packed-non-sticky"}
    for member in members:
        for key, value in jcts(field_file, member).items():
            assert low[key] <= known[key] <= value * (1 + 1e-12), (member, key)
    for name in ("dynamic-best-known.jsonl", "dynamic-bound.jsonl"):
        assert problems(folder / name, suite) == []
    header = read_results(folder / "dynamic-best-known.jsonl").header
    assert header.members[DYNAMIC]["best-known"]["schedule"]["queue_order"] == "fifo"


def test_the_dynamic_search_decides_on_the_truth_now() -> None:
    assert DYNAMIC_PLACEMENT_SEARCH == ("pal@oracle", "pm-first@oracle")


def test_a_world_with_drift_is_refused_by_the_bound_naming_where_it_runs(
        suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from palgym.sim import config as config_module
    from palgym.sim.dynamics import VariabilityDynamics

    drifting = config_module.PRESETS["dynamic"].with_options(
        dynamics=VariabilityDynamics(run_variation=True, drift=True))
    monkeypatch.setitem(config_module.PRESETS, "dynamic", drifting)
    output = tmp_path / "bound.jsonl"
    with pytest.raises(ConfigError, match=r"dynamic-online's dynamic truth has drift.*"
                       r"placement-default.*scheduling-clairvoyant"):
        ROOM.run(suite, "lower-bound", output, (DYNAMIC,))
    assert not output.exists()


def test_placement_schedules_do_not_change_the_scheduling_rows(suite: Path,
                                                               tmp_path: Path) -> None:
    # the placement task's candidates (FIFO only) never serve the scheduling task, which
    # shares its episode; the scheduling rows are those of a run of that task alone
    both = ROOM.run(suite, "best-known:evaluations=12", tmp_path / "both.jsonl",
                    ("placement-pal-artifact", SCHEDULING))
    alone = ROOM.run(suite, "best-known:evaluations=12", tmp_path / "alone.jsonl", (SCHEDULING,))
    fields = ("trace", "seed", "avg_jct_s", "actions", "episode_hash")
    scheduling = rows(alone, *fields, task=SCHEDULING)
    assert rows(both, *fields, task=SCHEDULING) == scheduling and len(scheduling) == 2
    assert problems(both, suite) == []


def test_groups_are_trace_files_in_plan_order(suite: Path, tmp_path: Path) -> None:
    # every task of the tiny suite tests on the one file sia-philly-gen-4: one group, the
    # tasks in the order --tasks gives them
    request = RunRequest(str(suite), "lower-bound", tmp_path / "x.jsonl", DataRoots(),
                         tasks=(SCHEDULING, *PLACEMENT), progress=False)
    assert _groups(plan_entry(request)) == [[(SCHEDULING, 0), (PLACEMENT[0], 0),
                                             (PLACEMENT[1], 0)]]


def test_ray_without_the_extra_names_it(suite: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    output = tmp_path / "x.jsonl"
    with pytest.raises(ConfigError, match=r"--ray needs the optional 'ray' extra.*"
                       r"pip install -e '\.\[ray\]'"):
        ROOM.run(suite, "lower-bound", output, ray_address="")
    assert not output.exists()


class FakeRay:
    """What :mod:`palgym.bench.ray_tasks` calls of ray, run in this process: each task runs
    when submitted, ``get`` returns its value; init and shutdown are counted."""

    def __init__(self) -> None:
        self.inits: list[dict[str, object]] = []
        self.shutdowns = 0
        self.submitted = 0

    def is_initialized(self) -> bool:
        return len(self.inits) > self.shutdowns

    def init(self, **options: object) -> None:
        self.inits.append(options)

    def shutdown(self) -> None:
        self.shutdowns += 1

    def remote(self, num_cpus: int):  # noqa: ANN201
        def wrap(function):  # noqa: ANN001, ANN202
            fake = self

            class Task:
                @staticmethod
                def remote(*args: object) -> object:
                    fake.submitted += 1
                    return function(*args)

            return Task

        return wrap

    def get(self, ref: object) -> object:
        return ref

    def put(self, value: object) -> object:
        return value


def test_ray_plumbing_gives_the_serial_rows_with_a_stand_in(
        suite: Path, bound: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no Ray here: a stand-in module runs the tasks in this process, so what is checked is
    # the plumbing (one task per trace file, results joined in order, a local Ray started
    # with one OpenMP thread per worker and stopped)
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    path = ROOM.run(suite, "lower-bound", tmp_path / "lower-bound.jsonl", ray_address="")
    fields = ("task", "trace", "seed", "avg_jct_s", "episode_hash")
    assert rows(path, *fields) == rows(bound, *fields)
    assert fake.submitted == 1  # the tiny suite's one test file
    assert len(fake.inits) == 1 and fake.shutdowns == 1
    assert fake.inits[0]["address"] is None
    assert fake.inits[0]["runtime_env"]["env_vars"]["OMP_NUM_THREADS"] == "1"  # type: ignore[index]


def test_the_bench_units_and_evaluate_py_share_the_ray_plumbing(
        suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.evaluation.parallel import ray_runner
    from palgym import make_episode, preset, read_sia_trace
    from palgym.bundled import bundled_trace_paths
    from palgym.simulate import slowdown_factors
    from palgym.sweep import EpisodeRun, serial_runner

    serial = ROOM.run(suite, "pal", tmp_path / "serial.jsonl", ("placement-default",))
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    remote = ROOM.run(suite, "pal", tmp_path / "remote.jsonl", ("placement-default",),
                      ray_address="auto")
    fields = ("trace", "seed", "avg_jct_s", "actions", "episode_hash")
    assert rows(remote, *fields) == rows(serial, *fields) and fake.submitted == 1
    assert fake.inits[0]["address"] == "auto" and fake.inits[0]["runtime_env"] is None
    whole = read_sia_trace(bundled_trace_paths()["sia-philly-gen-4"])
    trace = whole.select(np.arange(whole.num_jobs) < 8)
    episode = make_episode(trace, config=preset("default"))
    runs = [EpisodeRun(episode, slowdown_factors(episode), p, "fifo") for p in ("pal", "pm-first")]
    got = [r.metrics for r in ray_runner("")(runs)]
    assert got == [r.metrics for r in serial_runner()(runs)]
    assert fake.submitted == 3 and fake.shutdowns == 2


def test_ray_tasks_write_the_serial_rows(suite: Path, best_known: Path, bound: Path,
                                        tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the optional 'ray' extra is not installed")
    for serial in (best_known, bound):
        remote = ROOM.run(suite, serial.stem, tmp_path / serial.name, ray_address="")
        fields = ("task", "trace", "seed", "avg_jct_s", "actions", "episode_hash")
        assert rows(remote, *fields) == rows(serial, *fields)
        assert problems(remote, suite) == []
