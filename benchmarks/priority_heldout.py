"""Priority orders against the 48 h guard on held-out regime traces that no training run used:
the regimes' training seeds from ``--first-seed`` on (e.g. 1004-1015 of a collection written with
``--train 16``, when the orders were trained on seeds 1000-1003), each order with and without
the 48 h floor (:func:`agents.priority.train.run_weights`).

Per order: the geomean over traces of avg JCT / avg JCT of ``srsf/pal+backfill+age=48h:fifo/
pal+easy`` (each over the episode's completed jobs), its 95% percentile bootstrap interval over
traces (:func:`palgym.bench.stats.bootstrap_geomean`: 10,000 resamples, seed 0) and the
unfinished jobs, which are counted and shown.

    python benchmarks/priority_heldout.py --cache C --regimes regimes16/ --first-seed 1004 \\
        agents/pretrained/priority/aging-priority-seed{0,1,2}.json
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from agents.priority.order import read_order
from agents.priority.train import run_weights
from palgym.bench.stats import bootstrap_geomean
from palgym.errors import PalgymError
from palgym.simulate import run_episode

GUARD = ("srsf", "pal+backfill+age=48h:fifo/pal+easy")
HAND = (1.0, 0.0, -2.0, 0.0, 0.0)


def main(argv: list[str] | None = None) -> int:
    from agents.selection.runs import split_episodes
    from palgym.bench.roots import data_roots

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("orders", nargs="*", help="trained order files (the hand rule is added)")
    parser.add_argument("--cache", help="palgym-bench-v2's cache (default $PALGYM_BENCH_CACHE)")
    parser.add_argument("--data-dir", help="the public data (default $PALGYM_DATA_DIR)")
    parser.add_argument("--regimes", required=True, help="a regime collection")
    parser.add_argument("--first-seed", type=int, default=1004)
    args = parser.parse_args(argv)
    try:
        roots = data_roots(args.data_dir, args.cache)
        episodes = [e for e in split_episodes(
            "train", suite="palgym-bench-v2", task="scheduling-regimes",
            data_dir=roots.data_dir, cache_dir=roots.cache_dir, regimes=args.regimes)
            if e.stratum != "palgym-bench-v2"
            and int(e.label.rsplit("-", 1)[1]) >= args.first_seed]
        orders = {"hand rule (1, 0, -2, 0, 0)": HAND}
        orders.update({path: read_order(path)[0] for path in args.orders})
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not episodes:
        print(f"error: no regime training trace from seed {args.first_seed} in {args.regimes}",
              file=sys.stderr)
        return 2
    ref = np.array([run_episode(e.episode, GUARD[1], GUARD[0], durations=e.durations)
                    .metrics.avg_jct_s for e in episodes])
    print(f"{len(episodes)} held-out traces; ratio to {GUARD[0]}/{GUARD[1]}")
    for name, weights in orders.items():
        for floor in (None, 48.0):
            runs = [run_weights(e, "pal+backfill", weights, floor_hours=floor) for e in episodes]
            summary = bootstrap_geomean(np.array([r[0] for r in runs]) / ref)
            print(f"{name} {'no floor' if floor is None else '48 h floor'}: "
                  f"{summary.geomean:.4f} [{summary.ci_low:.4f}, {summary.ci_high:.4f}], "
                  "unfinished jobs "
                  f"{sum(r[1] for r in runs)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
