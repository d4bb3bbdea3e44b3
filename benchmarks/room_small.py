"""The room on the small-instance suite (palgym/data/small): per split, the validation-chosen
best heuristic, the hindsight search and the lower bound, each as a ratio to the proven optimum.

The field is every ``fifo``/``srtf``/``srsf`` x ``pal``/``pm-first``/``packed-non-sticky`` x no
/ first-fit / EASY backfilling (27 combinations); ``best`` is the one of lowest geomean average
JCT over the validation split's instances, then measured on each split. Ratios are geomeans
over the proven instances of a split (unproven ones are counted and left out), with a 95%
percentile bootstrap interval over instances (10,000 resamples, seed 0).

    python benchmarks/room_small.py [--selector FILE ...]

``--selector``: also each rule selector file (``agents.selection``, run with its aging floor
through :func:`palgym.rule_selection.run_selected_episode`) as a ratio to the optimum, and the
share of the gap between ``best`` and the optimum that it closes, (best - selector) / (best -
optimum) of the geomeans, per split; files given together are also pooled (geomean over
(selector, instance)).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from palgym import run_episode
from palgym.headroom.small import small_instance
from palgym.headroom.suite import read_suite


def interval(ratios: list[float], resamples: int = 10_000) -> tuple[float, float, float]:
    """Geomean of ``ratios`` and its 95% percentile bootstrap interval (over instances)."""
    logs = np.log(np.asarray(ratios))
    rng = np.random.default_rng(0)
    means = logs[rng.integers(0, logs.size, size=(resamples, logs.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return math.exp(logs.mean()), math.exp(low), math.exp(high)


def selector_rows(paths: list[str], rows: list[dict], episodes: dict, best_avg: dict
                  ) -> None:
    """Print each selector's (and, for several, their pooled) ratio to the optimum per split,
    and the gap it closes: (best - selector) / (best - optimum), geomeans over proven
    instances."""
    from agents.selection.selector import LinearSelector
    from palgym.rule_selection import run_selected_episode

    selectors = {path: LinearSelector.load(path) for path in paths}
    avg = {(path, seed): run_selected_episode(ep, s.rules, s).result.metrics.avg_jct_s
           for path, s in selectors.items() for seed, ep in episodes.items()}
    groups = [[p] for p in paths] + ([paths] if len(paths) > 1 else [])
    print(f"{'selector':<40} {'split':<11} {'entry / optimum':>26}  {'gap closed':>10}")
    for group in groups:
        label = group[0] if len(group) == 1 else f"pooled ({len(group)} files)"
        for split in ("validation", "test"):
            proven = [i for i in rows if i["split"] == split and i["status"] == "optimal"]
            g, low, high = interval([avg[p, i["seed"]] / i["optimum_avg_jct_s"]
                                     for p in group for i in proven])
            b = math.exp(np.mean([math.log(best_avg[i["seed"]] / i["optimum_avg_jct_s"])
                                  for i in proven]))
            closed = (b - g) / (b - 1.0) if b > 1.0 else float("nan")
            print(f"{label[-40:]:<40} {split:<11} {f'{g:.4f} [{low:.4f}, {high:.4f}]':>26}  "
                  f"{closed:>10.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--selector", nargs="*", default=[], metavar="FILE",
                        help="rule selector files to measure against the optimum")
    args = parser.parse_args(argv)
    suite = read_suite()
    rows = suite["instances"]
    field = [(o, p + s) for o in ("fifo", "srtf", "srsf")
             for p in ("pal", "pm-first", "packed-non-sticky") for s in ("", "+backfill", "+easy")]
    episodes = {item["seed"]: small_instance(item["seed"]).episode() for item in rows}
    avg = {(seed, o, p): run_episode(ep, p, o).metrics.avg_jct_s
           for seed, ep in episodes.items() for o, p in field}
    validation = [item["seed"] for item in rows if item["split"] == "validation"]
    score = {(o, p): np.mean([math.log(avg[s, o, p]) for s in validation]) for o, p in field}
    best = min(score, key=lambda k: (score[k], k))
    print(f"validation-chosen best of {len(field)}: {best[0]}/{best[1]}")
    print(f"{'split':<11} {'proven':>8}  {'best / optimum':>26}  {'search / optimum':>26}  "
          f"{'bound / optimum':>26}")
    for split in ("train", "validation", "test", "all"):
        chosen = [item for item in rows if split == "all" or item["split"] == split]
        proven = [item for item in chosen if item["status"] == "optimal"]
        cells = []
        for ratio in (lambda i: avg[i["seed"], best[0], best[1]] / i["optimum_avg_jct_s"],
                      lambda i: i["search_avg_jct_s"] / i["optimum_avg_jct_s"],
                      lambda i: i["lower_bound_avg_jct_s"] / i["optimum_avg_jct_s"]):
            g, low, high = interval([ratio(i) for i in proven])
            cells.append(f"{g:.4f} [{low:.4f}, {high:.4f}]")
        print(f"{split:<11} {len(proven):>3} of {len(chosen):<3}  " + "  ".join(
            f"{c:>26}" for c in cells))
    unproven = [item["name"] for item in rows if item["status"] != "optimal"]
    if args.selector:
        selector_rows(args.selector, rows, episodes,
                      {item["seed"]: avg[item["seed"], best[0], best[1]] for item in rows})
    if unproven:
        print(f"warning: {len(unproven)} instances without a proven optimum are left out of the "
              f"ratios: {', '.join(unproven)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
