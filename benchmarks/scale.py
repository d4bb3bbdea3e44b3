"""Benchmark: whole heuristic episodes as the cluster and the trace grow (a scaling table).

Each row is one episode in a fresh subprocess, so its peak RSS (``resource.getrusage``,
``ru_maxrss``) is that row's own. Columns: GPUs, jobs, simulated rounds, episode seconds (the
``run_episode`` call alone, after a small warm-up episode that loads the compiled kernels) in
wall and CPU time, rounds per wall and per CPU second (the CPU figures hold on a busy machine),
the process's whole wall and CPU time, its peak RSS and its RSS before the trace was built
(imports only), and the episode's average JCT. It asserts nothing; a row that fails or exceeds
``--timeout`` is printed as such.

Generated rows: Sia-Philly-like traces (``traces.generate``, seed ``--seed``) with the arrival
rate scaled with the cluster, ``--load`` jobs/h per 64 GPUs (32 = PAL's 160-job, 64-GPU
workloads), so every size sees the same offered load. Philly rows (``--philly PATH``, the
82,247-job extract, read like ``evaluate.py --trace`` does): the first J jobs for each
``--philly-jobs`` J (0 = all) on each ``--philly-gpus`` size. Clusters are G/4 nodes x 4 GPUs;
beyond 1,024 GPUs the bundled profile is extended by its documented rule.

    python benchmarks/scale.py --gpus 64 256 --jobs 1000 2000            # quick
    python benchmarks/scale.py                                            # 64..8,192 x 1k..80k
    python benchmarks/scale.py --gpus --jobs --philly PATH --philly-jobs 20000 0
    python benchmarks/scale.py --gpus --jobs --philly PATH --philly-gpus 2048 \
        --policy pal pm-first packed-sticky packed-non-sticky random-sticky random-non-sticky
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
GPUS_PER_NODE = 4
WARMUP_JOBS = 20


@dataclass(frozen=True)
class Row:
    """One benchmark row: a trace source and a cluster size."""

    source: str  # "generated" or a Philly file path
    gpus: int
    jobs: int  # 0 = the whole file (Philly only)
    policy: str = "pal"


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build_trace(row: Row, seed: int, load: float) -> Any:
    """The row's trace: generated at the scaled rate, or the first J Philly jobs."""
    if row.source == "generated":
        from traces.generate import generate_sia_philly_like
        from traces.sia_philly_fit import SIA_PHILLY

        params = replace(SIA_PHILLY, jobs_per_hour=load * row.gpus / 64.0)
        return generate_sia_philly_like(row.jobs, seed, params).to_trace(f"generated-{row.jobs}")
    from palgym.envs.episodes import job_window
    from traces import load_trace

    trace = load_trace(row.source, "philly")
    return trace if row.jobs in (0, trace.num_jobs) else job_window(trace, 0, row.jobs)


