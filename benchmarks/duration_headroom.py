"""What knowing durations is worth: queue orders from none to clairvoyance, on the test split.

On every test trace (the bundled ``test`` split; with ``--data-dir`` also Sia-Philly workloads
4-5, the held-out traces of the ``sia-w123.json`` set of docs/REPRODUCING.md) and seed, one
episode of the preset runs the placement (default ``pal``) under:

- the non-clairvoyant orders ``fifo``, ``las``, ``tiresias`` (no duration information);
- ``gittins``: the Gittins index of attained GPU-seconds under per-class service priors fitted
  on the *training* traces (bundled ``train``; with ``--data-dir`` also workloads 1-3), i.e.
  what a scheduler can know from the duration distribution of past jobs
  (:mod:`palgym.policies.gittins`);
- the clairvoyant orders ``srtf`` and ``srsf`` (each job's true remaining work).

Printed: per trace the average JCTs (h), then per order the geomean of avgJCT(order) /
avgJCT(best non-clairvoyant order) with a trace-level 95% bootstrap interval (whole traces
resampled, :func:`palgym.bench.stats.bootstrap_geomean`). The best non-clairvoyant order
is chosen on the validation split (bundled ``validation``), never on the test traces. The
clairvoyant rows bound what a scheduler that does not know durations can reach by ordering.
Unfinished (truncated) episodes are counted and shown; their censored average JCT enters the
ratios, with a warning.

Usage::

    python benchmarks/duration_headroom.py                      # bundled traces, seed 0
    python benchmarks/duration_headroom.py --data-dir "$PALGYM_DATA_DIR" --json headroom.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from public_data import check_arguments, finish_table  # noqa: E402

from palgym import make_episode, preset, read_sia_trace, run_episode  # noqa: E402
from palgym.bench.stats import bootstrap_geomean  # noqa: E402
from palgym.policies.base import QueueOrder  # noqa: E402
from palgym.policies.gittins import GittinsOrder, ServicePrior  # noqa: E402
from palgym.sim.workload import Trace  # noqa: E402
from palgym.simulate import slowdown_factors  # noqa: E402
from palgym.tracesets import split_traces  # noqa: E402

NON_CLAIRVOYANT = ("fifo", "las", "tiresias")
ORDERS = (*NON_CLAIRVOYANT, "gittins", "srtf", "srsf")


def _traces(data_dir: Path | None, split: str) -> list[Trace]:
    traces = split_traces("bundled", split)
    if data_dir is not None and split != "validation":
        folder = data_dir / "traces" / "sia_philly_pal"
        numbers = (1, 2, 3) if split == "train" else (4, 5)
        traces += [read_sia_trace(folder / f"workload-{k}.csv") for k in numbers]
    return traces


def _avg(result: Any) -> tuple[float, bool]:
    metrics = result.metrics
    return (metrics.censored_avg_jct_s if metrics.truncated else metrics.avg_jct_s,
            bool(metrics.truncated))


def _run(trace: Trace, preset_name: str, policy: str, seed: int, prior: ServicePrior,
         orders: tuple[str, ...]) -> dict[str, Any]:
    """Every order on the identical episode of ``trace``."""
    episode = make_episode(trace, config=preset(preset_name), seed=seed)
    factors = slowdown_factors(episode)
    row: dict[str, Any] = {"trace": trace.name, "seed": seed,
                           "episode_hash": episode.episode_hash()}
    for name in orders:
        order: str | QueueOrder = GittinsOrder(prior) if name == "gittins" else name
        avg, truncated = _avg(run_episode(episode, policy, order, factors=factors))
        row[name] = {"avg_jct_s": avg, "truncated": truncated}
    return row


def _best_on_validation(preset_name: str, policy: str, seeds: list[int]) -> str:
    """The non-clairvoyant order with the lowest geomean average JCT on validation."""
    rows = [_run(t, preset_name, policy, s, ServicePrior((np.ones(1),) * 4), NON_CLAIRVOYANT)
            for t in split_traces("bundled", "validation") for s in seeds]
    score = {o: float(np.mean([np.log(r[o]["avg_jct_s"]) for r in rows]))
             for o in NON_CLAIRVOYANT}
    return min(NON_CLAIRVOYANT, key=lambda o: (score[o], o))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="default", help="preset (default: %(default)s)")
    parser.add_argument("--policy", default="pal", help="placement (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, help="public data folder (adds workloads 1-3 to "
                        "the prior's training traces, 4-5 to the test traces)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="episode seeds")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--json", type=Path, help="write rows and summary here (atomically)")
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    train = _traces(args.data_dir, "train")
    prior = ServicePrior.from_traces(train)
    best = _best_on_validation(args.preset, args.policy, args.seeds)
    print(f"preset {args.preset}, placement {args.policy}, seeds {args.seeds}; Gittins prior "
          f"from {len(train)} training traces; best non-clairvoyant order on validation: {best}")
    print(f"{'trace':<22}{'seed':>5}" + "".join(f"{o:>10}" for o in ORDERS), flush=True)
    rows, unfinished = [], 0
    for trace in _traces(args.data_dir, "test"):
        for seed in args.seeds:
            row = _run(trace, args.preset, args.policy, seed, prior, ORDERS)
            rows.append(row)
            cells = [f"{row[o]['avg_jct_s'] / 3600:.3f}{'*' if row[o]['truncated'] else ''}"
                     for o in ORDERS]
            unfinished += sum(row[o]["truncated"] for o in ORDERS)
            print(f"{row['trace']:<22}{seed:>5}" + "".join(f"{c:>10}" for c in cells),
                  flush=True)
    groups = [row["trace"] for row in rows]
    base = np.array([row[best]["avg_jct_s"] for row in rows])
    summary: dict[str, Any] = {}
    print(f"\ngeomean avgJCT(order) / avgJCT({best}), trace-level 95% bootstrap:")
    for order in ORDERS:
        ratios = np.array([row[order]["avg_jct_s"] for row in rows]) / base
        s = bootstrap_geomean(ratios, groups=groups, num_resamples=args.resamples)
        summary[order] = {"geomean_ratio": s.geomean, "ci_low": s.ci_low, "ci_high": s.ci_high,
                          "num_units": s.num_units}
        print(f"  {order:<9} {s.geomean:.4f} [{s.ci_low:.4f}, {s.ci_high:.4f}] over "
              f"{s.num_units} traces")
    finish_table(args.json, unfinished, {
        "preset": args.preset, "policy": args.policy, "seeds": args.seeds,
        "best_non_clairvoyant": best, "prior": prior.source, "rows": rows, "summary": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
