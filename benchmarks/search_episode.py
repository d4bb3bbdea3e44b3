"""Time one episode of the known-jobs rollout search with a learned value: the cut search of
``value_search.py`` (H 20, rounds 160; ``--budget``/``--halving`` as ``RolloutSearch`` takes
them) on one v2 episode, printing its average JCT, the rounds its rollouts simulated and the
episode's wall seconds. The value's weights are read from a ``palgym-value-search/1`` file.

It imports palgym and agents from the current folder first, so that the same script times
two checkouts side by side (the average JCT and rounds must agree; compare the seconds):

    farm-bench -n 3 --vs "sh -c 'cd OLD && exec python NEW/benchmarks/search_episode.py \\
        --cache C --value NEW/agents/pretrained/rule-selector/value-search-seed0.json'" \\
        -- sh -c 'cd NEW && exec python benchmarks/search_episode.py --cache C \\
        --value agents/pretrained/rule-selector/value-search-seed0.json'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "benchmarks")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", required=True, help="palgym-bench-v2's cache")
    parser.add_argument("--data-dir", default=os.environ.get("PALGYM_DATA_DIR"),
                        help="the public data (default $PALGYM_DATA_DIR)")
    parser.add_argument("--value", required=True, help="a palgym-value-search/1 file")
    parser.add_argument("--split", default="test", choices=["validation", "test"])
    parser.add_argument("--task", default="scheduling-clairvoyant")
    parser.add_argument("--trace", default="workload-4")
    parser.add_argument("--budget", type=int, default=None, help="rounds a decision")
    parser.add_argument("--halving", action="store_true")
    args = parser.parse_args(argv)

    import numpy as np
    import online_search as online

    from agents.priority.pretrained import ResponseRatio
    from agents.selection.runs import split_episodes
    from agents.selection.search import RolloutSearch
    from agents.selection.value import FEATURES, LinearValue
    from palgym.errors import PalgymError
    from palgym.rule_selection import run_selected_episode

    try:
        with open(args.value, encoding="utf-8") as handle:
            weights = json.load(handle)["value"]["weights"]
        value = LinearValue(np.array([weights[name] for name in FEATURES], float),
                            ResponseRatio())
    except (OSError, ValueError, KeyError, TypeError, PalgymError) as error:
        print(f"error: {args.value}: field value.weights: one number per feature "
              f"({', '.join(FEATURES)}) expected ({type(error).__name__}: {error})",
              file=sys.stderr)
        return 2
    try:
        episodes = [e for e in split_episodes(args.split, suite=online.SUITE, task=args.task,
                                              data_dir=args.data_dir, cache_dir=args.cache)
                    if e.label == args.trace]
    except (OSError, PalgymError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    exponents = [1.5, 2.0, 3.0]
    rules = online.field(exponents)
    base = online.base_member(rules, exponents, 2.0, 96.0)
    if not episodes:
        print(f"error: no {args.split} trace {args.trace!r} in {args.task}", file=sys.stderr)
        return 2
    extra = {} if args.budget is None else {"budget": args.budget, "halving": args.halving}
    search = RolloutSearch(rules, base, H=20, rounds=160, arrivals="known", estimate=value,
                           **extra)
    started = time.perf_counter()
    metrics = run_selected_episode(episodes[0].episode, rules, search,
                                   episodes[0].durations).result.metrics
    print(f"avg JCT {metrics.avg_jct_s} s, {search.stats.sim_rounds} rounds simulated, "
          f"{time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
