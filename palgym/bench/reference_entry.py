"""The reference entries of the room (docs/HEADROOM.md): ``best-known`` and ``lower-bound``.

Neither is a scheduler; the leaderboard shows both beside the ranked rows, never ranked, so
that each scheduling task states an interval for the room: no schedule beats the lower bound,
and the best-known schedule is one that exists.

- ``best-known[:evaluations=N]``: per test episode, the best of (a) every member of the task's
  heuristic field (and of the fields of the tasks run before it on the same episode) run on
  the engine with its schedule recorded
  (:func:`palgym.schedule_record.record_episode`; aging guards included) and (b) the hindsight
  search (:func:`palgym.headroom.search.hindsight_search`, ``N`` candidates, default
  :data:`DEFAULT_EVALUATIONS`, seed 0, candidates cut at :data:`ROUND_CAP_FACTOR` times the
  longest start's rounds), which sees the whole trace, the true durations and speeds. An
  episode that leaves a job unfinished is never chosen. The row records the winner's schedule
  (a ``schedule`` member, as a user's placement: :mod:`palgym.bench.module_entry`), so the
  replay rebuilds its metrics from the episode and the record alone.
- ``lower-bound``: per test episode, :func:`palgym.headroom.bound.lower_bound` in the row's
  ``avg_jct_s`` (every other metric null, no decision), its header member a ``bound`` object
  (:data:`BOUND_FORMAT`); the replay recomputes the bound on the episode.

Both run on the tasks whose contender brings its own queue order (``queue_order_regime:
free``: the scheduling tasks) in a static world (not the ``dynamic`` preset: its truth has no
fastest speed). The search reads the true durations also on a task that hides them: it is a
reference that knows the future.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from palgym.bench.entries import Plan, episode_rows
from palgym.bench.results import BOUND_SCHEMA, SCHEDULE_SCHEMA, EpisodeRow, Row, write_results
from palgym.bench.suites import Task, split_env_kwargs
from palgym.errors import ConfigError
from palgym.schedule_record import FORMAT

BEST_KNOWN, LOWER_BOUND = "best-known", "lower-bound"
"""The reference entry kinds (their specs start with these)."""
REFERENCE_ENTRIES: tuple[str, ...] = (BEST_KNOWN, LOWER_BOUND)
BOUND_FORMAT = "palgym-lower-bound/1"
"""The ``format`` of a lower-bound member's ``bound`` object."""
DEFAULT_EVALUATIONS = 100
"""Hindsight-search candidates per test episode of ``best-known`` (the starts count)."""
ROUND_CAP_FACTOR = 2.0
"""A search candidate stops (scores inf) at this many times the longest start's rounds: under
the artifact's background stream a bad priority order can run for hundreds of thousands of
rounds (docs/HEADROOM.md)."""


def reference_kind(spec: str) -> str | None:
    """``best-known`` / ``lower-bound`` for a reference spec, else None."""
    head = spec.split(":", 1)[0]
    return head if head in REFERENCE_ENTRIES else None


def evaluations_of(spec: str) -> int:
    """The search budget of ``best-known[:evaluations=N]``.

    Raises:
        ConfigError: for another option or N < 1.
    """
    _, sep, rest = spec.partition(":")
    if not sep:
        return DEFAULT_EVALUATIONS
    key, eq, value = rest.partition("=")
    if key != "evaluations" or not eq or not value.isdigit() or int(value) < 1:
        raise ConfigError(f"--agent {spec!r}: give best-known or best-known:evaluations=N "
                          "(N >= 1 search candidates per test episode)")
    return int(value)


def check_tasks(plan: Plan) -> None:
    """Refuse a task a reference cannot run on, saying where it can.

    Raises:
        ConfigError: for a fixed-regime task (the search orders jobs) or a dynamic world.
    """
    for task in plan.tasks:
        world = split_env_kwargs(plan.suite, task, "test", plan.request.roots)
        if task.queue_order_regime != "free" or world.get("preset") == "dynamic":
            able = [t.name for t in plan.suite.tasks if t.queue_order_regime == "free"
                    and t.world.get("preset") != "dynamic"]
            raise ConfigError(f"--agent {plan.request.agent}: task {task.name} "
                              f"{'fixes the queue order' if task.queue_order_regime != 'free' else 'is a dynamic world'}; "  # noqa: E501
                              f"a reference runs on the tasks {able} (--tasks)")


