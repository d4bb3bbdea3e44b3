"""How much of the room an online scheduler takes by searching at decision time: the rollout
search over the response-ratio family on the jobs known at each decision, against v2's
validation-chosen best and best-known.

The search (:class:`agents.selection.search.RolloutSearch` with ``arrivals="known"``, ``H``
None): at the first round and every round with an event, each rule of the field is played
until the next ask on a copy of the engine that admits no more arrivals, then the *base*
decides to the end of the known jobs; the rule whose known jobs spend the least total time in
the system is played (ties to the base's choice). The field: the family's orders
(1 + remaining GPU-h) / (1 + hours queued)^a, lowest first, with PAL and first-fit
backfilling (``agents.priority.pretrained:ResponseRatio*``), for each ``a`` of
``--exponents``, plus ``fifo/pal+easy``; the base: the member (``--base-exponent``,
``--floor``): its order, and ``fifo/pal+easy`` once a job has queued ``--floor`` hours
(the aging guard ``pal+backfill+age=Fh:fifo/pal+easy`` over that order, bit for bit). The
defaults were fixed before any test episode was run: the base is the family's (2, 96 h), the
exponent of v2's hand rule (``ResponseRatio``, chosen on validation) and the floor of the
family's validation choice, (1.5, 96 h) (``benchmarks/priority_family_room.py``).

The search reads what a scheduler knows at the ask (the tasks' durations are clairvoyant, the
belief is the oracle of a static truth): never a later submission. It is a search, not a
learned model, and it is slow (the decision times are printed; the 50 ms a decision may
take is exceeded by most searched asks).

It runs on palgym-bench-v2's ``scheduling-clairvoyant`` and ``scheduling-regimes`` episodes of
each split given (seed 0, as the bench's episodes). Printed per split, each a geomean over
the traces of avg JCT / avg JCT of the task's validation-chosen `best` (read from the committed
``best.jsonl``) with the leaderboard's 95% bootstrap interval over traces
(:func:`palgym.bench.stats.bootstrap_geomean`), unfinished jobs counted: the base, the
search, the search over the base, and on test v2's committed best-known on the same
episodes. ``--output`` writes one JSON row per episode (atomically).

    python benchmarks/online_search.py --cache C [--data-dir D] [--split validation test]
        [--exponents 1.5 2 3] [--base-exponent 2] [--floor 96] [--workers N]
        [--output rows.jsonl] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from palgym.errors import PalgymError

SUITE = "palgym-bench-v2"
TASKS = ("scheduling-clairvoyant", "scheduling-regimes")
FOLDER = Path(__file__).parent / "leaderboard" / SUITE
ORDERS = {1.0: "ResponseRatioA1", 1.5: "ResponseRatioA1_5", 2.0: "ResponseRatio",
          2.5: "ResponseRatioA2_5", 3.0: "ResponseRatioA3"}
"""The family's committed orders by exponent (:mod:`agents.priority.pretrained`)."""
FLOOR_RULE = "fifo/pal+easy"
DECISION_LIMIT_S = 0.05
"""The time a decision may take (s): the searched asks above it are counted."""


def field(exponents: list[float]) -> list[str]:
    """The search's rules: each exponent's order with PAL and first-fit backfilling, then
    :data:`FLOOR_RULE`.

    Raises:
        PalgymError: for an exponent without a committed order (naming the ones there are).
    """
    missing = [a for a in exponents if a not in ORDERS]
    if missing or len(set(exponents)) != len(exponents):
        raise PalgymError(f"--exponents: distinct values among {sorted(ORDERS)}, got "
                          f"{exponents}")
    return [f"agents.priority.pretrained:{ORDERS[a]}/pal+backfill" for a in exponents] + [
        FLOOR_RULE]


def base_member(rules: list[str], exponents: list[float], exponent: float,
                floor_hours: float) -> Any:
    """The base: rule ``exponent`` below the floor, :data:`FLOOR_RULE` above it (a constant
    :class:`agents.selection.selector.LinearSelector` with a starvation floor).

    Raises:
        PalgymError: if ``exponent`` is not among ``exponents`` or the floor is not > 0.
    """
    from agents.selection.selector import LinearSelector, StarvationFloor

    if exponent not in exponents:
        raise PalgymError(f"--base-exponent {exponent:g} must be one of --exponents "
                          f"{exponents}")
    if not (math.isfinite(floor_hours) and floor_hours > 0):
        raise PalgymError(f"--floor: hours > 0, got {floor_hours}")
    return LinearSelector.constant(rules, exponents.index(exponent)).with_floor(
        StarvationFloor(float(floor_hours), len(rules) - 1))


