"""benchmarks/hindsight.py: the per-trace best in hindsight against the chosen heuristic, on a
hand-built --best-heuristic JSON."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "hindsight.py"
spec = importlib.util.spec_from_file_location("hindsight", SCRIPT)
assert spec is not None and spec.loader is not None
hindsight = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hindsight)


def episode(trace: str, hours: float, truncated: bool = False) -> dict[str, object]:
    return {"trace": trace, "seed": 0, "avg_jct_s": hours * 3600, "truncated": truncated}


def row(label: str, selection: list[dict[str, object]],
        evaluation: list[dict[str, object]]) -> dict[str, object]:
    return {"label": label, "selection_episodes": selection, "evaluation_episodes": evaluation}


DATA = {
    "winner": "srtf/pal",
    "rows": [
        row("srtf/pal", [episode("v", 2.0)], [episode("a", 4.0), episode("b", 10.0)]),
        row("fifo/pal", [episode("v", 3.0)], [episode("a", 2.0), episode("b", 1.0, True)]),
        row("las/pal", [episode("v", 2.5)], [episode("a", 3.0), episode("b", 5.0)]),
    ],
}


def test_per_trace_best_and_geomean_worked_by_hand(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "best.json"
    path.write_text(json.dumps(DATA))
    assert hindsight.main([str(path)]) == 0
    out, err = capsys.readouterr()
    # selection: v is best under the winner itself (2.0 h), ratio 1
    assert "geomean over 1 traces of best-in-hindsight / srtf/pal: 1.000" in out
    # evaluation: a -> fifo/pal 2/4 = 0.5; b -> fifo/pal did not finish, so las/pal 5/10 = 0.5
    lines = out.splitlines()
    assert any(line.split()[:2] == ["a", "4.000"] and line.split()[2] == "fifo/pal"
               and line.endswith("0.500") for line in lines)
    assert any(line.split()[2] == "las/pal" and line.endswith("0.500") for line in lines
               if line.strip().startswith("b "))
    assert f"best-in-hindsight / srtf/pal: {math.sqrt(0.5 * 0.5):.3f}" in out
    assert "unfinished episodes in the file: 1" in out and "1 unfinished" in err


def test_a_file_of_another_layout_is_a_clear_error(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"rows": []}))
    assert hindsight.main([str(path)]) == 2
    assert "not a --best-heuristic JSON file" in capsys.readouterr().err
