"""The room inside the response-ratio family: how much a per-trace choice of the family's two
parameters would take, against v2's best-known schedules.

The family: the priority order (1 + remaining GPU-h) / (1 + hours queued)^a, lowest first,
with PAL and first-fit backfilling, under a starvation floor of F hours (once a job has queued
F h, FIFO with EASY backfilling decides; :func:`agents.priority.train.run_weights`), for each
``a`` of ``--exponents`` and ``F`` of ``--floors``. It runs on palgym-bench-v2's validation and
test episodes of ``scheduling-clairvoyant`` and ``scheduling-regimes`` (one seed, so an
episode is a trace).

Printed per split, each a geomean over the traces of avg JCT / avg JCT of the task's
validation-chosen `best` (read from the committed ``best.jsonl``) with the leaderboard's 95%
bootstrap interval over traces (:func:`palgym.bench.stats.bootstrap_geomean`), and
unfinished jobs counted:

- every member (a, F);
- the member chosen on validation (the lowest validation geomean), on test;
- the per-trace hindsight best of the family (a reference that sees the trace: per trace the
  member with the lowest avg JCT among those that finish every job);
- on test, v2's committed best-known on the same episodes (``best-known.jsonl``).

    python benchmarks/priority_family_room.py --cache C [--exponents 1 1.5 2 2.5 3]
        [--floors 24 48 96]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from palgym.errors import PalgymError

SUITE = "palgym-bench-v2"
TASKS = ("scheduling-clairvoyant", "scheduling-regimes")
FOLDER = Path(__file__).parent / "leaderboard" / SUITE


def test_jcts(path: Path) -> dict[tuple[str, str], float]:
    """avg JCT (s) of a results file's seed-0 test rows by (task, trace).

    Raises:
        PalgymError: naming the file, for a file that cannot be read.
    """
    found = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row.get("record") == "episode" and row["split"] == "test" and not row["seed"]:
                    found[(row["task"], row["trace"])] = float(row["avg_jct_s"])
    except (OSError, json.JSONDecodeError, KeyError) as error:
        raise PalgymError(f"{path}: cannot read its test rows ({error})") from None
    return found


def run_split(split: str, members: list[tuple[float, float]], best: dict[str, str],
              roots: Any) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """((task, trace) per trace, log ratio float64 (T, M) of each member to the task's best,
    unfinished jobs int64 (T, M)) on ``split``."""
    from agents.priority.train import run_weights
    from agents.selection.runs import split_episodes
    from palgym.policies.contender_spec import parse_heuristic
    from palgym.simulate import run_episode

    keys, logs, lost = [], [], []
    for task in TASKS:
        parsed = parse_heuristic(best[task], f"{task} best")
        for episode in split_episodes(split, suite=SUITE, task=task, data_dir=roots.data_dir,
                                      cache_dir=roots.cache_dir):
            ref = run_episode(episode.episode, parsed.placement_name, parsed.queue_order
                              or "fifo", durations=episode.durations).metrics.avg_jct_s
            runs = [run_weights(episode, "pal+backfill", (1.0, 0.0, -a, 0.0, 0.0),
                                floor_hours=floor) for a, floor in members]
            keys.append((task, episode.label))
            logs.append([math.log(jct / ref) for jct, _ in runs])
            lost.append([left for _, left in runs])
            print(f"{split} {task} {episode.label}: done", file=sys.stderr, flush=True)
    return keys, np.array(logs), np.array(lost, dtype=np.int64)


def oracle(logs: np.ndarray, lost: np.ndarray) -> np.ndarray:
    """float64 (T,): per trace the lowest log ratio among the members that finish every job
    (inf where none does)."""
    return np.where(lost == 0, logs, np.inf).min(axis=1)


def cell(logs: np.ndarray) -> str:
    """``geomean [low, high]`` of one column of log ratios (float64 (T,), one per trace), the
    leaderboard's 95% bootstrap interval (:func:`palgym.bench.stats.bootstrap_geomean`)."""
    from palgym.bench.stats import bootstrap_geomean

    summary = bootstrap_geomean(np.exp(logs))
    return f"{summary.geomean:.3f} [{summary.ci_low:.3f}, {summary.ci_high:.3f}]"


def main(argv: list[str] | None = None) -> int:
    from palgym.bench.roots import data_roots

    sys.path.insert(0, str(Path(__file__).parent))
    from priority_cross_cluster import chosen_best, v2_parser

    parser = v2_parser(__doc__)
    parser.add_argument("--exponents", type=float, nargs="+", default=[1, 1.5, 2, 2.5, 3])
    parser.add_argument("--floors", type=float, nargs="+", default=[24, 48, 96],
                        help="starvation floors (h, > 0)")
    args = parser.parse_args(argv)
    if min(args.floors) <= 0:
        parser.error("--floors: hours > 0")
    members = [(a, f) for a in args.exponents for f in args.floors]
    try:
        roots = data_roots(args.data_dir, args.cache)
        best = {task: chosen_best(FOLDER / "best.jsonl", task) for task in TASKS}
        known = test_jcts(FOLDER / "best-known.jsonl")
        chosen_jcts = test_jcts(FOLDER / "best.jsonl")
        results = {split: run_split(split, members, best, roots)
                   for split in ("validation", "test")}
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"ratio of avg JCT to each task's validation-chosen best ({best}); "
          "geomean over traces [95% bootstrap interval]")
    print("| member (a, floor h) | validation | test | unfinished jobs (val, test) |")
    print("|---|---|---|---|")
    (_, val, val_lost), (keys, test, test_lost) = results["validation"], results["test"]
    for m, (a, floor) in enumerate(members):
        print(f"| ({a:g}, {floor:g}) | {cell(val[:, m])} | {cell(test[:, m])} | "
              f"{val_lost[:, m].sum()}, {test_lost[:, m].sum()} |")
    pick = int(np.argmin(val.mean(axis=0)))
    print(f"| chosen on validation: ({members[pick][0]:g}, {members[pick][1]:g}) | "
          f"{cell(val[:, pick])} | {cell(test[:, pick])} | |")
    print(f"| per-trace hindsight best of the family | {cell(oracle(val, val_lost))} | "
          f"{cell(oracle(test, test_lost))} | 0, 0 (never chosen when unfinished) |")
    missing = [k for k in keys if k not in known or k not in chosen_jcts]
    if missing:
        print(f"warning: best-known has no row for {len(missing)} test traces: {missing[:3]}")
    else:
        bk = np.array([math.log(known[k] / chosen_jcts[k]) for k in keys])
        print(f"| v2's committed best-known | | {cell(bk)} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
