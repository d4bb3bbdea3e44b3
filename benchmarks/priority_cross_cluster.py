"""Scheduling entries unchanged on another cluster: palgym-bench-v2's scheduling test episodes
(``scheduling-clairvoyant`` and ``scheduling-regimes``) played in the ``cross-cluster`` task's
test world (the same ``pal-artifact`` preset on 32 x 4 GPUs with the profile drawn from the
fitted variability model, ``model-128-seed6``), against each task's validation-chosen `best`
(read from the committed ``best.jsonl``: chosen on the Longhorn 16 x 4 validation traces, as
``cross-cluster`` chooses its own).

``cross-cluster`` itself fixes FIFO (a placement task), so an entry that brings its own queue
order cannot run there; this script is its scheduling counterpart, not a bench task. Each entry
is a heuristic name ``ORDER/PLACEMENT`` (an aging guard too; ``ORDER`` may be ``MODULE:CLASS``,
e.g. ``agents.priority.pretrained:AgingPrioritySeed0``), run on the engine as the bench runs it.

Per entry and task, and pooled over both tasks and over ``--pool``'s entries: the geomean over
episodes of avg JCT / avg JCT of `best`, its 95% bootstrap interval resampling whole traces
(the leaderboard's, :func:`palgym.bench.stats.bootstrap_geomean`; a pooled entry's episodes
of one trace are resampled together), and the
unfinished jobs, which are counted and shown (an average over completed jobs hides them).

    G="pal+backfill+age=48h:fifo/pal+easy"
    python benchmarks/priority_cross_cluster.py --cache C \\
        --pool agents.priority.pretrained:AgingPrioritySeed{0,1,2}/$G \\
        --entry agents.priority.pretrained:ResponseRatio/$G
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from palgym.errors import PalgymError

SUITE = "palgym-bench-v2"
TASKS = ("scheduling-clairvoyant", "scheduling-regimes")
OTHER = "cross-cluster"
BEST_FILE = Path(__file__).parent / "leaderboard" / SUITE / "best.jsonl"


def v2_parser(doc: str | None) -> argparse.ArgumentParser:
    """The parser of a palgym-bench-v2 script (``doc``: its docstring, the description) with the
    options every one takes: ``--cache`` and ``--data-dir``."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", help="palgym-bench-v2's cache (default $PALGYM_BENCH_CACHE)")
    parser.add_argument("--data-dir", help="the public data (default $PALGYM_DATA_DIR)")
    return parser


def chosen_best(path: Path, task: str) -> str:
    """The validation-chosen `best` of ``task`` recorded in a ``best.jsonl`` header.

    Raises:
        PalgymError: if the file does not hold one member for ``task`` (naming both).
    """
    with open(path, encoding="utf-8") as handle:
        header = json.loads(handle.readline())
    members = list(header.get("members", {}).get(task, {}))
    if len(members) != 1:
        raise PalgymError(f"{path}: header member of task {task}: expected one chosen best, "
                          f"found {members}")
    return members[0]


def other_cluster_splits(roots: Any) -> dict[str, Any]:
    """Each scheduling task's test split with the ``cross-cluster`` test world's cluster and
    profile in place of its own (:class:`palgym.bench.entries.SplitPlan`)."""
    from palgym.bench.entries import resolve_splits
    from palgym.bench.suites import load_suite, split_env_kwargs

    suite = load_suite(SUITE)
    other = split_env_kwargs(suite, suite.task(OTHER), "test", roots)
    splits = resolve_splits(suite, [suite.task(t) for t in TASKS], ["test"], roots)
    moved = {}
    for task in TASKS:
        split = splits[(task, "test")]
        kwargs = {k: v for k, v in split.env_kwargs.items()
                  if k not in ("variability_data", "profile", "cluster")}
        kwargs.update(cluster=other["cluster"], profile=other["profile"])
        moved[task] = replace(split, env_kwargs=kwargs)
    return moved


def run_name(episode: Any, durations: Any, name: str) -> tuple[float, int, list[float]]:
    """(avg JCT s over completed jobs, unfinished jobs, the decision times in s of a search
    entry, else empty) of ``ORDER/PLACEMENT`` or ``selector:PATH`` on the engine."""
    from palgym.rule_selection import run_selected_episode
    from palgym.simulate import run_episode

    if name.startswith("selector:"):
        from agents.selection.entry import load_selector

        loaded = load_selector(name)
        metrics = run_selected_episode(episode, loaded.rules, loaded.select,
                                       durations).result.metrics
        stats = getattr(loaded.select, "stats", None)
        times = list(stats.decision_s) if stats is not None else []
        return metrics.avg_jct_s, metrics.num_jobs - metrics.num_completed, times
    from palgym.policies.contender_spec import parse_heuristic

    parsed = parse_heuristic(name, "entry")
    metrics = run_episode(episode, parsed.placement_name, parsed.queue_order or "fifo",
                          durations=durations).metrics
    return metrics.avg_jct_s, metrics.num_jobs - metrics.num_completed, []


def interval(logs: np.ndarray, traces: np.ndarray) -> tuple[float, float, float]:
    """(geomean, low, high) of ``exp(logs)`` (float64 (E, N): entries x episodes), the
    leaderboard's 95% bootstrap interval resampling whole traces (``traces`` int64 (N,), each
    episode's trace id; :func:`palgym.bench.stats.bootstrap_geomean`)."""
    from palgym.bench.stats import bootstrap_geomean

    groups = [str(t) for t in np.tile(traces, logs.shape[0])]
    summary = bootstrap_geomean(np.exp(logs.ravel()), groups=groups)
    return summary.geomean, summary.ci_low, summary.ci_high


