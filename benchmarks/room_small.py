"""The room on the small-instance suite (palgym/data/small): per split, the validation-chosen
best heuristic, the hindsight search and the lower bound, each as a ratio to the proven optimum.

The field is every ``fifo``/``srtf``/``srsf`` x ``pal``/``pm-first``/``packed-non-sticky`` x no
/ first-fit / EASY backfilling (27 combinations); ``best`` is the one of lowest geomean average
JCT over the validation split's instances, then measured on each split. Ratios are geomeans
over the proven instances of a split (unproven ones are counted and left out), with a 95%
percentile bootstrap interval over instances (10,000 resamples, seed 0).

    python benchmarks/room_small.py
"""

from __future__ import annotations

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


def main() -> int:
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
    if unproven:
        print(f"warning: {len(unproven)} instances without a proven optimum are left out of the "
              f"ratios: {', '.join(unproven)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
