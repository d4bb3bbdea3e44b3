"""The reference entries of the room (docs/HEADROOM.md): ``best-known`` and ``lower-bound``.

Neither is a scheduler; the leaderboard shows both beside the ranked rows, never ranked, so
that each task states an interval for the room: no schedule beats the lower bound, and the
best-known schedule is one that exists.

- ``best-known[:evaluations=N][,candidates=NAME|NAME...]``: per test episode, the best of (a)
  every member of the task's heuristic field (and of the fields of the tasks of the same
  queue-order scope run before it on the same episode) run on the engine with its schedule
  recorded (:func:`palgym.schedule_record.record_episode`; aging guards included), (b) a
  search that sees the whole trace, the true durations and speeds, and (c) on a free task,
  the recorded runs of the ``candidates`` (heuristic names that bring their own queue order,
  e.g. ``MODULE:CLASS`` orders under an aging guard; their schedules replay without the
  module; :func:`best_known_options`):

  - on a task whose contender brings its own queue order (``queue_order_regime: free``: the
    scheduling tasks), the hindsight search over priority orders and placements
    (:func:`palgym.headroom.search.hindsight_search`, ``N`` candidates, default
    :data:`DEFAULT_EVALUATIONS`, seed 0, candidates cut at :data:`ROUND_CAP_FACTOR` times the
    longest start's rounds);
  - on a task whose queue order is fixed (``queue_order_regime: fixed``: the placement
    tasks), **placement only: the task's order fixes the order** (FIFO on every placement
    task). The candidates are the placements of :data:`PLACEMENT_SEARCH` (PAL and PM-First
    deciding on the true speeds, :data:`palgym.headroom.search.TRUE_SPEEDS`), each run under
    the task's queue order in the placement env's own semantics: each round the longest
    prefix of that order that fits runs, no backfilling (``palgym/PALPlacement-v0``, which
    :func:`palgym.simulate.run_episode` plays bit for bit). ``N`` is not used there (two
    candidates per episode); the field members and these candidates are all schedules a
    placement contender could make with the same round's jobs.

  An episode that leaves a job unfinished is never chosen. Schedules are shared only between
  tasks of the same scope (every free task; the fixed tasks of one queue order), so a
  placement task never gets a schedule whose order its queue order does not allow. The row
  records the winner's schedule (a ``schedule`` member, as a user's placement:
  :mod:`palgym.bench.module_entry`; its ``queue_order`` ``hindsight`` on a free task, the
  task's own on a fixed one), so the replay rebuilds its metrics from the episode and the
  record alone.
- ``lower-bound``: per test episode, :func:`palgym.headroom.bound.lower_bound` in the row's
  ``avg_jct_s`` (every other metric null, no decision), its header member a ``bound`` object
  (:mod:`palgym.bench.bound_entry`: its format, refusals and replay); the replay recomputes
  the bound on the episode. The bound holds for every schedule of the task's world (any
  placement, queue order and preemption pattern), so it bounds the fixed-order tasks as well.

Both run on every task, the dynamic world's too (``preset: dynamic``, ``dynamic-online``):

- there the truth changes during the episode, so a true-speed placement has no fixed speeds
  to decide on; the placement search's candidates are instead PAL and PM-First deciding on
  the **truth now**, refitted every round at any change (:data:`DYNAMIC_PLACEMENT_SEARCH`:
  the ``oracle`` belief of :mod:`palgym.policies.belief` with ``refit_interval_rounds=1``,
  ``refit_tolerance=0``), which for a free GPU is the factor of its next run, a draw no
  scheduler sees; the field's members run under the task's own belief (e.g. ``online``);
- the bound takes every GPU at its fastest possible factor (:mod:`palgym.headroom.bound`; a
  world with drift, which has no floor, is refused).

The searches read the true durations also on a task that hides them: a reference knows the
future. ``--workers N`` runs the trace files in N local processes and ``--ray [ADDRESS]`` as
Ray tasks (:mod:`palgym.bench.ray_tasks`), each with its own search; the rows are those of the
serial run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from palgym.bench.bound_entry import BOUND_FORMAT, bound_metrics, check_tasks
from palgym.bench.entries import Plan, episode_rows
from palgym.bench.results import BOUND_SCHEMA, SCHEDULE_SCHEMA, EpisodeRow, Row, write_results
from palgym.bench.suites import Task, split_env_kwargs
from palgym.errors import ConfigError
from palgym.schedule_record import FORMAT

BEST_KNOWN, LOWER_BOUND = "best-known", "lower-bound"
"""The reference entry kinds (their specs start with these)."""
REFERENCE_ENTRIES: tuple[str, ...] = (BEST_KNOWN, LOWER_BOUND)
DEFAULT_EVALUATIONS = 100
"""Hindsight-search candidates per test episode of ``best-known`` (the starts count)."""
ROUND_CAP_FACTOR = 2.0
"""A search candidate stops (scores inf) at this many times the longest start's rounds: under
the artifact's background stream a bad priority order can run for hundreds of thousands of
rounds (docs/HEADROOM.md)."""
PLACEMENT_SEARCH: tuple[str, ...] = ("pal@true-speeds", "pm-first@true-speeds")
"""A fixed-order task's search (module docstring): placements without backfilling (the
placement env does not backfill) that decide on the true speeds
(:data:`palgym.headroom.search.TRUE_SPEEDS`)."""
DYNAMIC_PLACEMENT_SEARCH: tuple[str, ...] = ("pal@oracle", "pm-first@oracle")
"""A dynamic world's placement search (module docstring): PAL and PM-First without
backfilling deciding on the truth now, its factors refitted after every round in which it
moved (the ``oracle`` belief, ``refit_interval_rounds=1``, ``refit_tolerance=0``)."""
SEARCH = "search"
"""The label of the hindsight search's schedule among a free task's candidates."""


def reference_kind(spec: str) -> str | None:
    """``best-known`` / ``lower-bound`` for a reference spec, else None."""
    head = spec.split(":", 1)[0]
    return head if head in REFERENCE_ENTRIES else None


def best_known_options(spec: str) -> tuple[int, tuple[str, ...]]:
    """``(N, candidates)`` of ``best-known[:evaluations=N][,candidates=NAME|NAME...]``
    (either option alone too): the search budget (default :data:`DEFAULT_EVALUATIONS`) and the
    heuristic names (:func:`palgym.policies.contender_spec.parse_heuristic`, aging guards and
    ``MODULE:CLASS`` orders included) whose recorded runs are candidates on a free task.

    Raises:
        ConfigError: for another option, an option given twice, N < 1 or no candidate name.
    """
    usage = (f"--agent {spec!r}: give best-known or best-known:evaluations=N (N >= 1 search "
             "candidates per test episode), optionally with ,candidates=NAME|NAME...")
    _, sep, rest = spec.partition(":")
    evaluations = DEFAULT_EVALUATIONS
    candidates: tuple[str, ...] = ()
    seen: set[str] = set()
    for option in rest.split(",") if sep else []:
        key, eq, value = option.partition("=")
        if not eq or key in seen:
            raise ConfigError(usage)
        seen.add(key)
        if key == "evaluations" and value.isdigit() and int(value) >= 1:
            evaluations = int(value)
        elif key == "candidates" and value and all(value.split("|")):
            candidates = tuple(value.split("|"))
        else:
            raise ConfigError(usage)
    return evaluations, candidates


def evaluations_of(spec: str) -> int:
    """The search budget of a ``best-known`` spec (:func:`best_known_options`).

    Raises:
        ConfigError: as :func:`best_known_options`.
    """
    return best_known_options(spec)[0]


def _scope(episode: Any, task: Task) -> str:
    """Which schedules of ``episode`` a task may take: every free task's, or the fixed tasks'
    of the same queue order."""
    regime = ("free" if task.queue_order_regime == "free"
              else f"fixed {task.queue_order}")
    return f"{episode.episode_hash()} {regime}"


def _placement_search(episode: Any, queue_order: str) -> list[tuple[float, str, Any]]:
    """The (average JCT, placement, record) of each :data:`PLACEMENT_SEARCH` placement (of a
    dynamic world: :data:`DYNAMIC_PLACEMENT_SEARCH`) under ``queue_order`` on ``episode`` that
    finishes every job."""
    from palgym.headroom.search import SearchFactors
    from palgym.policies.belief import BeliefMode, BeliefOptions
    from palgym.schedule_record import record_episode

    dynamics = episode.config.dynamics
    found = []
    if dynamics is not None and dynamics.active:
        belief = BeliefOptions(BeliefMode.ORACLE, refit_interval_rounds=1, refit_tolerance=0.0)
        runs = [(p, record_episode(episode, p.split("@")[0], queue_order, belief=belief,
                                   driver="python")) for p in DYNAMIC_PLACEMENT_SEARCH]
    else:
        factors = SearchFactors.of(episode)
        runs = []
        for placement in PLACEMENT_SEARCH:
            name, chosen = factors.resolve(placement)
            runs.append((placement, record_episode(episode, name, queue_order, factors=chosen,
                                                   driver="python")))
    for placement, done in runs:
        if not done.result.metrics.truncated:
            found.append((done.result.metrics.avg_jct_s, placement, done.record))
    return found


def _best_known(episode: Any, task: Task, evaluations: int,
                seen: dict[str, list[tuple[float, str, Any]]],
                candidates: Sequence[str] = ()) -> tuple[Any, Any]:
    """The best (result, record) of the field's members and the search on ``episode``
    (module docstring), of the ``candidates`` (heuristic names, on a free task only: each
    brings its own queue order), and of the schedules found before for the same episode and
    scope (``seen``: the scheduling tasks share their world, so one search serves them all).
    Ties keep the earlier schedule (field, search, candidates in that order).

    Raises:
        ConfigError: if every candidate left a job unfinished (naming the task).
    """
    from palgym.headroom.search import hindsight_search
    from palgym.policies.contender_spec import parse_heuristic
    from palgym.schedule_record import record_episode, replay_schedule

    found = seen.setdefault(_scope(episode, task), [])
    searched = any(label in (SEARCH, *PLACEMENT_SEARCH, *DYNAMIC_PLACEMENT_SEARCH)
                   for _, label, _ in found)
    for member in task.heuristic_field:
        name = parse_heuristic(member, f"task {task.name} heuristic_field")
        done = record_episode(episode, name.placement_name, name.queue_order or task.queue_order)
        if not done.result.metrics.truncated:
            found.append((done.result.metrics.avg_jct_s, member, done.record))
    if not searched and task.queue_order_regime == "free":
        search = hindsight_search(episode, evaluations=evaluations, seed=0,
                                  round_cap_factor=ROUND_CAP_FACTOR)
        found.append((search.avg_jct_s, SEARCH, search.schedule))
    elif not searched:
        found += _placement_search(episode, task.queue_order)
    if task.queue_order_regime == "free":
        labels = {label for _, label, _ in found}
        for candidate in candidates:
            if candidate in labels:
                continue
            name = parse_heuristic(candidate, f"--agent {BEST_KNOWN} candidates")
            done = record_episode(episode, name.placement_name, name.queue_order or "fifo")
            if not done.result.metrics.truncated:
                found.append((done.result.metrics.avg_jct_s, candidate, done.record))
    if not found:
        raise ConfigError(f"--agent {BEST_KNOWN}: task {task.name}: every candidate left a "
                          f"job unfinished on episode {episode.episode_hash()}")
    _, _, record = min(found, key=lambda item: item[0])
    return replay_schedule(episode, record), record


def trace_outcomes(suite_path: str, roots: Any, items: Sequence[tuple[str, int]], kind: str,
                   evaluations: int, candidates: Sequence[str] = ()
                   ) -> dict[tuple[str, int], list[Any]]:
    """The outcomes (one per task seed) of the test episodes ``items`` ((task, trace index)
    pairs, one trace file: the episodes one search may serve), in this process or a worker
    (``candidates``: :func:`best_known_options`).
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
                    result, record = _best_known(episode, task, evaluations, seen, candidates)
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


