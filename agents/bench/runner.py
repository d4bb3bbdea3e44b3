"""``python -m palgym.bench run``: one entry on a suite's tasks, through the contender protocol.

The body of the command (:mod:`agents.bench.cli`), above ``agents.evaluation`` and ``traces``
(docs/ARCHITECTURE.md); the suites, results files and replay it uses are
:mod:`palgym.bench`'s. An entry
(:func:`entry_kind`) becomes the contenders of :mod:`agents.evaluation.contenders` (a
heuristic ``[ORDER/]PLACEMENT[+SUFFIX]``, a user's ``MODULE:CLASS`` placement, a planner
``planner:K=4,H=end``, a model zip / run folder / ``pretrained[:NAME]``), built on each
split's env kwargs, and
:func:`agents.evaluation.comparison.run_contenders` runs them on the split's identical
episodes with every contender stepping the env (``heuristics_via="env"``), so that each
:class:`agents.rollout.EpisodeOutcome` carries the env actions taken. ``best`` runs the task's
heuristic field on the validation split, chooses with
:func:`agents.evaluation.best.select_best` and runs the winner on the test split; ``field``
runs every member on both. Other entries run on the test split (``selector:`` and a user's
placement class: on the engine, :mod:`palgym.bench.selector_entry`,
:mod:`palgym.bench.module_entry`).
The request is resolved once, before any episode (:func:`plan_entry`): its spec is parsed
(:func:`palgym.policies.contender_spec.parse_contender`), the suite's files checked, and each
split it runs read into a :class:`palgym.bench.entries.SplitPlan` (env kwargs, traces, env
layout) that every later step reads from the plan.
``workers`` > 1 runs the same units (one split's contenders on one trace) in a process pool
(``spawn``), and ``ray_address`` as Ray tasks (``--ray [ADDRESS]``, the ``ray`` extra); the
episodes of a trace do not depend on the env's other traces, so the rows are
those of the serial run. Generated files are written by :func:`prepare`.
"""

from __future__ import annotations

import multiprocessing
import shlex
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from agents.bench.contenders import build_contenders, member_kwargs
from palgym.bench.engine_members import (
    engine_member_header,
    guard_parts,
    is_engine_member,
    run_engine_members,
)
from palgym.bench.entries import (
    REFERENCE_SPECS,
    Plan,
    RunRequest,
    SplitPlan,
    Unit,
    entry_kind,
    entry_name,
    episode_rows,
)
from palgym.bench.results import (
    SCHEDULE_SCHEMA,
    ChoiceRow,
    EpisodeRow,
    Row,
    finite_or_none,
    write_results_or_recover,
)
from palgym.bench.suites import (
    TRACES_COMMAND,
    DataRoots,
    SuiteDataError,
    file_sha256,
    load_suite,
)
from palgym.errors import ConfigError
from palgym.policies.contender_spec import parse_contender, parse_heuristic


def run_unit(unit: Unit, on_episode: Callable[[Any], None] | None = None,
             split: SplitPlan | None = None) -> dict[str, list[Any]]:
    """Run one unit (in this process or a worker): ``{label: outcomes}`` in (trace, seed)
    order, every contender stepping the env (``on_episode``: called after each episode).
    ``split``: the unit's split as the plan resolved it (:attr:`Plan.splits`, in this
    process); None: read it from the unit's suite file (a worker)."""
    from agents.evaluation.comparison import run_contenders

    if unit.kind == "learned" and unit.num_threads > 0:  # as evaluate.py --num-threads
        import torch

        torch.set_num_threads(unit.num_threads)
    if split is None:  # a worker: resolve the unit's split from the suite file
        from palgym.bench.entries import resolve_splits

        suite = load_suite(unit.suite)
        split = resolve_splits(suite, [suite.task(unit.task)], [unit.split],
                               unit.roots)[(unit.task, unit.split)]
    task, kwargs, traces = split.task, dict(split.env_kwargs), list(split.traces)
    if unit.traces is not None:
        traces = [traces[i] for i in unit.traces]
    engine = [s for s in unit.specs if unit.kind == "heuristic" and is_engine_member(s)]
    contenders = build_contenders(task, kwargs, [s for s in unit.specs if s not in engine],
                                  unit.kind, unit.device, unit.trust_model)
    found = run_contenders(task.env_id, contenders, traces, task.seeds, heuristics_via="env",
                           on_episode=on_episode) if contenders else {}
    step = None if on_episode is None else (lambda _n: on_episode(None))
    return {**found, **run_engine_members(split, unit.traces, engine, step)}


