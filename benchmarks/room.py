"""Where the room is, on whole traces: the validation-chosen best heuristic, the hindsight
search's best-known schedule and the lower bound, per test trace.

For a world (``--preset``) and the bundled traces' splits (validation ``sia-philly-gen-3``,
test ``sia-philly-gen-4``, or ``--validation`` / ``--test`` trace files), it

1. runs the field (``--orders`` x ``--placements``, each with and without first-fit and EASY
   backfilling, and the aging guards of ``--guard-bases`` at ``--guard-hours`` switching to
   ``fifo/pal+easy``, :mod:`palgym.policies.guards`) on the validation traces and picks the
   best (geomean average JCT);
2. on each test trace, runs that choice, the hindsight search
   (:func:`palgym.headroom.search.hindsight_search`, ``--evaluations`` candidates, started
   from the field's best on that trace) and the lower bound
   (:func:`palgym.headroom.lower_bound`);
3. prints per test trace: best-known (the better of the search and the field's best, which
   is a schedule too), best / best-known (the room a learned scheduler could take at least),
   bound / best (no schedule beats it), and the interval ``[bound, best-known]`` in which the
   optimum lies; ``--json FILE`` writes the rows, each best-known schedule
   included (the flat palgym-schedule/1 record, replayable with
   :func:`palgym.schedule_record.replay_schedule`).

Every value is a replayed engine run; an unfinished run is counted and never chosen.

    python benchmarks/room.py --preset pal-artifact --evaluations 400
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from palgym import make_episode, preset, read_sia_trace, run_episode
from palgym.bundled import bundled_trace_paths
from palgym.headroom import lower_bound
from palgym.headroom.search import hindsight_search
from palgym.io.atomic import atomic_write_text
from palgym.schedule_record import record_episode, replay_schedule


def _episodes(paths: list[str], config_name: str, variability_data: str | None) -> list:
    bundled = bundled_trace_paths()
    return [make_episode(read_sia_trace(bundled.get(p, p)), config=preset(config_name),
                         variability_data=variability_data) for p in paths]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="pal-artifact")
    parser.add_argument("--validation", nargs="+", default=["sia-philly-gen-3"])
    parser.add_argument("--test", nargs="+", default=["sia-philly-gen-4"])
    parser.add_argument("--orders", nargs="+", default=["fifo", "srtf", "srsf"])
    parser.add_argument("--placements", nargs="+", default=["pal", "pm-first",
                                                            "packed-non-sticky"])
    parser.add_argument("--guard-bases", nargs="*", default=["srtf/pal+backfill",
                                                             "srsf/pal+backfill"])
    parser.add_argument("--guard-hours", nargs="*", type=float, default=[8, 16, 24, 32, 48])
    parser.add_argument("--evaluations", type=int, default=400,
                        help="search candidates per test trace (0: no search)")
    parser.add_argument("--variability-data", default=None,
                        help="a measurement folder (e.g. $PALGYM_DATA_DIR/variability/"
                             "longhorn_pal); default: the preset's bundled profile")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--round-cap", type=float, default=3.0,
                        help="stop a candidate at this many times the longest start's rounds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    field = [(o, p + s) for o in args.orders for p in args.placements
             for s in ("", "+backfill", "+easy")]
    field += [(base.split("/", 1)[0], f"{base.split('/', 1)[1]}+age={h:g}h:fifo/pal+easy")
              for base in args.guard_bases for h in args.guard_hours]
    unfinished = 0
    scores = {}
    for k, (order, placement) in enumerate(field):
        print(f"  field {k + 1}/{len(field)}: {order}/{placement}", file=sys.stderr, flush=True)
        logs = []
        for episode in _episodes(args.validation, args.preset, args.variability_data):
            m = run_episode(episode, placement, order).metrics
            unfinished += m.truncated
            logs.append(math.inf if m.truncated else math.log(m.avg_jct_s))
        scores[f"{order}/{placement}"] = sum(logs) / len(logs)
    best_name = min(scores, key=lambda k: scores[k])
    print(f"validation-chosen best of {len(field)}: {best_name}", flush=True)
    rows = []
    for episode in _episodes(args.test, args.preset, args.variability_data):
        order, placement = best_name.split("/", 1)
        field_run = record_episode(episode, placement, order)  # a guard's schedule too
        best = field_run.result.metrics
        unfinished += best.truncated
        started = time.perf_counter()
        def report(count: int, value: float, name: str = episode.trace.name,
                   began: float = started) -> None:
            print(f"  {name}: {count}/{args.evaluations} candidates, best {value / 3600:.3f} h, "
                  f"{time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)

        search = hindsight_search(episode, evaluations=args.evaluations, seed=args.seed,
                                  round_cap_factor=args.round_cap, report=report)
        wall = time.perf_counter() - started
        replayed = replay_schedule(episode, search.schedule).metrics
        assert replayed.avg_jct_s == search.avg_jct_s
        assert replay_schedule(episode, field_run.record).metrics == best
        bound = lower_bound(episode)
        # the field's best is a recorded schedule too: the better of the two is best-known
        known = search.schedule if search.avg_jct_s <= best.avg_jct_s else field_run.record
        best_known = min(search.avg_jct_s, best.avg_jct_s)
        row = {"trace": episode.trace.name, "preset": args.preset, "best": best_name,
               "best_avg_jct_s": best.avg_jct_s, "best_truncated": best.truncated,
               "best_known_avg_jct_s": best_known, "search_avg_jct_s": search.avg_jct_s,
               "search_start": search.start,
               "search_start_avg_jct_s": search.start_avg_jct_s,
               "search_evaluations": search.evaluations, "search_wall_s": round(wall, 1),
               "lower_bound_avg_jct_s": bound.avg_jct_s, "bound_binding": bound.binding,
               "schedule": known.to_ints()}
        rows.append(row)
        print(f"{row['trace']}: best {best.avg_jct_s / 3600:.3f} h, best-known "
              f"{best_known / 3600:.3f} h (search {search.avg_jct_s / 3600:.3f} h, "
              f"{search.evaluations} candidates, {wall:.0f} s; "
              f"start {search.start} {search.start_avg_jct_s / 3600:.3f} h), bound "
              f"{bound.avg_jct_s / 3600:.3f} h ({bound.binding}); best / best-known "
              f"{best.avg_jct_s / best_known:.3f}, bound / best "
              f"{bound.avg_jct_s / best.avg_jct_s:.3f}", flush=True)
    if unfinished:
        print(f"warning: {unfinished} heuristic runs left jobs unfinished (never chosen)",
              file=sys.stderr)
    if args.json:
        atomic_write_text(args.json, json.dumps({"unfinished_heuristic_runs": unfinished,
                                                 "rows": rows}, indent=1, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