def _group_outcomes(plan: Plan, calls: Sequence[tuple[Any, ...]]
                    ) -> Iterator[dict[tuple[str, int], list[Any]]]:
    """:func:`trace_outcomes` of each call, in order: here, in a pool of ``--workers``
    (``spawn``) or as Ray tasks (``--ray``, :func:`palgym.bench.ray_tasks.ray_map`)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    request = plan.request
    if request.ray_address is not None:
        from palgym.bench.ray_tasks import ray_map

        yield from ray_map(trace_outcomes, calls, request.ray_address)
    elif request.workers <= 1:
        yield from (trace_outcomes(*call) for call in calls)
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=request.workers, mp_context=context) as pool:
            futures = [pool.submit(trace_outcomes, *call) for call in calls]
            yield from (future.result() for future in futures)


def _outcomes(plan: Plan, kind: str, evaluations: int, step: Callable[[int], None],
              candidates: Sequence[str] = ()) -> dict[tuple[str, int], list[Any]]:
    """Every group's outcomes (:func:`_groups`), each group one call of
    :func:`trace_outcomes` (:func:`_group_outcomes`: the rows are those of the serial run)."""
    path, roots = str(plan.suite.path), plan.request.roots
    calls = [(path, roots, items, kind, evaluations, tuple(candidates))
             for items in _groups(plan)]
    found: dict[tuple[str, int], list[Any]] = {}
    for done in _group_outcomes(plan, calls):
        found.update(done)
        step(sum(len(v) for v in done.values()))
    return found


def member_object(plan: Plan, task: Task, kind: str) -> dict[str, Any]:
    """The header's member object of a reference entry on ``task``."""
    from palgym.envs.layouts import env_layout

    kwargs = split_env_kwargs(plan.suite, task, "test", plan.request.roots)
    found: dict[str, Any] = {"env_kwargs": {}, "env_layout": env_layout(task.env_id, kwargs)}
    if kind == LOWER_BOUND:
        found["bound"] = {"format": BOUND_FORMAT}
    else:  # a fixed task's queue order is the task's (the search there is placement only)
        order = "hindsight" if task.queue_order_regime == "free" else task.queue_order
        found["schedule"] = {"format": FORMAT, "placement": BEST_KNOWN, "queue_order": order}
    return found