def run_row(row: Row, args: argparse.Namespace) -> dict[str, Any]:
    """Run one row in this process and return its figures."""
    from palgym import ClusterSpec, make_episode, preset, run_episode
    from palgym.envs.episodes import job_window

    rss_imports = peak_rss_mib()
    cluster = ClusterSpec(row.gpus // GPUS_PER_NODE, GPUS_PER_NODE)
    config = preset(args.preset)
    trace = build_trace(row, args.seed, args.load)
    warmup = job_window(trace, 0, min(WARMUP_JOBS, trace.num_jobs))
    run_episode(make_episode(warmup, cluster=cluster, config=config, seed=args.seed),
                row.policy, args.queue_order)
    episode = make_episode(trace, cluster=cluster, config=config, seed=args.seed)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = run_episode(episode, row.policy, args.queue_order)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {"jobs": trace.num_jobs, "rounds": result.num_rounds, "episode_s": seconds,
            "episode_cpu_s": cpu,
            "rss_imports_mib": rss_imports, "peak_rss_mib": peak_rss_mib(),
            "avg_jct_s": float(result.metrics.avg_jct_s)}


def run_in_subprocess(row: Row, args: argparse.Namespace) -> dict[str, Any]:
    """Run one row in a fresh interpreter; its figures, or ``{"error": ...}``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--row", row.source,
               str(row.gpus), str(row.jobs), "--preset", args.preset, "--policy", row.policy,
               "--queue-order", args.queue_order, "--seed", str(args.seed),
               "--load", str(args.load)]
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout,
                              cwd=REPO_ROOT, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {args.timeout:g} s"}
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {last}"}
    return {**json.loads(lines[-1]), "process_s": wall, "process_cpu_s": cpu}


HEADER = (f"{'trace':<12} {'policy':<18} {'gpus':>6} {'jobs':>7} {'rounds':>8} {'episode_s':>10} "
          f"{'cpu_s':>8} {'rounds/s':>9} {'rounds/cpu_s':>12} {'process_s':>10} "
          f"{'proc_cpu_s':>10} {'rss_MiB':>8} {'imports_MiB':>11} {'avg_JCT_h':>10}")


def format_row(row: Row, figures: dict[str, Any]) -> str:
    """One printed table line."""
    name = "generated" if row.source == "generated" else Path(row.source).stem
    if "error" in figures:
        return f"{name:<12} {row.policy:<18} {row.gpus:>6} {row.jobs:>7} FAILED: {figures['error']}"
    rate = figures["rounds"] / max(figures["episode_s"], 1e-9)
    cpu_rate = figures["rounds"] / max(figures["episode_cpu_s"], 1e-9)
    return (f"{name:<12} {row.policy:<18} {row.gpus:>6} {figures['jobs']:>7} "
            f"{figures['rounds']:>8} "
            f"{figures['episode_s']:>10.2f} {figures['episode_cpu_s']:>8.2f} {rate:>9.0f} "
            f"{cpu_rate:>12.0f} {figures['process_s']:>10.2f} {figures['process_cpu_s']:>10.2f} "
            f"{figures['peak_rss_mib']:>8.0f} {figures['rss_imports_mib']:>11.0f} "
            f"{figures['avg_jct_s'] / 3600:>10.2f}")


def planned_rows(args: argparse.Namespace) -> list[Row]:
    """Generated rows (every --gpus x --jobs), then Philly rows if --philly is given; each for
    every --policy."""
    rows = [Row("generated", gpus, jobs, policy)
            for policy in args.policy for gpus in args.gpus for jobs in args.jobs]
    if args.philly is not None:
        rows += [Row(str(args.philly), gpus, jobs, policy) for policy in args.policy
                 for gpus in args.philly_gpus for jobs in args.philly_jobs]
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="*", default=[64, 512, 2048, 8192],
                        help="cluster sizes (multiples of 4) of the generated rows")
    parser.add_argument("--jobs", type=int, nargs="*", default=[1000, 10000, 80000],
                        help="trace lengths of the generated rows")
    parser.add_argument("--philly", type=Path, help="the Philly extract (philly.csv)")
    parser.add_argument("--philly-gpus", type=int, nargs="+", default=[2048])
    parser.add_argument("--philly-jobs", type=int, nargs="+", default=[0],
                        help="first J jobs of the Philly file (0 = all)")
    parser.add_argument("--preset", default="default")
    parser.add_argument("--policy", nargs="+", default=["pal"],
                        help="placement policies (one row each), e.g. all six for the Philly "
                             "run per placement")
    parser.add_argument("--queue-order", default="fifo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", type=float, default=32.0, help="jobs/h per 64 GPUs")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per row")
    parser.add_argument("--row", nargs=3, metavar=("SOURCE", "GPUS", "JOBS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for gpus in [*args.gpus, *args.philly_gpus]:
        if gpus < GPUS_PER_NODE or gpus % GPUS_PER_NODE:
            parser.error(f"cluster sizes must be positive multiples of {GPUS_PER_NODE}, "
                         f"got {gpus}")
    if any(jobs < 1 for jobs in args.jobs) or any(jobs < 0 for jobs in args.philly_jobs):
        parser.error("--jobs must be >= 1 and --philly-jobs >= 0")
    if args.philly is not None and not args.philly.is_file():
        parser.error(f"--philly {args.philly}: no such file")
    return args


def main(argv: list[str] | None = None) -> int:
    """Print the table (or, with the internal --row, one row's figures as JSON)."""
    args = parse_args(argv)
    if args.row is not None:
        source, gpus, jobs = args.row
        print(json.dumps(run_row(Row(source, int(gpus), int(jobs), args.policy[0]), args)))
        return 0
    print(f"policies {' '.join(args.policy)}, queue order {args.queue_order}, "
          f"preset {args.preset}, "
          f"seed {args.seed}, generated load {args.load:g} jobs/h per 64 GPUs", flush=True)
    print(HEADER, flush=True)
    failed = 0
    for row in planned_rows(args):
        figures = run_in_subprocess(row, args)
        failed += "error" in figures
        print(format_row(row, figures), flush=True)
    if failed:
        print(f"{failed} row(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
