"""Benchmark: the policy-guided rollout search over rules (agents.selection.search) against
its base selector, on a palgym-bench split's episodes.

For each trace, base and horizon H it runs the base selector's episode and the search's
(:func:`agents.selection.search.run_search_episode`) and prints one row: the avg JCT (h) of
both over every measured job (an unfinished one counted up to the episode's end) and their
ratio, the unfinished jobs of the base (in the JSON) and of the search, the asks, the asks
searched (two or more rules left after the pre-filter), the rollouts, the asks where the search
played another rule than the base, the decision time per ask (mean and max, ms) and the wall
time of both episodes (s). A base is a rule of the field (a constant selector) or a selector
file of ``python -m agents.selection train`` (its own field). It asserts nothing.

    PALGYM_DATA_DIR=/path/to/data python benchmarks/selector_search.py \\
        --cache bench-cache/ --traces workload-4 sia-philly-gen-4 --H 10 30 \\
        [--base srtf/pal+backfill SELECTOR.json]
        [--regimes regimes/] [--split test] [--task dynamic-online --stragglers 1.3]
        [--output r.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agents.selection.runs import (
    DEFAULT_SUITE,
    DEFAULT_TASK,
    split_episodes,
    with_stragglers,
)
from agents.selection.search import DEFAULT_ESTIMATE, ESTIMATES, run_search_episode
from agents.selection.selector import LinearSelector
from palgym.errors import PalgymError
from palgym.io.atomic import atomic_write_text
from palgym.rule_selection import run_selected_episode
from palgym.rule_sets import ORDER_PLACEMENT_RULES


def _horizon(text: str) -> int | None:
    """``--H``'s value: an integer, or ``end`` for None (the error names the value)."""
    if text == "end":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"H must be an integer >= 0 or end, got {text!r}") \
            from None


def _bases(names: list[str]) -> list[tuple[str, LinearSelector]]:
    """(label, selector) per ``--base``: a rule of the default field, or a selector file."""
    bases = []
    for name in names:
        if name in ORDER_PLACEMENT_RULES:
            bases.append((name, LinearSelector.constant(ORDER_PLACEMENT_RULES,
                                                        ORDER_PLACEMENT_RULES.index(name))))
        elif name.endswith(".json"):
            bases.append((Path(name).name, LinearSelector.load(name)))
        else:
            raise PalgymError(f"--base {name!r}: give a rule of {list(ORDER_PLACEMENT_RULES)} "
                              "or a selector .json file")
    return bases


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table; 2 for a user mistake."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help="the public data (default $PALGYM_DATA_DIR)")
    parser.add_argument("--cache", help="palgym-bench's generated files (bench prepare)")
    parser.add_argument("--regimes", help="a folder of `python -m traces regimes`: its split's "
                        "traces join the suite's")
    parser.add_argument("--suite", default=DEFAULT_SUITE)
    parser.add_argument("--task", default=DEFAULT_TASK)
    parser.add_argument("--split", default="test")
    parser.add_argument("--traces", nargs="+", help="trace ids of the split (default all)")
    parser.add_argument("--base", nargs="+", default=["srtf/pal+backfill"],
                        help="rules of the default field or selector JSON files")
    parser.add_argument("--H", nargs="+", type=_horizon, default=[10],
                        help="asks after the first (integers >= 0, or end)")
    parser.add_argument("--estimate", choices=ESTIMATES, default=DEFAULT_ESTIMATE)
    parser.add_argument("--no-prefilter", action="store_true")
    parser.add_argument("--stragglers", type=float, metavar="RATIO",
                        help="straggler migration for the base and the search (online belief; "
                        "BeliefOptions.straggler_ratio)")
    parser.add_argument("--output", help="rows as JSON, written atomically")
    args = parser.parse_args(argv)
    try:
        bases = _bases(args.base)
        episodes = split_episodes(args.split, suite=args.suite, task=args.task,
                                  data_dir=args.data_dir or os.environ.get("PALGYM_DATA_DIR"),
                                  cache_dir=args.cache, regimes=args.regimes)
        if args.stragglers is not None:
            episodes = with_stragglers(episodes, args.stragglers)
        known = [e.label for e in episodes]
        wanted = args.traces or known
        missing = [t for t in wanted if t not in known]
        if missing:
            raise PalgymError(f"--traces: {missing} not in the {args.split} split {known}")
        rows: list[dict[str, Any]] = []
        header = (f"{'trace':18} {'base':20} {'H':>4} {'base h':>7} {'search h':>8} "
                  f"{'ratio':>6} {'unf':>3} {'asks':>5} {'srch':>5} {'rollouts':>8} {'chg':>4} "
                  f"{'dec ms':>7} {'max ms':>7} {'base s':>7} {'wall s':>7}")
        print(header, flush=True)
        for labelled in (e for e in episodes if e.label in wanted):
            for label, base in bases:
                started = time.perf_counter()
                reference = run_selected_episode(labelled.episode, base.rules, base,
                                                 labelled.durations)
                base_s = time.perf_counter() - started
                base_h = reference.result.metrics.censored_avg_jct_s / 3600
                base_left = (reference.result.metrics.num_jobs
                             - reference.result.metrics.num_completed)
                for horizon in args.H:
                    out = run_search_episode(labelled.episode, base.rules, base, H=horizon,
                                             estimate=args.estimate,
                                             prefilter=not args.no_prefilter,
                                             durations=labelled.durations)
                    stats, metrics = out.stats, out.selected.result.metrics
                    search_h = metrics.censored_avg_jct_s / 3600
                    row = {"trace": labelled.label, "base": label,
                           "H": "end" if horizon is None else horizon,
                           "base_avg_jct_h": base_h, "search_avg_jct_h": search_h,
                           "unfinished": metrics.num_jobs - metrics.num_completed,
                           "base_unfinished": base_left,
                           "asks": stats.asks, "searched": stats.searched,
                           "rollouts": stats.rollouts, "changed": stats.changed,
                           "sim_rounds": stats.sim_rounds,
                           "decision_mean_s": stats.decision_mean_s,
                           "decision_max_s": stats.decision_max_s,
                           "base_wall_s": base_s, "wall_s": out.wall_s}
                    rows.append(row)
                    print(f"{row['trace']:18} {label[:20]:20} {row['H']!s:>4} {base_h:7.3f} "
                          f"{search_h:8.3f} {search_h / base_h:6.3f} {row['unfinished']:3d} "
                          f"{stats.asks:5d} "
                          f"{stats.searched:5d} {stats.rollouts:8d} {stats.changed:4d} "
                          f"{1e3 * stats.decision_mean_s:7.1f} "
                          f"{1e3 * stats.decision_max_s:7.1f} {base_s:7.2f} {out.wall_s:7.1f}",
                          flush=True)
        if args.output:
            atomic_write_text(args.output, json.dumps(rows, indent=1) + "\n")
    except PalgymError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
