"""The room's scripts: ``benchmarks/room_table.py`` (the room per task, from results files) on a
tiny suite's entries and on the committed v2-lite folder, and ``benchmarks/room_small.py``
(the small-instance suite against its proven optima) on a few of the shipped instances; every
printed figure is recomputed here from the results files or the instances themselves."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from agents.selection.selector import LinearSelector
from palgym import run_episode
from palgym.bench.results import read_results
from palgym.headroom.small import small_instance
from palgym.headroom.suite import suite_path
from tests.bench_suites import tiny_suite
from tests.room_support import Key, Room, jcts, script

REPO = Path(__file__).resolve().parent.parent
TASK = "scheduling-clairvoyant"
PLACEMENT = "placement-default"
RULES = ("srtf/pal+backfill", "fifo/pal+easy")
SELECTOR = REPO / "agents/pretrained/rule-selector/rule-selector-clairvoyant-floor32-seed0.json"
V2_LITE = REPO / "benchmarks/leaderboard/palgym-bench-v2-lite"
RATIO_TOLERANCE = 0.0005 + 1e-9
"""The table prints ratios with 3 decimals."""


room_table = script("room_table")
room_small = script("room_small")


def _two_test_traces(folder: Path) -> Path:
    """The tiny suite (10-job windows) with two test traces (so the table's ratios get an
    interval) on which the search finds room (2-3% of average JCT with 40 evaluations)."""
    path = tiny_suite(folder, [TASK, PLACEMENT], window=10, seeds=(0, 1),
                      fields={TASK: list(RULES), PLACEMENT: ["pal", "pm-first"]})
    data = yaml.safe_load(path.read_text())
    for task in data["tasks"]:
        task["splits"]["test"]["traces"] = ["sia-philly-gen-2", "sia-philly-gen-1"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# the references run on the scheduling task only: the placement task gets no row
ROOM = Room("room-scripts", _two_test_traces, tasks=(TASK, PLACEMENT),
            best_known="best-known:evaluations=40", reference_tasks=(TASK,))
suite, folder, field, best_known, bound = ROOM.fixtures()


@pytest.fixture(scope="module")
def board(suite: Path, folder: Path, field: Path, best_known: Path, bound: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a whole board: pal, best, field, best-known, lower-bound, and two rule
    selectors on the scheduling task: the constant selector of best's rule there and a guard
    that switches to ``fifo/pal+easy`` once a job has queued 36 s."""
    ROOM.run(suite, "pal", folder / "pal.jsonl")
    best = ROOM.run(suite, "best", folder / "best.jsonl")
    [chosen] = [c.member for _, c in read_results(best).choices if c.task == TASK]
    selectors = tmp_path_factory.mktemp("selectors")
    LinearSelector.constant([chosen]).save(selectors / "constant.json")
    LinearSelector.guard(RULES, 0.01, 1).save(selectors / "guard.json")
    for name in ("constant", "guard"):
        ROOM.run(suite, f"selector:{selectors / name}.json", folder / f"{name}.jsonl", (TASK,))
    return folder


def _table(out: str) -> list[list[str]]:
    """The Markdown table's body rows as cells (backticks stripped)."""
    lines = out.splitlines()
    assert lines[0].startswith("| suite | task | validation-chosen best |")
    assert set(lines[1]) <= set("|-:")
    return [[c.strip().strip("`") for c in line.strip("|").split(" | ")] for line in lines[2:]]


def _geomean(values: list[float]) -> float:
    return math.exp(float(np.mean(np.log(values))))


def _point(cell: str) -> float:
    """The ratio of ``0.950 [0.930, 0.970]`` (checked to bracket it) or ``0.950 (no
    interval)``."""
    point, _, rest = cell.partition(" ")
    if rest.startswith("["):
        low, high = (float(x) for x in rest.strip("[]").split(", "))
        assert low <= float(point) <= high, cell
    return float(point)


def _ratio(entry: dict[Key, float], best: dict[Key, float], task: str) -> float:
    """The geomean over ``task``'s episodes of entry / best (both run every one of them)."""
    entry, best = ({k: v for k, v in d.items() if k[0] == task} for d in (entry, best))
    assert entry.keys() == best.keys() and entry
    return _geomean([entry[k] / best[k] for k in best])


def _validation_best(field: Path, task: str) -> str:
    """The field member of lowest geomean validation average JCT (ties: the first by name)."""
    found: dict[str, list[float]] = {}
    for _, row in read_results(field).episodes:
        if row.task == task and row.split == "validation":
            found.setdefault(row.member, []).append(row.avg_jct_s)
    return min(sorted(found), key=lambda m: _geomean(found[m]))


