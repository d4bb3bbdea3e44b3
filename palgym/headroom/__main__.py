"""``python -m palgym.headroom`` (``palgym headroom``): build the small-instance suite of
exact optima (docs/HEADROOM.md; needs the ``exact`` extra, OR-Tools).

    python -m palgym.headroom small --seeds 0-69 --output palgym-small-v1.json \\
        --time-limit 60 --jobs 2
    python -m palgym.headroom small --seeds 0-69 --resume palgym-small-v1.json \\
        --output palgym-small-v2.json --time-limit 120
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from palgym.errors import PalgymError


def _seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        try:
            seeds.extend(range(int(low), int(high or low) + 1))
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"seeds: {part!r} is not N or N-M") from error
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError("seeds: give integers >= 0")
    return seeds


def _solve_one(seed: int, time_limit_s: float, workers: int, evaluations: int,
               known: dict[str, Any] | None = None) -> dict[str, Any]:
    from palgym.headroom.bound import lower_bound
    from palgym.headroom.exact import ExactResult, solve_exact
    from palgym.headroom.search import hindsight_search
    from palgym.headroom.small import small_instance
    from palgym.headroom.suite import split_of

    instance = small_instance(seed)
    episode = instance.episode()
    search = hindsight_search(episode, evaluations=evaluations, seed=0)
    if known is not None and known["status"] == "optimal":  # proven: no solve again
        exact = ExactResult("optimal", known["optimum_avg_jct_s"], known["solver_lower_bound_s"],
                            known["schedule"], known["solver_wall_s"], 0)
    else:
        upper = search.schedule
        if known is not None and known["optimum_avg_jct_s"] < search.avg_jct_s:
            upper = known["schedule"]  # an earlier build's better schedule: the new hint
        exact = solve_exact(episode, upper=upper, time_limit_s=time_limit_s, workers=workers)
    if exact.schedule is None:
        raise PalgymError(f"{instance.name}: no schedule")
    return {
        "name": instance.name, "seed": seed, "split": split_of(seed),
        "cluster": f"{instance.cluster.num_nodes}x{instance.cluster.gpus_per_node}",
        "num_jobs": instance.trace.num_jobs, "episode_hash": episode.episode_hash(),
        "status": exact.status, "optimum_avg_jct_s": exact.avg_jct_s,
        "solver_lower_bound_s": exact.lower_bound_s,
        "lower_bound_avg_jct_s": lower_bound(episode).avg_jct_s,
        "best_heuristic": search.start, "best_heuristic_avg_jct_s": search.start_avg_jct_s,
        "search_avg_jct_s": search.avg_jct_s, "search_placement": search.placement,
        "solver_wall_s": round(exact.wall_s, 3), "search_wall_s": round(search.wall_s, 3),
        "schedule": exact.schedule.to_ints(),
    }


def _small(args: argparse.Namespace) -> int:
    import importlib.util
    from importlib.metadata import version

    from palgym.errors import ConfigError
    from palgym.io.atomic import check_destination

    if importlib.util.find_spec("ortools") is None:
        raise ConfigError("small: the exact optima need OR-Tools: pip install -e '.[exact]'")
    check_destination(args.output, "--output")
    from palgym.headroom.suite import SUITE_FORMAT, read_suite
    from palgym.io.atomic import atomic_write_text

    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    earlier: dict[int, dict[str, Any]] = {}
    command = "python -m palgym.headroom small " + " ".join(args.argv)
    if args.resume is not None:  # its proven optima are kept; the rest is computed again
        before = read_suite(args.resume)
        command = f"{before.get('command', '')}; then {command}"
        earlier = {int(item["seed"]): dict(item) for item in before["instances"]}
    todo = list(args.seeds)
    head = {
        "format": SUITE_FORMAT, "preset": "default",
        "generator": "palgym.headroom.small.small_instance(seed)",
        "command": command,
        "solver": {"name": "cp-sat", "version": version("ortools"),
                   "time_limit_s": args.time_limit, "workers": args.solver_workers},
        "search": {"evaluations": args.evaluations, "seed": 0},
    }
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_solve_one, seed, args.time_limit, args.solver_workers,
                               args.evaluations, earlier.get(seed)) for seed in todo]
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            rows.sort(key=lambda item: int(item["seed"]))
            print(f"{row['name']:>10} {row['cluster']} {row['num_jobs']:>2} jobs "
                  f"{row['status']:>8} optimum {row['optimum_avg_jct_s']:9.1f} s "
                  f"search {row['search_avg_jct_s']:9.1f} s "
                  f"heuristic {row['best_heuristic_avg_jct_s']:9.1f} s "
                  f"solver {row['solver_wall_s']:6.1f} s", file=sys.stderr, flush=True)
            # rewritten after every instance: a stopped build keeps what it solved
            suite = {**head, "instances": rows}
            atomic_write_text(args.output, json.dumps(suite, indent=1, allow_nan=False) + "\n")
    proven = sum(row["status"] == "optimal" for row in rows)
    print(f"{proven} of {len(rows)} proven optimal; {time.perf_counter() - started:.0f} s; "
          f"wrote {args.output}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m palgym.headroom", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    small = commands.add_parser("small", help="build the small-instance suite (needs the "
                                "exact extra: OR-Tools)")
    small.add_argument("--seeds", type=_seeds, default="0-69",
                       help="instance seeds, e.g. 0-63 or 0,5,9 (default %(default)s)")
    small.add_argument("--output", type=Path, required=True, help="suite file to write")
    small.add_argument("--time-limit", type=float, default=60.0,
                       help="CP-SAT seconds per model (default %(default)s)")
    small.add_argument("--solver-workers", type=int, default=1,
                       help="CP-SAT workers per instance (default %(default)s)")
    small.add_argument("--jobs", type=int, default=1,
                       help="instances solved at once (default %(default)s)")
    small.add_argument("--resume", type=Path, default=None,
                       help="an earlier suite file: its proven optima are kept, the search "
                       "and every unproven instance run again (its schedules as hints)")
    small.add_argument("--evaluations", type=int, default=2000,
                       help="hindsight search candidates per instance (default %(default)s)")
    args = parser.parse_args(argv)
    args.argv = argv[1:]
    try:
        return _small(args)
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