_JOBS: list[Any] = []


def search_row(split: str, task: str, episode: Any, best: str, rules: list[str], base: Any,
               search: Any, label: str = "") -> dict[str, Any]:
    """One episode's row: the reference ``best`` (``ORDER/PLACEMENT``), the base alone and
    ``search`` (a :class:`agents.selection.search.RolloutSearch` over ``rules`` around
    ``base``), each run on ``episode`` (an item of
    :func:`agents.selection.runs.split_episodes`); its unfinished jobs, the search's counts and
    decision times. A progress line (``label`` first) goes to stderr."""
    from palgym.rule_selection import run_selected_episode
    from palgym.simulate import run_episode

    order, placement = best.split("/", 1)
    ref = run_episode(episode.episode, placement, order, durations=episode.durations).metrics
    alone = run_selected_episode(episode.episode, rules, base, episode.durations).result.metrics
    started = time.perf_counter()
    found = run_selected_episode(episode.episode, rules, search, episode.durations).result
    wall = time.perf_counter() - started
    stats = search.stats
    searched = [s for s, costs in zip(stats.decision_s, stats.costs, strict=True)
                if len(costs) > 1]
    row = {"split": split, "task": task, "trace": episode.label, "best": best,
           "best_avg_jct_s": ref.avg_jct_s, "best_unfinished": ref.num_jobs - ref.num_completed,
           "base_avg_jct_s": alone.avg_jct_s,
           "base_unfinished": alone.num_jobs - alone.num_completed,
           "search_avg_jct_s": found.metrics.avg_jct_s,
           "search_unfinished": found.metrics.num_jobs - found.metrics.num_completed,
           "asks": stats.asks, "searched": stats.searched, "changed": stats.changed,
           "rollouts": stats.rollouts, "stuck_rollouts": stats.stuck,
           "decision_mean_s": stats.decision_mean_s,
           "decision_max_s": stats.decision_max_s,
           "searched_over_limit": sum(s > DECISION_LIMIT_S for s in searched), "wall_s": wall}
    print(f"{label}{split} {task} {episode.label}: search/best "
          f"{row['search_avg_jct_s'] / row['best_avg_jct_s']:.4f}, base/best "
          f"{row['base_avg_jct_s'] / row['best_avg_jct_s']:.4f}, decision mean "
          f"{1000 * row['decision_mean_s']:.0f} ms, {wall:.0f} s", file=sys.stderr, flush=True)
    return row


def run_one(index: int) -> dict[str, Any]:
    """One prepared episode's row (:func:`search_row` of the full search)."""
    from agents.selection.search import RolloutSearch

    split, task, episode, best, rules, base = _JOBS[index]
    return search_row(split, task, episode, best, rules, base,
                      RolloutSearch(rules, base, H=None, arrivals="known"))


def run_rows(workers: int) -> list[dict[str, Any]]:
    """:func:`run_one` of every prepared episode (``priority_cross_cluster.map_jobs``)."""
    from priority_cross_cluster import map_jobs

    return map_jobs(run_one, len(_JOBS), workers)


def cell(ratios: np.ndarray) -> str:
    """``geomean [low, high]`` of per-trace ratios (float64 (T,)), the leaderboard's 95%
    bootstrap interval (:func:`palgym.bench.stats.bootstrap_geomean`)."""
    from palgym.bench.stats import bootstrap_geomean

    summary = bootstrap_geomean(ratios)
    return f"{summary.geomean:.3f} [{summary.ci_low:.3f}, {summary.ci_high:.3f}]"