def _run_table(capsys: pytest.CaptureFixture[str], *paths: Path) -> list[list[str]]:
    assert room_table.main([str(p) for p in paths]) == 0
    return _table(capsys.readouterr().out)


def test_room_table_figures_recomputed_from_the_files(board: Path, field: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rows = _run_table(capsys, board)
    assert {r[1] for r in rows} == {TASK}  # the placement task has no reference: no row
    assert [r[5] for r in rows] and {r[5] for r in rows} == {"constant", "guard"}
    best = jcts(board / "best.jsonl")
    known = _ratio(jcts(board / "best-known.jsonl"), best, TASK)
    low = _ratio(jcts(board / "lower-bound.jsonl"), best, TASK)
    # best-known starts from the field and found room here; the bound is below it
    assert low <= known < 1
    for cells in rows:
        assert len(cells) == 9 and cells[0] == "tiny"
        assert cells[2] == _validation_best(field, TASK)
        assert abs(_point(cells[3]) - known) <= RATIO_TOLERANCE
        assert abs(_point(cells[4]) - low) <= RATIO_TOLERANCE
        entry = board / f"{cells[5]}.jsonl"
        ratio = _ratio(jcts(entry), best, TASK)
        assert abs(_point(cells[6]) - ratio) <= RATIO_TOLERANCE
        gap = (1 - ratio) / (1 - known)  # (best - entry) / (best - best-known)
        assert cells[7] == f"{gap:.2f}".replace("-0.00", "0.00")
        assert cells[8] == str(sum(r.unfinished_jobs for _, r in read_results(entry).episodes))


def test_room_table_a_selector_of_best_s_rule_is_best(board: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # the constant selector of the chosen rule plays that rule: ratio 1, no room taken
    [cells] = [r for r in _run_table(capsys, board) if r[5] == "constant"]
    assert cells[6] == "1.000 [1.000, 1.000]"
    assert cells[7] == "0.00"


def test_room_table_without_a_learned_entry_shows_the_references(
        board: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [p for p in sorted(board.glob("*.jsonl")) if p.stem not in ("constant", "guard")]
    [cells] = _run_table(capsys, *files)
    assert cells[1] == TASK and cells[5:] == ["–", "–", "–", "–"]


def test_room_table_bad_input_exits_2_naming_the_path(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert room_table.main([str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and str(missing) in err and "Traceback" not in err


def _field_minimum(field: Path) -> dict[Key, float]:
    """Per test episode, the lowest average JCT of a field member that finishes every job."""
    found: dict[Key, float] = {}
    for _, row in read_results(field).episodes:
        key = (row.task, row.trace, row.seed)
        if row.split == "test" and row.unfinished_jobs == 0:
            found[key] = min(found.get(key, math.inf), row.avg_jct_s)
    return found


def test_room_table_on_the_committed_v2_lite_folder(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _run_table(capsys, V2_LITE)
    files = {read_results(p).header.entry: p for p in sorted(V2_LITE.glob("*.jsonl"))}
    best, known, bound = (jcts(files[name]) for name in ("best", "best-known", "lower-bound"))
    choices = {c.task: c.member for _, c in read_results(files["best"]).choices}
    field = _field_minimum(files["field"])
    assert {r[1] for r in rows} == {k[0] for k in (*known, *bound)} and rows
    # no schedule beats the bound; the best-known schedule is one, and no field member that
    # finishes every job beats it
    assert bound.keys() == known.keys()
    assert all(bound[k] <= known[k] * (1 + 1e-12) for k in known)
    assert all(known[k] <= field[k] * (1 + 1e-12) for k in known)
    for cells in rows:
        task = cells[1]
        assert cells[0] == "palgym-bench-v2-lite" and cells[2] == choices[task]
        room = _ratio(known, best, task)
        assert abs(_point(cells[3]) - room) <= RATIO_TOLERANCE
        assert abs(_point(cells[4]) - _ratio(bound, best, task)) <= RATIO_TOLERANCE
        assert _point(cells[4]) <= _point(cells[3]) <= 1
        if cells[5] == "–":
            assert cells[6:] == ["–", "–", "–"]
            continue
        ratio = _ratio(jcts(files[cells[5]]), best, task)
        assert abs(_point(cells[6]) - ratio) <= RATIO_TOLERANCE
        if room < 1:
            assert abs(float(cells[7]) - (1 - ratio) / (1 - room)) <= 0.005 + 1e-9
        else:
            assert cells[7] == "–"
        assert cells[8] == str(sum(r.unfinished_jobs for _, r in
                                   read_results(files[cells[5]]).episodes if r.task == task))


# benchmarks/room_small.py

def _proven(split: str, count: int, instances: list[dict]) -> list[dict]:
    return [i for i in instances if i["split"] == split and i["status"] == "optimal"][:count]


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite file of 7 shipped instances: two proven ones of each split and the first
    without a proven optimum."""
    data = json.loads(suite_path().read_text())
    every = data["instances"]
    unproven = next(i for i in every if i["status"] != "optimal")
    data["instances"] = [*_proven("train", 2, every), *_proven("validation", 2, every),
                         *_proven("test", 2, every), unproven]
    path = tmp_path_factory.mktemp("small") / "small.json"
    path.write_text(json.dumps(data))
    return path


def _small_best(instances: list[dict]) -> tuple[str, dict[int, float]]:
    """The field combination of lowest geomean average JCT on the validation instances (ties:
    the first by name) and its average JCT (s) by seed."""
    episodes = {i["seed"]: small_instance(i["seed"]).episode() for i in instances}
    names = sorted(f"{o}/{p}{s}" for o in ("fifo", "srtf", "srsf")
                   for p in ("pal", "pm-first", "packed-non-sticky")
                   for s in ("", "+backfill", "+easy"))
    validation = [i["seed"] for i in instances if i["split"] == "validation"]
    def score(name: str) -> float:
        order, placement = name.split("/")
        return _geomean([run_episode(episodes[s], placement, order).metrics.avg_jct_s
                         for s in validation])

    chosen = min(names, key=score)
    order, placement = chosen.split("/")
    return chosen, {s: run_episode(e, placement, order).metrics.avg_jct_s
                    for s, e in episodes.items()}


def _cells(line: str) -> list[str]:
    """A room_small line's intervals (``1.0353 [1.0244, 1.0472]``), each checked to bracket
    its point."""
    found = re.findall(r"(-?[0-9.]+) \[(-?[0-9.]+), (-?[0-9.]+)\]", line)
    for point, low, high in found:
        assert float(low) <= float(point) <= float(high), line
    return [f"{point} [{low}, {high}]" for point, low, high in found]


def _first(line: str) -> float:
    """The point of a room_small line's first interval."""
    return float(_cells(line)[0].split()[0])


def test_room_small_figures_recomputed_from_the_instances(
        small_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instances = json.loads(small_suite.read_text())["instances"]
    chosen, best_avg = _small_best(instances)
    LinearSelector.constant([chosen]).save(tmp_path / "constant.json")
    code = room_small.main(["--suite", str(small_suite), "--selector",
                            str(tmp_path / "constant.json"), str(SELECTOR)])
    out, err = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"validation-chosen best of 27: {chosen}"
    by_split = {line.split()[0]: line for line in lines[2:6]}
    assert list(by_split) == ["train", "validation", "test", "all"]
    proven = {split: [i for i in instances if i["status"] == "optimal"
                      and split in ("all", i["split"])] for split in by_split}
    for split, line in by_split.items():
        count = sum(split in ("all", i["split"]) for i in instances)
        assert line.split()[1:4] == [str(len(proven[split])), "of", str(count)]
        best_cell, search_cell, bound_cell = (float(c.split()[0]) for c in _cells(line))
        assert len(_cells(line)) == 3
        ratios = {name: _geomean([i[name] / i["optimum_avg_jct_s"] for i in proven[split]])
                  for name in ("search_avg_jct_s", "lower_bound_avg_jct_s")}
        best = _geomean([best_avg[i["seed"]] / i["optimum_avg_jct_s"] for i in proven[split]])
        assert abs(best_cell - best) <= 5e-5 + 1e-9
        assert abs(search_cell - ratios["search_avg_jct_s"]) <= 5e-5 + 1e-9
        assert abs(bound_cell - ratios["lower_bound_avg_jct_s"]) <= 5e-5 + 1e-9
        # no schedule beats a proven optimum; no bound exceeds it
        assert best >= 1 - 1e-12 and search_cell >= 1 and bound_cell <= 1
    unproven = [i["name"] for i in instances if i["status"] != "optimal"]
    assert "warning: 1 instances without a proven optimum" in err and unproven[0] in err
    selector = {(line[:40].strip(), line[41:52].strip()): line for line in lines[7:]}
    assert lines[6].split()[:2] == ["selector", "split"] and len(selector) == 6
    for split in ("validation", "test"):
        b = _first(by_split[split])
        assert b > 1, "the chosen instances leave best a gap to the optimum"
        # the constant selector of best's rule plays best: best's figures, no gap closed
        constant = selector[str(tmp_path / "constant.json")[-40:], split]
        assert _cells(constant) == _cells(by_split[split])[:1]
        assert constant.split()[-1] == "0.00"
        # the gap closed is (best - selector) / (best - optimum) of the geomeans
        learned = selector[str(SELECTOR)[-40:], split]
        g = _first(learned)
        assert abs(float(learned.split()[-1]) - (b - g) / (b - 1)) <= 0.01
        # pooled over the two files' (selector, instance) pairs: the geomean of the two
        pooled = _first(selector["pooled (2 files)", split])
        assert abs(pooled - math.sqrt(b * g)) <= 1e-4


def test_room_small_gap_closed_worked_by_hand() -> None:
    proven = [{"seed": s, "optimum_avg_jct_s": opt} for s, opt in ((0, 100.0), (1, 400.0))]
    best = {0: 110.0, 1: 440.0}  # 1.1x the optimum on both
    optimum = {0: 100.0, 1: 400.0}
    assert room_small.gap_row([optimum], proven, best) == ((1.0, 1.0, 1.0), 1.0)
    ratios, closed = room_small.gap_row([best], proven, best)
    assert ratios == pytest.approx((1.1, 1.1, 1.1)) and closed == pytest.approx(0.0)
    ratios, closed = room_small.gap_row([{0: 105.0, 1: 420.0}], proven, best)
    assert ratios[0] == pytest.approx(1.05) and closed == pytest.approx(0.5)
    # pooled: the geomean over (entry, instance) of 1.0 and 1.1
    ratios, _ = room_small.gap_row([optimum, best], proven, best)
    assert ratios[0] == pytest.approx(math.sqrt(1.1)) and ratios[1] <= ratios[0] <= ratios[2]
    assert math.isnan(room_small.gap_row([best], proven, optimum)[1])  # no gap to close


def test_room_small_bad_suite_exits_2_naming_the_file(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"format": "something-else"}))
    assert room_small.main(["--suite", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and str(path) in err and "Traceback" not in err
    # a suite without a validation instance: nothing to choose best on
    data = json.loads(suite_path().read_text())
    data["instances"] = _proven("test", 1, data["instances"])
    path.write_text(json.dumps(data))
    assert room_small.main(["--suite", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{path}: no instance of split 'validation'" in err


def test_room_small_a_split_without_proven_instances_is_nan() -> None:
    assert all(math.isnan(x) for x in room_small.interval([]))
    ratios, closed = room_small.gap_row([{}], [], {})
    assert all(math.isnan(x) for x in ratios) and math.isnan(closed)


def test_room_small_online_search_row(small_suite: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # the search's row: its ratio to the optimum, recomputed here from its episodes, and the
    # gap it closes, (best - search) / (best - 1) on the geomeans
    from agents.selection.search import RolloutSearch
    from palgym.rule_selection import run_selected_episode

    online = script("online_search")
    rules = online.field([1.5, 2.0, 3.0])
    base = online.base_member(rules, [1.5, 2.0, 3.0], 2.0, 96.0)
    instances = json.loads(small_suite.read_text())["instances"]
    assert room_small.main(["--suite", str(small_suite), "--online-search"]) == 0
    out = capsys.readouterr().out.splitlines()
    by_split = {line.split()[0]: line for line in out[2:6]}
    lines = [line for line in out if line.startswith("online search (known")]
    assert len(lines) == 2
    assert out[out.index(lines[0]) - 1].split()[-2:] == ["gap", "closed"]
    for split in ("validation", "test"):
        proven = _proven(split, 2, instances)
        found = [run_selected_episode(small_instance(i["seed"]).episode(), rules, RolloutSearch(
            rules, base, H=None, arrivals="known")).result.metrics.avg_jct_s
                 / i["optimum_avg_jct_s"] for i in proven]
        line = next(line for line in lines if f" {split} " in line)
        g, b = _first(line), _first(by_split[split])
        assert abs(g - _geomean(found)) <= 5e-5 + 1e-9
        assert g >= 1 - 1e-12  # no schedule beats a proven optimum
        assert abs(float(line.split()[-1]) - (b - g) / (b - 1)) <= 0.01