def _start_worker() -> None:
    """Pool initializer: one BLAS / OpenMP thread per worker (the workers are the
    parallelism); a ``MODULE:CLASS`` spec is imported from the current directory too, as in
    the calling process (each unit parses its specs, which imports and registers the class)."""
    from threadpoolctl import threadpool_limits

    from agents.evaluation.names import importable_from_cwd

    threadpool_limits(limits=1)
    importable_from_cwd()


def _ray_unit(unit: Unit, cwd: str) -> dict[str, list[Any]]:
    """The Ray task body: :func:`run_unit` with one BLAS / OpenMP thread and the caller's
    directory importable (a ``MODULE:CLASS`` spec from it, as in a pool worker)."""
    import sys

    from threadpoolctl import threadpool_limits

    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    with threadpool_limits(limits=1):
        return run_unit(unit)


def _ray_parts(parts: Sequence[Sequence[Unit]], address: str
               ) -> Iterator[Iterator[dict[str, list[Any]]]]:
    """Each unit's parts as Ray tasks (one CPU each), all submitted at once; yields, per unit,
    its parts' outcomes in trace order. ``address`` as ``evaluate.py --ray``
    (:mod:`palgym.bench.ray_tasks`: ``""`` starts a local Ray for the run)."""
    import os

    from palgym.bench.ray_tasks import ray_map

    flat = [(part, os.getcwd()) for unit_parts in parts for part in unit_parts]
    done = ray_map(_ray_unit, flat, address)
    try:
        for unit_parts in parts:
            yield (next(done) for _ in unit_parts)
    finally:
        done.close()  # stops a local Ray started for the run


def _pool_parts(parts: Sequence[Sequence[Unit]], workers: int
                ) -> Iterator[Iterator[dict[str, list[Any]]]]:
    """Each unit's parts in a pool of ``workers`` local processes (``spawn``), all submitted
    at once; yields, per unit, its parts' outcomes in trace order."""
    from agents.evaluation.parallel import POOL_START_METHOD

    context = multiprocessing.get_context(POOL_START_METHOD)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context,
                             initializer=_start_worker) as pool:
        futures = [[pool.submit(run_unit, part) for part in unit_parts] for unit_parts in parts]
        try:
            for unit_futures in futures:
                yield (future.result() for future in unit_futures)
        finally:
            for unit_futures in futures:
                for future in unit_futures:
                    future.cancel()


def run_units(units: Sequence[Unit], workers: int, step: Callable[[int], None],
              ray_address: str | None = None,
              splits: Mapping[tuple[str, str], SplitPlan] | None = None
              ) -> list[dict[str, list[Any]]]:
    """Every unit's outcomes in order (``step(n)``: n more episodes done; ``splits``: the
    plan's resolved splits, which the serial run reads instead of the suite file).

    ``workers`` > 1 (a local process pool) or ``ray_address`` not None (Ray tasks; ``""``: a
    local Ray started for the run) splits each unit by trace and joins the parts in trace
    order, so the outcomes are those of the serial run.
    """
    if workers <= 1 and ray_address is None:
        found = splits or {}
        return [run_unit(unit, lambda _outcome: step(1), found.get((unit.task, unit.split)))
                for unit in units]
    parts = [[replace(u, traces=(i,)) for i in range(_num_traces(u))] for u in units]
    remote = (_ray_parts(parts, ray_address) if ray_address is not None
              else _pool_parts(parts, workers))
    joined = []
    for unit_parts in remote:
        merged: dict[str, list[Any]] = {}
        for part in unit_parts:
            for label, outcomes in part.items():
                merged.setdefault(label, []).extend(outcomes)
            step(sum(len(v) for v in part.values()))
        joined.append(merged)
    return joined


def _num_traces(unit: Unit) -> int:
    return len(load_suite(unit.suite).task(unit.task).splits[unit.split].traces)