def _best_known(episode: Any, task: Task, evaluations: int,
                seen: dict[str, list[tuple[float, str, Any]]]) -> tuple[Any, Any]:
    """The best (result, record) of the field's members and the search on ``episode``, and of
    the schedules found before for the same episode (``seen``, by episode hash: the scheduling
    tasks share their world, so one search serves them all)."""
    from palgym.headroom.search import hindsight_search
    from palgym.policies.contender_spec import parse_heuristic
    from palgym.schedule_record import record_episode, replay_schedule

    found = seen.setdefault(episode.episode_hash(), [])
    searched = any(label == "search" for _, label, _ in found)
    for member in task.heuristic_field:
        name = parse_heuristic(member, f"task {task.name} heuristic_field")
        done = record_episode(episode, name.placement_name, name.queue_order or task.queue_order)
        if not done.result.metrics.truncated:
            found.append((done.result.metrics.avg_jct_s, member, done.record))
    if not searched:
        search = hindsight_search(episode, evaluations=evaluations, seed=0,
                                  round_cap_factor=ROUND_CAP_FACTOR)
        found.append((search.avg_jct_s, "search", search.schedule))
    _, _, record = min(found, key=lambda item: item[0])
    return replay_schedule(episode, record), record


def trace_outcomes(suite_path: str, roots: Any, items: Sequence[tuple[str, int]], kind: str,
                   evaluations: int) -> dict[tuple[str, int], list[Any]]:
    """The outcomes (one per task seed) of the test episodes ``items`` ((task, trace index)
    pairs, one trace file: the episodes one search may serve), in this process or a worker.
    """
    from palgym.bench.engine_members import ScheduleOutcome
    from palgym.bench.entries import episode_metrics, resolve_splits
    from palgym.bench.suites import load_suite

    suite = load_suite(suite_path)
    splits = resolve_splits(suite, [suite.task(n) for n in dict.fromkeys(n for n, _ in items)],
                            ["test"], roots)
    seen: dict[str, list[tuple[float, str, Any]]] = {}
    found: dict[tuple[str, int], list[Any]] = {}
    for name, index in items:
        task, split = suite.task(name), splits[(name, "test")]
        env = split.make_env()
        try:
            for episode, _ in split.episodes(env, [index]):
                started = time.perf_counter()
                if kind == LOWER_BOUND:
                    outcome = ScheduleOutcome(bound_metrics(episode), 0,
                                              time.perf_counter() - started,
                                              episode.episode_hash(), [])
                else:
                    result, record = _best_known(episode, task, evaluations, seen)
                    outcome = ScheduleOutcome(
                        episode_metrics(result.metrics), len(record),
                        time.perf_counter() - started, result.episode_hash, record.to_ints())
                found.setdefault((name, index), []).append(outcome)
        finally:
            env.close()
    return found


def _groups(plan: Plan) -> list[list[tuple[str, int]]]:
    """The plan's test episodes grouped by trace file (and job range), tasks in plan order."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for task in plan.tasks:
        for index, ref in enumerate(task.splits["test"].traces):
            groups.setdefault(ref.label, []).append((task.name, index))
    return list(groups.values())


def _outcomes(plan: Plan, kind: str, evaluations: int, step: Callable[[int], None]
              ) -> dict[tuple[str, int], list[Any]]:
    """Every group's outcomes, in one process or a pool of ``--workers`` (``spawn``)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    request, path = plan.request, str(plan.suite.path)
    groups = _groups(plan)
    found: dict[tuple[str, int], list[Any]] = {}
    if request.workers <= 1:
        for items in groups:
            done = trace_outcomes(path, request.roots, items, kind, evaluations)
            found.update(done)
            step(sum(len(v) for v in done.values()))
        return found
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=request.workers, mp_context=context) as pool:
        futures = [pool.submit(trace_outcomes, path, request.roots, items, kind, evaluations)
                   for items in groups]
        for future in futures:
            done = future.result()
            found.update(done)
            step(sum(len(v) for v in done.values()))
    return found


