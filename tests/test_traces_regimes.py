"""Named regimes and their trace collection (traces/regimes.py, ``python -m traces regimes``)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from palgym.errors import ConfigError
from palgym.tracesets import SPLITS, load_trace_set, split_traces
from traces.__main__ import main
from traces.generate import generate_sia_philly_like
from traces.knobs import NO_KNOBS
from traces.regimes import REGIMES, SPLIT_FIRST_SEED, regime, split_seeds, write_regimes

REPO_ROOT = Path(__file__).resolve().parents[1]
COUNTS = {"train": 2, "validation": 2, "test": 1}
NUM_JOBS = 12


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("regimes")
    write_regimes(root, counts=COUNTS, num_jobs=NUM_JOBS)
    return root


def test_regimes_are_distinct_and_named_like_trace_ids() -> None:
    names = [r.name for r in REGIMES]
    assert len(set(names)) == len(names) and "base" in names
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", name) for name in names)
    assert regime("base").knobs == NO_KNOBS
    knob_sets = [r.knobs for r in REGIMES]
    assert len(set(knob_sets)) == len(knob_sets)  # no two regimes draw the same traces


def test_declared_seeds_are_disjoint_across_splits() -> None:
    blocks = [set(split_seeds(split, 1000)) for split in SPLITS]
    assert all(not (a & b) for i, a in enumerate(blocks) for b in blocks[i + 1:])
    assert list(split_seeds("validation", 3)) == [2000, 2001, 2002]
    with pytest.raises(ConfigError, match="--train must be between 0 and 1000, got 1001"):
        split_seeds("train", 1001)


def test_combined_manifest_has_every_regime_and_split(collection: Path) -> None:
    trace_set = load_trace_set(collection)  # the folder's palgym-traceset.json
    assert trace_set.name == "regimes"
    for split in SPLITS:
        expected = [f"{r.name}-{SPLIT_FIRST_SEED[split] + i}"
                    for r in REGIMES for i in range(COUNTS[split])]
        assert trace_set.labels(split) == expected
    assert len(trace_set.members) == len(REGIMES) * sum(COUNTS.values())
    assert all(m.num_jobs == NUM_JOBS for m in trace_set.members)


def test_each_regime_manifest_holds_its_own_traces(collection: Path) -> None:
    for item in REGIMES:
        trace_set = load_trace_set(collection / f"{item.name}.json")
        assert {m.trace.rsplit("-", 1)[0] for m in trace_set.members} == {item.name}
        assert len(trace_set.labels("validation")) == COUNTS["validation"]
        traces = split_traces(collection / f"{item.name}.json", "validation")
        assert [t.num_jobs for t in traces] == [NUM_JOBS] * COUNTS["validation"]


def test_files_are_the_generator_at_the_regime_knobs_and_seed(collection: Path) -> None:
    for item in REGIMES:
        seed = SPLIT_FIRST_SEED["test"]
        lines = (collection / f"{item.name}-{seed}.csv").read_text().splitlines()
        comments = [line for line in lines if line.startswith("#")]
        assert comments[0].endswith(f"--seed {seed}{item.knobs.flags()}")
        assert comments[-1] == f"# regime: {item.name} (test seed)"
        rows = generate_sia_philly_like(NUM_JOBS, seed, knobs=item.knobs).to_csv_text()
        assert [line for line in lines if not line.startswith("#")] == rows.splitlines()


def test_cli_writes_a_subset_and_lists_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "r"
    assert main(["regimes", "--output-dir", str(out), "--regime", "base", "wide",
                 "--train", "0", "--validation", "3", "--test", "1", "--num-jobs", "5"]) == 0
    printed = capsys.readouterr().out
    assert "wrote 8 traces of 2 regime(s)" in printed
    assert sorted(p.name for p in out.glob("*.json")) == [
        "base.json", "palgym-traceset.json", "wide.json"]
    assert load_trace_set(out).labels("validation") == [
        "base-2000", "base-2001", "base-2002", "wide-2000", "wide-2001", "wide-2002"]
    assert main(["regimes", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(r.name in listed and r.knobs.flags().strip() in listed for r in REGIMES)


@pytest.mark.parametrize(("args", "needle"), [
    (["--regime", "nope"], "--regime must be one of"),
    (["--regime", "base", "base"], "--regime names a regime twice"),
    (["--validation", "-1"], "--validation must be between 0 and 1000, got -1"),
    (["--train", "0", "--validation", "0", "--test", "0"], "no traces to write"),
    (["--num-jobs", "0"], "--num-jobs must be >= 1, got 0"),
])
def test_cli_errors_are_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str,
) -> None:
    out = tmp_path / "r"
    assert main(["regimes", "--output-dir", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1
    assert not out.exists()


def test_output_dir_is_required_and_must_be_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["regimes"]) == 2
    assert "--output-dir is required" in capsys.readouterr().err
    file = tmp_path / "f"
    file.write_text("x")
    assert main(["regimes", "--output-dir", str(file)]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_docs_list_every_regime_with_its_knobs() -> None:
    """docs/TRACES.md "Regimes" gives each regime's knob flags exactly as the code has them."""
    text = (REPO_ROOT / "docs" / "TRACES.md").read_text()
    section = text.split("### The regimes\n", 1)[1].split("\n### ", 1)[0]
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `([a-z-]+)` \| `?([^|`]*)`? \|", section,
                                              re.MULTILINE)}
    assert rows == {r.name: (r.knobs.flags().strip() or "(defaults)") for r in REGIMES}


def _winners_script():  # type: ignore[no-untyped-def]
    script = REPO_ROOT / "benchmarks" / "regime_winners.py"
    spec = importlib.util.spec_from_file_location("regime_winners", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _best_json(path: Path, winner: str, figures: dict[str, tuple[float, float]]) -> Path:
    rows = [{"label": label, "selection_geomean_avg_jct_s": sel * 3600.0,
             "evaluation_geomean_avg_jct_s": ev * 3600.0, "selection_unfinished": 0,
             "evaluation_unfinished": 1 if label == winner else 0}
            for label, (sel, ev) in figures.items()]
    path.write_text(json.dumps({"winner": winner, "rows": rows}))
    return path


def test_regime_winners_table_worked_by_hand(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = _best_json(tmp_path / "base.best.json", "a",
                      {"a": (1.0, 2.0), "b": (1.1, 1.0), "c": (1.5, 3.0)})
    wide = _best_json(tmp_path / "wide.best.json", "c",
                      {"a": (3.0, 3.0), "b": (2.5, 4.0), "c": (2.0, 2.4)})
    assert _winners_script().main([str(base), str(wide)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "`a` (base's winner)" in lines[0]
    # base: runner-up b 1.1 / 1.0; a is base's own winner; best on test b: 2.0 / 1.0
    assert lines[2] == "| `base` | `a` | 1.000 | `b` 1.100 | 1.000 / 1.000 | `b` 2.000 | 0/1 |"
    # wide: runner-up b 2.5 / 2.0; a / c = 3 / 2 (validation), 3 / 2.4 (test); c best on test
    assert lines[3] == "| `wide` | `c` | 2.000 | `b` 1.250 | 1.500 / 1.250 | `c` 1.000 | 0/1 |"
    assert _winners_script().main([str(wide)]) == 2
    assert "no file for the reference regime 'base'" in capsys.readouterr().err
