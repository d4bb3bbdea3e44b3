"""Learned value plus search within a decision budget: the known-jobs rollout search of
``online_search.py`` with each rollout cut after ``--H`` asks or ``--rounds`` rounds, a
decision's rollouts sharing ``--budget`` rounds, and a value learned from rollouts to the end
pricing the rest.

The full search (``online_search.py``) plays every rollout to the end of the known jobs and
takes most of the room (0.946x the validation-chosen best on v2's test traces), at 0.37 s a
decision. A round of a rollout costs about the same whatever happens in it, so a bound on the
rounds a decision simulates bounds its time; the rest must then be priced by an estimate of
the time the known jobs still spend in the system, from the engine at the horizon. This script
learns that estimate and measures whether the cut search still takes the room.

1. **States** (training split only) and 2. **fit**, as :mod:`agents.selection.value` does
   them: at a share ``--p`` of the asks of each training episode (the base playing), each
   candidate of the cut search is rolled out to its cut and a copy of the state there is
   played by the base to the end of the known jobs (the *rest*); a linear value of the
   state's features is fitted by ridge least squares on the rests and, weighted
   ``--pair-weight``, on their differences from the base's candidate at the same ask.
3. **Held-out regret**: two folds over the training episodes (half fits, the other half is
   scored): at each ask, the rest's true cost of the candidate each estimate picks, over the
   cheapest candidate's, minus 1 (mean over asks): the base's own choice, the ``ideal``
   estimate (remaining run time, no waiting) and the learned value.
4. **The cut search** with the value fitted on all training states, one value per ``--seeds``
   (the asks sampled), on the ``--split`` episodes: avg JCT over the task's validation-chosen
   `best` (geomean over traces, 95% trace bootstrap interval, seeds pooled), over the base,
   unfinished jobs, and decision times (mean, max, searched asks over 50 ms); the same cut
   search with the ``ideal`` estimate beside it (unless ``--no-ideal``). ``--save DIR``
   writes each seed's search as a selector file (``palgym-value-search/1``) that
   ``python -m palgym.bench run --agent selector:PATH`` runs.

The defaults are the search chosen on validation: the cut of 20 asks or 160 rounds (the best
of three cuts run there) with a decision's 320 rounds spent by successive halving
(``RolloutSearch(halving=True)``: every rule 320 // (2k) rounds, the two best on to at most
160; 0.962x `best` on validation, as the uncut 160 rounds; shared equally, 0.975x). 320 rounds
keep a decision under 50 ms on this machine (docs/HEADROOM.md). The features, ``--p``,
``--pair-weight`` and ``--ridge`` were fixed on the training split. ``--split test`` measures
that choice, once.

    python benchmarks/value_search.py --cache C [--data-dir D] [--split validation]
        [--H 20] [--rounds 160] [--budget 320] [--halving | --no-halving] [--p 0.1]
        [--seeds 0 1 2] [--pair-weight 10] [--ridge 1] [--no-ideal] [--workers N]
        [--limit N] [--save DIR] [--output rows.jsonl]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from palgym.errors import PalgymError

sys.path.insert(0, str(Path(__file__).parent))
import online_search as online  # noqa: E402

from agents.selection.value import (  # noqa: E402
    FEATURES,
    collect,
    fit_value,
    regret,
)

EXPONENTS = (1.5, 2.0, 3.0)
"""The field's exponents and the base's (2, 96 h), as ``online_search.py``'s defaults."""
BASE_EXPONENT, FLOOR_H = 2.0, 96.0


_JOBS: list[Any] = []


def run_one(index: int) -> dict[str, Any]:
    """One episode's row for one estimate (module docstring, step 4;
    ``online_search.search_row`` with the estimate and the cut added)."""
    from agents.selection.search import RolloutSearch
    from agents.selection.value_entry import ValueSearch

    split, task, episode, best, name, estimate, horizon, rounds, budget, halving = _JOBS[index]
    rules = online.field(list(EXPONENTS))
    base = online.base_member(rules, list(EXPONENTS), BASE_EXPONENT, FLOOR_H)
    search = (RolloutSearch(rules, base, horizon, estimate=estimate, arrivals="known",
                            rounds=rounds, budget=budget, halving=halving)
              if isinstance(estimate, str) else
              ValueSearch(rules, base, estimate, EXPONENTS.index(BASE_EXPONENT), horizon, rounds,
                          budget, halving))
    row = online.search_row(split, task, episode, best, rules, base, search, f"{name} ")
    return {**row, "estimate": name, "H": horizon, "rounds": rounds, "budget": budget,
            "halving": halving}