def table(rows: list[dict[str, Any]], known: dict[tuple[str, str], float]) -> list[str]:
    """The printed table's lines (module docstring), one block per split."""
    lines = ["| split (traces) | base / best | search / best | search / base | "
             "best-known / best | unfinished (base, search) | decision s: mean, max; "
             f"searched asks over {DECISION_LIMIT_S * 1000:g} ms |",
             "|---|---|---|---|---|---|---|"]
    for split in dict.fromkeys(r["split"] for r in rows):
        part = [r for r in rows if r["split"] == split]
        best = np.array([r["best_avg_jct_s"] for r in part])
        base = np.array([r["base_avg_jct_s"] for r in part]) / best
        found = np.array([r["search_avg_jct_s"] for r in part]) / best
        keys = [(r["task"], r["trace"]) for r in part]
        bk = (cell(np.array([known[k] for k in keys]) / best)
              if split == "test" and all(k in known for k in keys) else "")
        asks = sum(r["asks"] for r in part)
        mean = sum(r["decision_mean_s"] * r["asks"] for r in part) / max(asks, 1)
        over = sum(r["searched_over_limit"] for r in part)
        searched = sum(r["searched"] for r in part)
        lines.append(
            f"| {split} ({len(part)}) | {cell(base)} | {cell(found)} | {cell(found / base)} | "
            f"{bk} | {sum(r['base_unfinished'] for r in part)}, "
            f"{sum(r['search_unfinished'] for r in part)} | {mean:.3f}, "
            f"{max(r['decision_max_s'] for r in part):.2f}; {over} of {searched} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from palgym.bench.roots import data_roots

    sys.path.insert(0, str(Path(__file__).parent))
    from priority_cross_cluster import chosen_best, v2_parser
    from priority_family_room import test_jcts

    parser = v2_parser(__doc__)
    parser.add_argument("--split", nargs="+", default=["validation", "test"],
                        choices=["train", "validation", "test"],
                        help="the splits to run (default: validation test)")
    parser.add_argument("--exponents", type=float, nargs="+", default=[1.5, 2.0, 3.0],
                        help=f"the field's exponents a, distinct, among {sorted(ORDERS)} "
                        "(default: 1.5 2 3)")
    parser.add_argument("--base-exponent", type=float, default=2.0,
                        help="the base's exponent, one of --exponents (default %(default)s)")
    parser.add_argument("--floor", type=float, default=96.0,
                        help="the base's floor (h, > 0; default %(default)s)")
    parser.add_argument("--workers", type=int, default=1,
                        help="forked processes (>= 1; default %(default)s)")
    parser.add_argument("--limit", type=int, default=None,
                        help="the first N episodes of each task and split only (>= 1)")
    parser.add_argument("--output", help="write one JSON row per episode here (atomically, "
                        "after the table is printed)")
    args = parser.parse_args(argv)
    if args.workers < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--limit and --workers: at least 1")
    try:
        from agents.selection.runs import split_episodes
        from palgym.io.atomic import check_destination

        if args.output:
            check_destination(args.output, "--output")
        rules = field(args.exponents)
        base = base_member(rules, args.exponents, args.base_exponent, args.floor)
        roots = data_roots(args.data_dir, args.cache)
        best = {task: chosen_best(FOLDER / "best.jsonl", task) for task in TASKS}
        known = test_jcts(FOLDER / "best-known.jsonl")
        _JOBS[:] = [(split, task, e, best[task], rules, base) for split in args.split
                    for task in TASKS
                    for e in split_episodes(split, suite=SUITE, task=task,
                                            data_dir=roots.data_dir,
                                            cache_dir=roots.cache_dir)[:args.limit]]
        rows = run_rows(args.workers)
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report(rows, known, best, rules, args)
    return write_rows(rows, args.output)


def report(rows: list[dict[str, Any]], known: dict[tuple[str, str], float],
           best: dict[str, str], rules: list[str], args: argparse.Namespace) -> None:
    """Print the table (module docstring) with its warnings."""
    print(f"ratio of avg JCT to each task's validation-chosen best ({best}); geomean over "
          f"traces [95% bootstrap interval]; base: the family's ({args.base_exponent:g}, "
          f"{args.floor:g} h); search over {rules}")
    if args.limit is not None:
        print(f"warning: --limit {args.limit}: the first {args.limit} episodes of each task "
              "and split only")
    for line in table(rows, known):
        print(line)
    unfinished = sum(r["search_unfinished"] + r["base_unfinished"] for r in rows)
    if unfinished:
        print(f"warning: {unfinished} jobs left unfinished (counted in the table)")
    stuck = sum(r.get("stuck_rollouts", 0) for r in rows)
    if stuck:
        print(f"warning: {stuck} rollouts got stuck (a rule that could never end the known "
              "jobs; priced inf, so never played)")


def write_rows(rows: list[dict[str, Any]], output: str | None) -> int:
    """Write the rows to ``output`` (one JSON object a line, atomically); 0, or 2 with the
    reason on stderr (the table is printed before, so a failed write loses no figure)."""
    from palgym.io.atomic import atomic_write_text

    if not output:
        return 0
    try:
        atomic_write_text(output, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    except OSError as error:
        print(f"error: --output {output}: {error}", file=sys.stderr)
        return 2
    return 0

if __name__ == "__main__":
    sys.exit(main())