# --------------------------------------------------------------------------- one entry
def plan_entry(request: RunRequest) -> Plan:
    """Check the request before anything runs: the suite, the tasks, their files and hashes,
    their env layouts, the entry's kind and name.

    Raises:
        ConfigError: for an unknown suite or task, an env whose layout differs from the one
            the suite was frozen with, or a bad heuristic name.
        SuiteDataError: naming missing or changed files.
    """
    from agents.evaluation.names import importable_from_cwd
    from palgym.bench.entries import git_commit, resolve_splits
    from palgym.bench.suites import check_files, split_files

    spec = parse_contender(request.agent, "--agent").require("bench", "--agent")
    kind = "heuristic" if spec.kind == "guard" else spec.kind  # a guard's entry: a heuristic's
    suite = load_suite(request.suite)
    tasks = suite.select(request.tasks)
    splits = ("validation", "test") if kind in ("best", "field") else ("test",)
    check_files(suite, [f for t in tasks for s in splits for f in split_files(suite, t, s)],
                request.roots)
    resolved = resolve_splits(suite, tasks, splits, request.roots)
    for task in tasks:
        layout = resolved[(task.name, "test")].env_layout
        if layout != task.env_layout:
            raise ConfigError(f"suite {suite.name}, task {task.name}: this palgym's "
                              f"{task.env_id} has layout {layout}, the suite was frozen with "
                              f"{task.env_layout}: use the suite's version of palgym")
    name = request.entry
    if name is None and kind in ("heuristic", "module"):
        if kind == "module":
            importable_from_cwd()
        name = parse_heuristic(request.agent, "--agent").label
    return Plan(request, suite, tasks, kind, name or entry_name(request.agent, kind),
                git_commit(), resolved, spec,
                kind in ("module", "heuristic") and declares_learned(request.agent))


def declares_learned(agent: str) -> bool:
    """Whether a heuristic name's ``MODULE:CLASS`` queue order or placement (an aging guard's
    base order or placement too) has a class that declares ``learned = True``: a policy fitted
    to training traces, recorded as a learned entry (its module is imported; :func:`plan_entry`
    has already registered it)."""
    import importlib
    import re

    order, _, placement = agent.partition("/")
    for part in (order, re.split(r"[+]", placement, maxsplit=1)[0]):
        module, sep, qualname = part.partition(":")
        if not (sep and re.fullmatch(r"[\w.]+", module) and re.fullmatch(r"[\w.]+", qualname)):
            continue
        found: object = importlib.import_module(module)
        for name in qualname.split("."):
            found = getattr(found, name, None)
        if getattr(found, "learned", False) is True:
            return True
    return False


def _choose(unit: Unit, results: dict[str, list[Any]]) -> ChoiceRow:
    """The ``best`` choice on one task's validation outcomes."""
    from agents.evaluation.best import geomean_avg_jct_s, select_best

    scores = {label: geomean_avg_jct_s(outcomes) for label, outcomes in results.items()}
    return ChoiceRow(unit.task, select_best(scores), unit.split, list(results),
                     {label: finite_or_none(v) for label, v in scores.items()})


def _members(plan: Plan, unit: Unit) -> dict[str, dict[str, Any]]:
    """The header's ``members`` of one unit: each member's own env kwargs (on the unit's
    split) and its env's layout hash."""
    from palgym.envs.layouts import env_layout

    split = plan.split_plan(unit)
    task, kwargs = split.task, dict(split.env_kwargs)
    found = {}
    for spec in unit.specs:
        if unit.kind == "heuristic" and is_engine_member(spec):
            found[plan.member or spec] = engine_member_header(split, spec)
    for contender in build_contenders(task, kwargs,
                                      [s for s in unit.specs if not is_engine_member(s)],
                                      unit.kind, unit.device, unit.trust_model):
        own = member_kwargs(task, kwargs, contender)
        found[plan.member or contender.label] = {
            "env_kwargs": own, "env_layout": env_layout(task.env_id, {**kwargs, **own})}
    return found


def _own_placement(spec: str) -> tuple[str, str | None] | None:
    """``(placement name, queue order or None)`` of a spec whose placement is a user's class
    (run on the engine, its schedule recorded: :mod:`palgym.bench.module_entry`), else None."""
    from palgym.policies.registry import placement_entry

    name = parse_heuristic(spec, "--agent")
    if placement_entry(name.placement).origin is None:
        return None
    return name.placement_name, name.queue_order