def run_rows(workers: int) -> list[dict[str, Any]]:
    """:func:`run_one` of every prepared job (``priority_cross_cluster.map_jobs``)."""
    from priority_cross_cluster import map_jobs

    return map_jobs(run_one, len(_JOBS), workers)


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The printed lines of step 4: one per estimate, then the values' seeds pooled (one ratio
    per trace and seed, the bootstrap over those)."""
    lines = ["| estimate (episodes) | search / best | base / best | search / base | "
             "unfinished (base, search) | decision s: mean, max; searched asks over "
             f"{online.DECISION_LIMIT_S * 1000:g} ms |", "|---|---|---|---|---|---|"]
    names = list(dict.fromkeys(r["estimate"] for r in rows))
    values = [name for name in names if name.startswith("value")]
    groups = [(name, [name]) for name in names] + (
        [(f"value, {len(values)} seeds pooled", values)] if len(values) > 1 else [])
    for name, members in groups:
        part = [r for r in rows if r["estimate"] in members]
        best = np.array([r["best_avg_jct_s"] for r in part])
        base = np.array([r["base_avg_jct_s"] for r in part]) / best
        found = np.array([r["search_avg_jct_s"] for r in part]) / best
        asks = sum(r["asks"] for r in part)
        mean = sum(r["decision_mean_s"] * r["asks"] for r in part) / max(asks, 1)
        lines.append(
            f"| {name} ({len(part)}) | {online.cell(found)} | {online.cell(base)} | "
            f"{online.cell(found / base)} | "
            f"{sum(r['base_unfinished'] for r in part)}, "
            f"{sum(r['search_unfinished'] for r in part)} | {mean:.3f}, "
            f"{max(r['decision_max_s'] for r in part):.2f}; "
            f"{sum(r['searched_over_limit'] for r in part)} of "
            f"{sum(r['searched'] for r in part)} |")
    return lines


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit 2 naming the first option out of its range."""
    for flag, bad, rule in (("--H", args.H < 0, ">= 0"), ("--rounds", args.rounds < 1, ">= 1"),
                            ("--budget", args.budget == 1 or args.budget < 0, ">= 2 or 0"),
                            ("--p", not 0 < args.p <= 1, "in (0, 1]"),
                            ("--pair-weight", args.pair_weight < 0, ">= 0"),
                            ("--ridge", args.ridge <= 0, "> 0"),
                            ("--workers", args.workers < 1, ">= 1"),
                            ("--limit", args.limit is not None and args.limit < 1, ">= 1")):
        if bad:
            parser.error(f"{flag} must be {rule}, got {getattr(args, flag[2:].replace('-', '_'))}")


def main(argv: list[str] | None = None) -> int:
    from priority_cross_cluster import chosen_best, v2_parser

    from palgym.bench.roots import data_roots

    parser = v2_parser(__doc__)
    parser.add_argument("--split", nargs="*", default=["validation"],
                        choices=["validation", "test"],
                        help="the splits the cut search runs on (default: validation; none: "
                        "steps 1-3 only)")
    parser.add_argument("--H", type=int, default=20, help="the cut in asks: a rollout stops "
                        "once the base has decided H asks after the rollout's rule "
                        "(>= 0; default %(default)s)")
    parser.add_argument("--rounds", type=int, default=160, help="the most rounds a rollout "
                        "plays (>= 1; default %(default)s)")
    parser.add_argument("--budget", type=int, default=320, help="the most rounds a "
                        "decision's rollouts play together (>= 2, or 0: no bound; default "
                        "%(default)s)")
    parser.add_argument("--halving", action=argparse.BooleanOptionalAction, default=True,
                        help="spend --budget by successive halving where three rules or more "
                        "disagree, else share it equally (the search of step 4 only: the "
                        "value is fitted at the plain cut; default: halving)")
    parser.add_argument("--p", type=float, default=0.1, help="the share of training asks "
                        "sampled (0 < p <= 1; default %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="the samplings of training asks, one value each "
                        "(default: 0 1 2)")
    parser.add_argument("--pair-weight", type=float, default=10.0,
                        help="the weight of the differences in the fit (>= 0; "
                        "default %(default)s)")
    parser.add_argument("--ridge", type=float, default=1.0,
                        help="the ridge penalty on scaled features (> 0; default %(default)s)")
    parser.add_argument("--ideal", action=argparse.BooleanOptionalAction, default=True,
                        help="also the cut search with the ideal estimate (default: yes)")
    parser.add_argument("--workers", type=int, default=1,
                        help="forked processes for step 4 (>= 1; default %(default)s)")
    parser.add_argument("--limit", type=int, default=None,
                        help="the first N episodes of each task, in every split (>= 1)")
    parser.add_argument("--save", metavar="DIR", help="write each seed's value and cut as a "
                        "selector file DIR/value-search-seedS.json (palgym-value-search/1, "
                        "atomically; a missing folder is made) after the fits")
    parser.add_argument("--output", help="write one JSON row per episode and estimate here "
                        "(atomically, after the tables are printed; a missing folder is made)")
    args = parser.parse_args(argv)
    check_args(parser, args)
    args.budget = args.budget or None
    try:
        from agents.selection.runs import split_episodes
        from palgym.io.atomic import check_destination

        check_outputs(args, check_destination)
        roots = data_roots(args.data_dir, args.cache)

        def episodes(split: str, task: str) -> list[Any]:
            return split_episodes(split, suite=online.SUITE, task=task, data_dir=roots.data_dir,
                                  cache_dir=roots.cache_dir)[:args.limit]

        train = [e for task in online.TASKS for e in episodes("train", task)]
        values = report_fits(train, args)
        if args.save:
            save_values(values, args, len(train))
        if not args.split:
            return 0
        best = {task: chosen_best(online.FOLDER / "best.jsonl", task) for task in online.TASKS}
        estimates = [("ideal", "ideal")] * args.ideal + [
            (f"value seed {s}", w) for s, w in values.items()]
        _JOBS[:] = [(split, task, e, best[task], name, estimate, args.H, args.rounds,
                     args.budget, args.halving)
                    for name, estimate in estimates for split in args.split
                    for task in online.TASKS for e in episodes(split, task)]
        rows = run_rows(args.workers)
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"the cut search (H {args.H}, rounds {args.rounds}, budget {args.budget}, halving "
          f"{args.halving}) on "
          f"{args.split}: ratio of avg "
          f"JCT to each task's validation-chosen best ({best}); geomean [95% bootstrap "
          "interval]; base: the family's (2, 96 h)")
    if args.limit is not None:
        print(f"warning: --limit {args.limit}: the first {args.limit} episodes of each task")
    for line in table(rows):
        print(line)
    if any(r["search_unfinished"] + r["base_unfinished"] for r in rows):
        print("warning: jobs left unfinished (counted in the table)")
    if any(r["stuck_rollouts"] for r in rows):
        print("warning: some rollouts got stuck (priced inf, so never played)")
    return online.write_rows(rows, args.output)


