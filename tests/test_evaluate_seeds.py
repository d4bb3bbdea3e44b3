"""What "seed" means in evaluate.py's two modes: the heuristic table's ``--seed`` is the episode
seed itself; side by side, ``--seed`` / ``--seeds`` are env reset seeds, each drawing the
episode seed printed beside its hash. Giving the table that printed episode seed rebuilds the
identical episode, so a heuristic's number (random-sticky's, which draws from the episode's
placement stream) is the same in both modes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agents.evaluation.cli import main

TRACE = "sia-philly-gen-0"


def test_the_printed_episode_seed_reproduces_the_side_by_side_number(tmp_path: Path,
                                                                      capsys) -> None:
    side = tmp_path / "side.json"
    assert main(["--trace", TRACE, "--seeds", "0", "--policy", "random-sticky", "--quiet",
                 "--bootstrap-resamples", "20", "--json", str(side)]) == 0
    out = capsys.readouterr().out
    comparison = json.loads(side.read_text(encoding="utf-8"))
    episode_seed = comparison["episodes"][0]["episode_seed"]
    # The env draws the episode seed from its reset seed: the first draw of
    # numpy's default_rng(0) below 2**31 - 1 (gymnasium seeds np_random with default_rng).
    assert episode_seed == int(np.random.default_rng(0).integers(2**31 - 1)) != 0
    assert f"{TRACE} reset seed 0: " in out and f"(episode seed {episode_seed}," in out
    side_jct = next(r["avg_jct_s"] for r in comparison["results"]
                    if r["policy"] == "random-sticky")

    table = tmp_path / "table.json"
    assert main(["--trace", TRACE, "--seed", str(episode_seed), "--policy", "random-sticky",
                 "--quiet", "--json", str(table)]) == 0
    assert f"episode seed {episode_seed} (--seed: in the heuristic table the episode seed " \
           "itself" in capsys.readouterr().out
    rows = json.loads(table.read_text(encoding="utf-8"))
    rows = rows["results"] if isinstance(rows, dict) else rows
    table_jct = next(r["avg_jct_s"] for r in rows if r["policy"] == "random-sticky")
    assert table_jct == side_jct  # bit for bit: the same episode and placement stream