def run_reference_entry(plan: Plan, started: float) -> tuple[Path, int, float]:
    """Run a reference entry (module docstring) and write its results file.

    Returns:
        ``(output path, episodes, wall seconds)``.

    Raises:
        ConfigError: see :func:`palgym.bench.bound_entry.check_tasks` (``lower-bound``) and
            :func:`best_known_options`; ``--ray`` without the ``ray`` extra (naming it).
        OSError: if the output cannot be written.
    """
    from palgym.progress import SweepProgress

    request = plan.request
    kind = reference_kind(request.agent)
    assert kind is not None
    evaluations, candidates = (best_known_options(request.agent) if kind == BEST_KNOWN
                               else (0, ()))
    from palgym.policies.contender_spec import parse_heuristic

    for candidate in candidates:  # a bad name fails before any episode runs
        parse_heuristic(candidate, f"--agent {BEST_KNOWN} candidates")
    if kind == LOWER_BOUND:
        check_tasks(plan)
    total = sum(len(t.splits["test"].traces) * len(t.seeds) for t in plan.tasks)
    bar = SweepProgress(total, enabled=request.progress)
    try:
        found = _outcomes(plan, kind, evaluations, bar.update, candidates)
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


__all__ = ["BEST_KNOWN", "DEFAULT_EVALUATIONS", "DYNAMIC_PLACEMENT_SEARCH", "LOWER_BOUND",
           "PLACEMENT_SEARCH", "REFERENCE_ENTRIES", "ROUND_CAP_FACTOR", "SEARCH",
           "best_known_options", "evaluations_of", "reference_kind", "run_reference_entry"]
