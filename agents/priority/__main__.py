"""``python -m agents.priority train|grid``: train a linear priority order by the cross-entropy
method (:mod:`agents.priority.train`), or score the one-parameter response-ratio orders
(weights (1, 0, -a, 0, 0)) on the validation episodes (the hand rule of the same family).

The episodes are ``palgym-bench-v2``'s ``scheduling-clairvoyant`` split plus the same split of a
regime collection (``python -m traces regimes``), as :func:`agents.selection.runs.split_episodes`
builds them. Bad input exits 2 with the reason; the output is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from agents.priority.order import FEATURES, SRSF_WEIGHTS, save_order
from agents.priority.train import UNFINISHED_PENALTY, score, train_cem
from palgym.errors import PalgymError
from palgym.simulate import run_episode

SUITE = "palgym-bench-v2"
TASK = "scheduling-clairvoyant"
REFERENCE = "srsf/pal+backfill+age=48h:fifo/pal+easy"
"""v2's validation-chosen best on its scheduling tasks' regimes (the objective's reference)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m agents.priority", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("train", "grid"):
        p = sub.add_parser(name)
        p.add_argument("--cache", help="the suite's cache folder (palgym.bench prepare; "
                       "default $PALGYM_BENCH_CACHE)")
        p.add_argument("--data-dir", help="the public data folder (default $PALGYM_DATA_DIR)")
        p.add_argument("--regimes", help="a regime collection (python -m traces regimes)")
        p.add_argument("--per-regime", type=int, default=None,
                       help="training traces per regime (default: all)")
        p.add_argument("--placement", default="pal+backfill")
        p.add_argument("--reference", default=REFERENCE,
                       help=f"ORDER/PLACEMENT of the objective's reference (default {REFERENCE})")
        p.add_argument("--workers", type=int, default=1)
        p.add_argument("--floor", type=float, default=None, metavar="HOURS",
                       help="train and score the order under a starvation floor: FIFO with "
                       "EASY backfilling once a job has queued HOURS (default: none)")
    train = sub.choices["train"]
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--iterations", type=int, default=6)
    train.add_argument("--population", type=int, default=12)
    train.add_argument("--elite", type=int, default=4)
    train.add_argument("--start", type=float, nargs=len(FEATURES), default=list(SRSF_WEIGHTS),
                       metavar="W", help=f"the first mean's weights ({', '.join(FEATURES)}); "
                       "default SRSF's")
    train.add_argument("--output", required=True, help="the trained order's JSON file")
    grid = sub.choices["grid"]
    grid.add_argument("--a", type=float, nargs="+", default=[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0])
    return parser


def _episodes(args: argparse.Namespace, split: str, per_regime: int | None) -> list:
    from agents.selection.runs import split_episodes
    from palgym.bench.roots import data_roots

    roots = data_roots(args.data_dir, args.cache)  # --data-dir, --cache or their variables
    return split_episodes(split, suite=SUITE, task=TASK, data_dir=roots.data_dir,
                          cache_dir=roots.cache_dir, regimes=args.regimes,
                          per_regime=per_regime)


def _reference(episodes: Sequence, rule: str) -> np.ndarray:
    order, _, placement = rule.partition("/")
    out = []
    for e in episodes:
        metrics = run_episode(e.episode, placement, order, durations=e.durations).metrics
        if metrics.num_completed < metrics.num_jobs:
            raise PalgymError(f"the reference {rule} leaves jobs unfinished on {e.label}")
        out.append(metrics.avg_jct_s)
    return np.array(out, dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        validation = _episodes(args, "validation", None)
        ref_val = _reference(validation, args.reference)

        def score_val(w: np.ndarray) -> np.ndarray:
            return score(validation, args.placement, w, ref_val, args.workers, args.floor)

        if args.command == "grid":
            for a in args.a:
                value = score_val(np.array([[1.0, 0.0, -a, 0.0, 0.0]]))[0]
                print(f"a = {a:g}: validation ln ratio {value:+.4f} "
                      f"(geomean ratio {np.exp(value):.4f} to {args.reference})", flush=True)
            return 0
        train = _episodes(args, "train", args.per_regime)
        ref_train = _reference(train, args.reference)
        print(f"{len(train)} training and {len(validation)} validation episodes", flush=True)
        weights, log = train_cem(
            lambda w: score(train, args.placement, w, ref_train, args.workers, args.floor),
            score_val,
            iterations=args.iterations, population=args.population, elite=args.elite,
            seed=args.seed, start=args.start, progress=lambda line: print(line, flush=True))
    except (PalgymError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    record = {"method": "cross-entropy", "seed": args.seed, "iterations": args.iterations,
              "population": args.population, "elite": args.elite, "start": args.start,
              "floor_hours": args.floor,
              "suite": SUITE, "task": TASK,
              "regimes": args.regimes is not None, "per_regime": args.per_regime,
              "train_episodes": [e.label for e in train],
              "validation_episodes": [e.label for e in validation],
              "reference": args.reference, "unfinished_penalty": UNFINISHED_PENALTY,
              "curve": {"means": log.means, "train_best": log.train_best,
                        "validation": log.validation}, "kept_iteration": log.kept,
              "wall_s": round(log.wall_s, 1), "features": list(FEATURES)}
    save_order(args.output, weights, args.placement, record)
    print(f"kept iteration {log.kept} (validation {log.validation[log.kept]:+.4f}): "
          f"{dict(zip(FEATURES, np.round(weights, 4).tolist(), strict=True))} -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