def bound_metrics(episode: Any) -> dict[str, Any]:
    """A lower-bound row's metrics: the bound as ``avg_jct_s`` (s), no other metric (NaN,
    written null), every job counted as completed (what
    :func:`palgym.bench.results.row_metrics` reads)."""
    from palgym.headroom.bound import lower_bound

    jobs = int(episode.trace.num_jobs)
    nan = float("nan")
    return {"avg_jct_s": lower_bound(episode).avg_jct_s, "p99_jct_s": nan, "makespan_s": nan,
            "utilization_effective": nan, "num_jobs": jobs, "num_completed": jobs,
            "num_unfinished": 0, "num_invalid_actions": 0}


def member_object(plan: Plan, task: Task, kind: str) -> dict[str, Any]:
    """The header's member object of a reference entry on ``task``."""
    from palgym.envs.layouts import env_layout

    kwargs = split_env_kwargs(plan.suite, task, "test", plan.request.roots)
    found: dict[str, Any] = {"env_kwargs": {}, "env_layout": env_layout(task.env_id, kwargs)}
    if kind == LOWER_BOUND:
        found["bound"] = {"format": BOUND_FORMAT}
    else:
        found["schedule"] = {"format": FORMAT, "placement": BEST_KNOWN,
                             "queue_order": "hindsight"}
    return found


def run_reference_entry(plan: Plan, started: float) -> tuple[Path, int, float]:
    """Run a reference entry (module docstring) and write its results file.

    Returns:
        ``(output path, episodes, wall seconds)``.

    Raises:
        ConfigError: see :func:`check_tasks` and :func:`evaluations_of`; Ray (``--workers
            N`` runs the trace files in N local processes, each with its own search; the rows
            are those of the serial run).
        OSError: if the output cannot be written.
    """
    from palgym.progress import SweepProgress

    request = plan.request
    kind = reference_kind(request.agent)
    assert kind is not None
    evaluations = evaluations_of(request.agent) if kind == BEST_KNOWN else 0
    if request.ray_address is not None:
        raise ConfigError(f"--agent {request.agent}: a reference entry runs in local "
                          "processes: drop --ray (--workers N runs N)")
    check_tasks(plan)
    total = sum(len(t.splits["test"].traces) * len(t.seeds) for t in plan.tasks)
    bar = SweepProgress(total, enabled=request.progress)
    try:
        found = _outcomes(plan, kind, evaluations, bar.update)
    finally:
        bar.close()
    rows: list[Row] = []
    for task in plan.tasks:
        outcomes = [o for index in range(len(task.splits["test"].traces))
                    for o in found[(task.name, index)]]
        rows += episode_rows(plan, plan.unit(task, "test", [plan.name]), {plan.name: outcomes})
    members = {t.name: {plan.name: member_object(plan, t, kind)} for t in plan.tasks}
    header = replace(plan.header(members),
                     schema=BOUND_SCHEMA if kind == LOWER_BOUND else SCHEDULE_SCHEMA)
    write_results(request.output, header, rows)
    episodes = sum(1 for r in rows if isinstance(r, EpisodeRow))
    return request.output, episodes, time.perf_counter() - started


def replay_bound_row(env: Any, row: Any, index: int) -> dict[str, Any]:
    """A lower-bound row's recomputed fields on the episode ``env`` builds on trace ``index``
    with the row's seed."""
    from palgym.bench.entries import env_episode
    from palgym.bench.results import row_metrics

    episode, _ = env_episode(env, row.seed, index)
    return {"episode_hash": episode.episode_hash(),
            **row_metrics(bound_metrics(episode), 0)}


def bound_object_problem(value: Any) -> str:
    """Why a header's ``bound`` object is malformed (``""``: it is not)."""
    if value != {"format": BOUND_FORMAT}:
        return f"{{'format': {BOUND_FORMAT!r}}}"
    return ""


__all__ = ["BEST_KNOWN", "BOUND_FORMAT", "DEFAULT_EVALUATIONS", "LOWER_BOUND",
           "REFERENCE_ENTRIES", "ROUND_CAP_FACTOR", "bound_metrics", "bound_object_problem",
           "evaluations_of", "reference_kind", "replay_bound_row", "run_reference_entry"]
