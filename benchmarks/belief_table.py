"""PAL under each belief in the dynamic world: oracle truth vs stale profile vs online estimate.

For every trace (the bundled traces; with ``--data-dir`` also Sia-Philly workloads 1-5) and
seed, one episode of the preset (default ``dynamic``) runs packed-sticky and PAL with the
``oracle``, ``stale`` and ``online`` beliefs (:mod:`palgym.policies.belief`; PAL_MODEL section
10), all on the identical episode. Printed: per trace the average JCTs and refits, then the
geomean of avgJCT(PAL, belief) / avgJCT(packed-sticky) with a trace-level 95% bootstrap
interval (whole traces resampled, :func:`palgym.bench.stats.bootstrap_geomean`), and the
share of PAL's oracle gain that the stale and the online beliefs keep. Unfinished (truncated)
episodes are counted and shown; their censored average JCT enters the ratios, with a warning.

Usage::

    python benchmarks/belief_table.py                       # bundled traces, seed 0
    python benchmarks/belief_table.py --data-dir "$PALGYM_DATA_DIR" --workers 2 \\
        --json belief-table.json
"""

from __future__ import annotations

import argparse
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from public_data import check_arguments, finish_table  # noqa: E402

from palgym import make_episode, preset, read_sia_trace, run_episode  # noqa: E402
from palgym.bench.stats import bootstrap_geomean  # noqa: E402
from palgym.bundled import bundled_trace_paths  # noqa: E402
from palgym.simulate import slowdown_factors  # noqa: E402

BELIEFS = ("oracle", "stale", "online")
CONTENDERS = ("packed-sticky", *(f"pal-{b}" for b in BELIEFS))


def _run(job: tuple[str, str, int]) -> dict[str, Any]:
    """One (trace path, preset, seed): every contender on the identical episode."""
    path, preset_name, seed = job
    trace = read_sia_trace(path)
    episode = make_episode(trace, config=preset(preset_name), seed=seed)
    factors = slowdown_factors(episode)
    row: dict[str, Any] = {"trace": trace.name, "seed": seed,
                           "episode_hash": episode.episode_hash()}
    runs = [("packed-sticky", run_episode(episode, "packed-sticky", factors=factors))]
    runs += [(f"pal-{b}", run_episode(episode, "pal", factors=factors, belief=b))
             for b in BELIEFS]
    for name, result in runs:
        metrics = result.metrics
        avg = metrics.censored_avg_jct_s if metrics.truncated else metrics.avg_jct_s
        row[name] = {"avg_jct_s": avg, "truncated": bool(metrics.truncated),
                     "num_completed": metrics.num_completed, "num_jobs": metrics.num_jobs,
                     "refits": result.refits, "belief": result.belief}
    return row


def _summary(rows: list[dict[str, Any]], resamples: int) -> dict[str, Any]:
    groups = [row["trace"] for row in rows]
    base = np.array([row["packed-sticky"]["avg_jct_s"] for row in rows])
    out: dict[str, Any] = {}
    for belief in BELIEFS:
        ratios = np.array([row[f"pal-{belief}"]["avg_jct_s"] for row in rows]) / base
        s = bootstrap_geomean(ratios, groups=groups, num_resamples=resamples)
        out[belief] = {"geomean_ratio": s.geomean, "ci_low": s.ci_low, "ci_high": s.ci_high,
                       "num_units": s.num_units}
    gain = 1.0 - out["oracle"]["geomean_ratio"]
    for belief in ("stale", "online"):
        kept = (1.0 - out[belief]["geomean_ratio"]) / gain if gain > 0 else math.nan
        out[belief]["share_of_oracle_gain"] = kept
    return out


def _print_row(row: dict[str, Any]) -> int:
    """Print one trace's row; returns its number of unfinished episodes."""
    cells, unfinished = [], 0
    for name in CONTENDERS:
        cell = row[name]
        unfinished += int(cell["truncated"])
        mark = "*" if cell["truncated"] else ""
        refits = f" [{cell['refits']}]" if name != "packed-sticky" else ""
        cells.append(f"{cell['avg_jct_s'] / 3600:.3f}{mark}{refits}")
    print(f"{row['trace']:<22}{row['seed']:>5}" + "".join(f"{c:>20}" for c in cells), flush=True)
    return unfinished


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="dynamic", help="preset (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, help="public data folder (adds workloads 1-5)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="episode seeds (default: 0)")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes running the traces (default: %(default)s)")
    parser.add_argument("--resamples", type=int, default=10_000,
                        help="bootstrap resamples (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="write rows and summary here (atomically)")
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    paths = [str(p) for p in bundled_trace_paths().values()]
    if args.data_dir is not None:
        folder = args.data_dir / "traces" / "sia_philly_pal"
        paths += [str(folder / f"workload-{k}.csv") for k in range(1, 6)]
    jobs = [(path, args.preset, seed) for path in paths for seed in args.seeds]
    print(f"preset {args.preset}, seeds {args.seeds}; average JCT (h), PAL refits in brackets")
    print(f"{'trace':<22}{'seed':>5}" + "".join(f"{c:>20}" for c in CONTENDERS), flush=True)
    rows: list[dict[str, Any]] = []
    unfinished = 0
    with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
        for row in pool.map(_run, jobs):  # in job order, each printed as it is known
            rows.append(row)
            unfinished += _print_row(row)
    summary = _summary(rows, args.resamples)
    print("\ngeomean avgJCT(PAL, belief) / avgJCT(packed-sticky), trace-level 95% bootstrap:")
    for belief, s in summary.items():
        share = s.get("share_of_oracle_gain")
        kept = "" if share is None else f"  keeps {share:.0%} of the oracle gain"
        print(f"  pal-{belief:<7} {s['geomean_ratio']:.4f} [{s['ci_low']:.4f}, "
              f"{s['ci_high']:.4f}] over {s['num_units']} traces{kept}")
    finish_table(args.json, unfinished, {"preset": args.preset, "seeds": args.seeds,
                                         "rows": rows, "summary": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