def run_entry(request: RunRequest) -> tuple[Path, int, float]:
    """Run one entry and write its results file (:mod:`palgym.bench.results`).

    Returns:
        ``(output path, episodes, wall seconds)``.

    Raises:
        ConfigError: see :func:`plan_entry` and :func:`build_contenders`.
        SuiteDataError: naming missing or changed files.
        OSError: if the output cannot be written.
    """
    from palgym.progress import SweepProgress

    started = time.perf_counter()
    plan = plan_entry(request)
    if plan.kind == "selector":  # on the engine, not the env: palgym/bench/selector_entry.py
        from contextlib import nullcontext

        from agents.selection.entry import load_selector
        from palgym.bench.selector_entry import run_selector_entry
        from palgym.policies.loader import no_user_imports

        with nullcontext() if request.trust_model else no_user_imports(
                "a selector file's rules import no module (importing a module runs its code); "
                "pass --trust-model if you trust the file and the module"):
            return run_selector_entry(plan, load_selector(plan.spec or request.agent), started)
    if plan.kind in REFERENCE_SPECS:  # best-known / lower-bound: palgym.bench.reference_entry
        from palgym.bench.reference_entry import run_reference_entry
        return run_reference_entry(plan, started)
    if plan.kind == "heuristic" and (own := guard_parts(request.agent)) is not None:
        from palgym.bench.module_entry import run_module_entry  # an aging guard: recorded
        return run_module_entry(plan, *own, started)
    if plan.kind == "module" and (own := _own_placement(request.agent)) is not None:
        from palgym.bench.module_entry import run_module_entry  # on the engine, recorded
        return run_module_entry(plan, *own, started)
    units = plan.first_units()
    bar = SweepProgress(plan.total_episodes(), enabled=request.progress)
    rows: list[Row] = []
    try:
        results = run_units(units, request.workers, bar.update, request.ray_address,
                            plan.splits)
        if plan.kind == "best":
            choices = [_choose(u, r) for u, r in zip(units, results, strict=True)]
            rows += choices
            units = [plan.unit(plan.suite.task(c.task), "test", [c.member], "heuristic")
                     for c in choices]
            results = run_units(units, request.workers, bar.update, request.ray_address,
                                plan.splits)
    finally:
        bar.close()
    for unit, result in zip(units, results, strict=True):
        rows += episode_rows(plan, unit, result)
    members: dict[str, dict[str, dict[str, Any]]] = {}
    for unit in units:
        members.setdefault(unit.task, {}).update(_members(plan, unit))
    header = plan.header(members)
    if any("schedule" in m for found in members.values() for m in found.values()):
        header = replace(header, schema=SCHEDULE_SCHEMA)  # an aging guard among the members
    write_results_or_recover(request.output, header, rows)
    episodes = sum(1 for r in rows if isinstance(r, EpisodeRow))
    return request.output, episodes, time.perf_counter() - started


# --------------------------------------------------------------------------- prepare
def prepare(suite_name: str, cache_dir: Path, tasks: Sequence[str] = ()) -> list[str]:
    """Write the suite's generated files (of ``tasks``; all: every task) into ``cache_dir``
    with their ``python -m traces`` commands, and check every hash.

    Returns:
        One line per generated file (``ok`` when it was already there, else ``wrote``).

    Raises:
        SuiteDataError: for a file whose bytes differ from the suite's hash (expected and
            actual hash named).
        ConfigError: for an unknown suite or task.
    """
    from palgym.bench.suites import check_files, split_files
    from traces.__main__ import build_parser, run

    suite = load_suite(suite_name)
    chosen = suite.select(tasks)
    files = [f for t in chosen for s in t.splits for f in split_files(suite, t, s)
             if f.source == "generated"]
    lines = []
    for file in dict.fromkeys(files):
        target = cache_dir / file.path
        if target.is_file() and file_sha256(target) == file.sha256:
            lines.append(f"ok {target}")
            continue
        assert file.command is not None
        argv = shlex.split(file.command[len(TRACES_COMMAND):]) + ["--output", str(target)]
        target.parent.mkdir(parents=True, exist_ok=True)
        run(build_parser().parse_args(argv))
        lines.append(f"wrote {target} ({file.command})")
    check_files(suite, list(dict.fromkeys(files)), DataRoots(None, cache_dir))
    return lines


__all__ = ["RunRequest", "SuiteDataError", "entry_kind", "prepare", "run_entry"]