def check_outputs(args: Any, check_destination: Any) -> None:
    """Refuse ``--output`` and ``--save`` before any run (PalgymError naming the option)."""
    if args.output:
        check_destination(args.output, "--output")
    if args.save and Path(args.save).exists() and not Path(args.save).is_dir():
        raise PalgymError(f"--save {args.save}: not a folder")


def save_values(values: dict[int, np.ndarray], args: Any, episodes: int) -> None:
    """Write each seed's :class:`agents.selection.value_entry.ValueSearch` to ``--save``."""
    from agents.selection.value_entry import ValueSearch, save_value_search

    rules = online.field(list(EXPONENTS))
    base = online.base_member(rules, list(EXPONENTS), BASE_EXPONENT, FLOOR_H)
    folder = Path(args.save)
    folder.mkdir(parents=True, exist_ok=True)
    for seed, weights in values.items():
        search = ValueSearch(rules, base, weights, EXPONENTS.index(BASE_EXPONENT), args.H,
                             args.rounds, args.budget, args.halving)
        path = save_value_search(folder / f"value-search-seed{seed}.json", search, {
            "method": "ridge least squares on rollouts played to the end of the known jobs "
                      "and their differences from the base's candidate",
            "script": "benchmarks/value_search.py", "suite": online.SUITE,
            "tasks": list(online.TASKS), "split": "train", "episodes": episodes,
            "seed": seed, "p": args.p, "pair_weight": args.pair_weight,
            "ridge": args.ridge})
        print(f"wrote {path}", file=sys.stderr)


def report_fits(train: list[Any], args: Any) -> dict[int, np.ndarray]:
    """Steps 1-3 for each seed: print the held-out regret table; return each seed's value
    fitted on all its training asks."""
    print(f"held-out regret on the training episodes (two folds by episode; mean over sampled "
          f"asks of the picked candidate's true cost / the least - 1); H {args.H}, rounds "
          f"{args.rounds}, budget {args.budget}, p {args.p}")
    print("| seed | fold | asks fitted, scored | base | ideal | learned value |")
    print("|---|---|---|---|---|---|")
    values = {}
    labels = sorted({e.label for e in train})
    for seed in args.seeds:
        started = time.perf_counter()
        rules = online.field(list(EXPONENTS))
        base = online.base_member(rules, list(EXPONENTS), BASE_EXPONENT, FLOOR_H)
        def progress(done: int, label: str, count: int, seed: int = seed) -> None:
            print(f"seed {seed}: training episode {done} of {len(train)} ({label}), {count} "
                  "asks sampled", file=sys.stderr, flush=True)

        asks = collect(train, rules, base, EXPONENTS.index(BASE_EXPONENT), args.H, args.rounds,
                       args.p, seed, progress, None if args.halving else args.budget)
        order = np.random.default_rng(seed).permutation(labels)
        for fold in (0, 1):
            held = set(order[fold::2])
            fitted = [a for a in asks if a.episode not in held]
            scored = [a for a in asks if a.episode in held]
            w = fit_value(fitted, args.pair_weight, args.ridge)
            print(f"| {seed} | {fold} | {len(fitted)}, {len(scored)} | "
                  f"{regret(scored, 'base'):.5f} | {regret(scored, 'ideal'):.5f} | "
                  f"{regret(scored, 'value', w):.5f} |", flush=True)
        values[seed] = fit_value(asks, args.pair_weight, args.ridge)
        print(f"seed {seed}: {len(asks)} asks in {time.perf_counter() - started:.0f} s; "
              "weights " + ", ".join(f"{name} {w:.1f}" for name, w in
                                       zip(FEATURES, values[seed], strict=True)),
              file=sys.stderr, flush=True)
    return values


if __name__ == "__main__":
    sys.exit(main())