_JOBS: list[Any] = []


def map_jobs(run: Any, count: int, workers: int) -> list[dict[str, Any]]:
    """``[run(0), ..., run(count - 1)]``, in order, on ``workers`` forked processes (``run``
    a module-level function, so a forked worker finds it)."""
    if workers <= 1:
        return [run(i) for i in range(count)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(run, range(count), chunksize=1)


def run_job(index: int) -> dict[str, Any]:
    """One prepared episode: `best` and every entry on it (:func:`run_name`)."""
    task, trace, episode, durations, best, entries = _JOBS[index]
    ref, lost = run_name(episode, durations, best)[:2]
    out: dict[str, Any] = {"task": task, "trace": trace, "best_unfinished": lost, "entries": {}}
    for name in entries:
        jct, left, times = run_name(episode, durations, name)
        out["entries"][name] = (math.log(jct / ref), left, times)
    print(f"{task} {trace}: done", file=sys.stderr, flush=True)
    return out


def collect(splits: dict[str, Any], best: dict[str, str], entries: list[str],
            limit: int | None, workers: int = 1
            ) -> tuple[dict[str, np.ndarray], dict[str, int], np.ndarray, np.ndarray,
                       dict[str, list[float]]]:
    """Run every entry and each task's `best` on the moved splits' episodes (the first
    ``limit`` traces of each task; None: all), on ``workers`` forked processes. Returns (log
    ratios per entry, float64 (N,); unfinished jobs per entry and ``best``; each episode's
    trace id, int64 (N,); its task; each search entry's decision times, s)."""
    _JOBS.clear()
    traces: list[int] = []
    for task in TASKS:
        split = splits[task]
        env = split.make_env()
        try:
            for index in range(len(split.traces))[:limit]:
                for episode, durations in split.episodes(env, [index]):
                    _JOBS.append((task, split.traces[index].name, episode, durations,
                                  best[task], entries))
                    traces.append(TASKS.index(task) * 1000 + index)  # one id per trace
        finally:
            env.close()
    done = map_jobs(run_job, len(_JOBS), workers)
    logs = {name: np.array([d["entries"][name][0] for d in done]) for name in entries}
    unfinished = {name: sum(d["entries"][name][1] for d in done) for name in entries}
    unfinished["best"] = sum(d["best_unfinished"] for d in done)
    times = {name: [t for d in done for t in d["entries"][name][2]] for name in entries}
    return logs, unfinished, np.array(traces), np.array([d["task"] for d in done]), times


def positive(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    from palgym.bench.roots import data_roots
    from palgym.policies.contender_spec import parse_heuristic

    parser = v2_parser(__doc__)
    parser.add_argument("--pool", nargs="*", default=[], help="entries pooled (e.g. seeds)")
    parser.add_argument("--entry", nargs="*", default=[], help="entries shown alone")
    parser.add_argument("--best-file", type=Path, default=BEST_FILE)
    parser.add_argument("--limit", type=positive, help="the first N >= 1 test traces of each "
                        "task only (a smoke run; the output says so)")
    parser.add_argument("--workers", type=positive, default=1,
                        help="forked processes, one episode each at a time (default 1)")
    args = parser.parse_args(argv)
    entries = [*args.pool, *args.entry]
    if not entries:
        parser.error("give at least one --pool or --entry")
    try:
        for name in entries:  # a bad name fails before any run
            if name.startswith("selector:"):
                from agents.selection.entry import load_selector

                load_selector(name)
            else:
                parse_heuristic(name, "entry")
        roots = data_roots(args.data_dir, args.cache)
        best = {task: chosen_best(args.best_file, task) for task in TASKS}
        splits = other_cluster_splits(roots)
    except (PalgymError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    logs, unfinished, trace_ids, task_of, times = collect(splits, best, entries, args.limit,
                                                          args.workers)
    world = splits[TASKS[0]].env_kwargs
    print(f"{SUITE} scheduling test episodes in the {OTHER} test world ({world['cluster']}, "
          f"{Path(str(world['profile'])).stem}); ratio of avg JCT to each task's "
          "validation-chosen best: " + ", ".join(f"{t} {best[t]}" for t in TASKS))
    if args.limit is not None:
        print(f"warning: --limit {args.limit}: only the first {args.limit} test traces of each "
              "task (not the full result)")
    print(f"best: unfinished jobs {unfinished['best']}")
    groups = [(name, [name]) for name in entries]
    if len(args.pool) > 1:
        groups.append((f"pooled {len(args.pool)}", list(args.pool)))
    for label, names in groups:
        values = np.array([logs[n] for n in names])
        cells = []
        for task in (*TASKS, "both"):
            keep = np.ones(task_of.size, bool) if task == "both" else task_of == task
            mean, low, high = interval(values[:, keep], trace_ids[keep])
            cells.append(f"{task} {mean:.3f} [{low:.3f}, {high:.3f}]")
        lost = sum(unfinished[n] for n in names)
        spent = [t for n in names for t in times[n]]
        decisions = (f"; decisions {len(spent)}: mean {1000 * np.mean(spent):.0f} ms, max "
                     f"{1000 * max(spent):.0f} ms, {sum(t > 0.05 for t in spent)} over 50 ms"
                     if spent else "")
        print(f"{label}: " + "; ".join(cells) + f"; unfinished jobs {lost}{decisions}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
