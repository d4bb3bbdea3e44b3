"""The synthetic suite of the palgym.bench.leaderboard tests, ratios worked out by hand.

Suite ``toy``: tasks ``task-a`` and ``task-b``, traces tr0, tr1, tr2, seeds 0 and 1 (6 test
episodes per task); entries ``pal``, ``best``, ``field`` (members srtf/pal, fifo/pal, las/pal)
and the learned entry ``agent``. Average JCTs (s), in key order (tr0 s0, tr0 s1, tr1 s0,
tr1 s1, tr2 s0, tr2 s1):

task-a  best (srtf/pal) 100 x6   pal 125 x6   agent 50 200 100 90 25 400
        field: srtf/pal 100 x6; fifo/pal 90 110 120 120 120 120; las/pal 130 x5 then 70
task-b  best (fifo/pal) 200 x6   pal 400 x6   agent 200 x6 (3 unfinished jobs, 2 invalid
        actions in tr1 s0)
        field: fifo/pal 200 x6; srtf/pal 210 x6; las/pal 190 then 220 x5

The field's validation episodes take 1 s more than its test episodes. The files are complete
and valid (written by :func:`palgym.bench.results.write_results`, read by ``read_results``).
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from palgym.bench.leaderboard_tables import build_leaderboard
from palgym.bench.results import (
    ChoiceRow,
    EpisodeRow,
    Header,
    Row,
    encode_actions,
    read_results,
    write_results,
)
from palgym.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]
KEYS = [(trace, seed) for trace in ("tr0", "tr1", "tr2") for seed in (0, 1)]
BEST_OF = {"task-a": "srtf/pal", "task-b": "fifo/pal"}
FIELD_JCT = {
    "task-a": {"srtf/pal": [100] * 6, "fifo/pal": [90, 110, 120, 120, 120, 120],
               "las/pal": [130] * 5 + [70]},
    "task-b": {"fifo/pal": [200] * 6, "srtf/pal": [210] * 6, "las/pal": [190] + [220] * 5},
}
JCT = {
    "pal": {"task-a": [125] * 6, "task-b": [400] * 6},
    "agent": {"task-a": [50, 200, 100, 90, 25, 400], "task-b": [200] * 6},
    "best": {task: FIELD_JCT[task][member] for task, member in BEST_OF.items()},
    "planner": {"task-a": [40] * 6, "task-b": [150] * 6},
}
KIND = {"pal": "heuristic", "agent": "learned", "best": "best", "field": "field",
        "planner": "planner"}


def members_of(entry: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The header's ``members``: per task, the members the entry runs, with no env kwargs of
    their own (so each member's env layout is the task's)."""
    names = {"field": lambda task: sorted(FIELD_JCT[task]),
             "best": lambda task: [BEST_OF[task]]}.get(entry, lambda task: [entry])
    return {task: {member: {"env_kwargs": {}, "env_layout": "0" * 16} for member in names(task)}
            for task in FIELD_JCT}


def header(entry: str, **changes: Any) -> Header:
    return replace(Header(suite="toy", suite_sha256="ab" * 32, entry=entry,
                          entry_kind=KIND[entry], entry_spec=entry, palgym_version="0.1.0",
                          commit="unknown", env_layouts={task: "0" * 16 for task in FIELD_JCT},
                          seeds=[0, 1], members=members_of(entry)), **changes)


def episode(task: str, split: str, key: tuple[str, int], member: str, jct: float,
            **changes: Any) -> EpisodeRow:
    learned = member == "agent"
    return replace(EpisodeRow(
        task=task, split=split, trace=key[0],
        trace_sha256=hashlib.sha256(key[0].encode()).hexdigest(), seed=key[1], member=member,
        avg_jct_s=float(jct), p99_jct_s=2.0 * jct, makespan_s=10.0 * jct,
        utilization=0.5, num_jobs=10, completed_jobs=10, unfinished_jobs=0, invalid_actions=0,
        decisions=10, decision_time_s=0.5 if learned else 0.01, episode_hash="0" * 16,
        actions=encode_actions([0] * 10)), **changes)


def choice(task: str) -> ChoiceRow:
    """The ``best`` entry's choice on ``task``, with every member's validation geomean (the
    field's validation JCTs are the test ones + 1 s)."""
    return ChoiceRow(task=task, member=BEST_OF[task], selection_split="validation",
                     field=sorted(FIELD_JCT[task]), validation_geomean_avg_jct_s={
                         member: statistics.geometric_mean([j + 1.0 for j in jcts])
                         for member, jcts in sorted(FIELD_JCT[task].items())})


def lines_of(entry: str) -> list[Row]:
    if entry == "field":
        return [episode(task, split, key, member, jcts[i] + (0 if split == "test" else 1))
                for split in ("validation", "test") for task, members in FIELD_JCT.items()
                for member, jcts in members.items() for i, key in enumerate(KEYS)]
    lines: list[Row] = [choice(task) for task in BEST_OF] if entry == "best" else []
    for task, jcts in JCT[entry].items():
        for i, key in enumerate(KEYS):
            member = BEST_OF[task] if entry == "best" else entry
            failures = {"unfinished_jobs": 3, "completed_jobs": 7, "invalid_actions": 2} if (
                entry == "agent" and task == "task-b" and key == ("tr1", 0)) else {}
            lines.append(episode(task, "test", key, member, jcts[i], **failures))
    return lines


def write(path: Path, head: Header, lines: list[Row]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_results(path, head, lines)


def boards(results: dict[str, Path], num_resamples: int = 10) -> list[Any]:
    """The leaderboard of the files, each read by ``read_results`` (as the leaderboard does)."""
    return build_leaderboard([read_results(p) for p in results.values()],
                             num_resamples=num_resamples)


def results_files(tmp_path: Path) -> dict[str, Path]:
    """Every entry's valid results file under ``tmp_path / "results"``."""
    return {entry: write(tmp_path / "results" / f"{entry}.jsonl", header(entry), lines_of(entry))
            for entry in ("pal", "best", "field", "agent")}


def refusal(results: dict[str, Path], entry: str, lines: list[Row], **changes: Any) -> str:
    """The leaderboard's one-line refusal once ``entry``'s file holds ``lines`` (and a header
    with ``changes``)."""
    write(results[entry], header(entry, **changes), lines)
    return leaderboard_error(results)


def leaderboard_error(results: dict[str, Path]) -> str:
    """The leaderboard's refusal of the files."""
    with pytest.raises(ConfigError) as caught:
        boards(results)
    return str(caught.value)
