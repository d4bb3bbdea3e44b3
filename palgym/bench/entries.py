"""What one ``python -m palgym.bench run`` runs, and the rows it writes (no agent code here:
:mod:`agents.bench.runner` builds and runs the contenders).

An entry's kind (:func:`entry_kind`) decides its units (:class:`Unit`: one split's contenders,
on some of its traces) and its rows (:func:`episode_rows`, in (trace, seed) order per member).
Each split the entry runs is resolved once into a :class:`SplitPlan` (:func:`resolve_splits`:
env kwargs, traces, env layout) held by the :class:`Plan`, from which the entries that run on
the engine (:mod:`palgym.bench.selector_entry`, :mod:`palgym.bench.module_entry`) draw their
episodes (:meth:`SplitPlan.episodes`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palgym import __version__
from palgym.bench.results import EpisodeRow, Header, encode_actions, row_metrics
from palgym.bench.suites import DataRoots, Suite, Task
from palgym.policies.contender_spec import (
    BEST,
    BEST_KNOWN,
    FIELD,
    LOWER_BOUND,
    PRETRAINED_PREFIX,
    ContenderSpec,
    parse_contender,
)
from palgym.policies.durations import Durations
from palgym.sim.metrics import EpisodeMetrics
from palgym.sim.workload import Trace
from palgym.simulate import Episode

SPECIAL: tuple[str, ...] = (BEST, FIELD)
"""The entries made of a task's heuristic field."""
REFERENCE_SPECS: tuple[str, ...] = (BEST_KNOWN, LOWER_BOUND)
"""The reference entries of the room (:mod:`palgym.bench.reference_entry`)."""
RUN_FOLDER_MODELS: tuple[str, ...] = ("model.zip", "best_model.zip")


@dataclass(frozen=True)
class RunRequest:
    """What ``python -m palgym.bench run`` asks for.

    Attributes:
        suite: a committed suite's name or a suite file.
        agent: the entry spec (:func:`entry_kind`).
        output: the results file.
        roots: where public and generated files are.
        tasks: the tasks to run (empty: every task).
        entry: the entry's name (None: :func:`entry_name`).
        description: free text for the header.
        workers: local processes (1: this one).
        device: torch device of a learned agent.
        trust_model: load a model zip with SB3's unpickling.
        progress: draw a progress bar on a terminal.
        num_threads: torch threads of a learned agent (0: torch's default).
        submission: the header's ``submission`` object (docs/SUBMITTING.md), checked by
            :func:`palgym.bench.submission.check_submission`; None: not stated.
        ray_address: run the episodes as Ray tasks on this cluster (``""``: a local Ray
            started for the run; None: no Ray, ``workers`` decides).
    """

    suite: str
    agent: str
    output: Path
    roots: DataRoots
    tasks: tuple[str, ...] = ()
    entry: str | None = None
    description: str = ""
    workers: int = 1
    device: str = "cpu"
    trust_model: bool = False
    progress: bool = True
    num_threads: int = 1
    submission: dict[str, Any] | None = None
    ray_address: str | None = None


@dataclass(frozen=True)
class Unit:
    """One split's contenders (their specs, of one ``kind``) on some of its traces (indices
    into the split; None: all)."""

    suite: str
    roots: DataRoots
    task: str
    split: str
    specs: tuple[str, ...]
    kind: str
    traces: tuple[int, ...] | None = None
    device: str = "cpu"
    trust_model: bool = False
    num_threads: int = 1


def entry_kind(spec: str) -> str:
    """The kind of an ``--agent`` spec (:func:`palgym.policies.contender_spec.parse_contender`,
    the one grammar): ``best`` / ``field``; ``best-known`` / ``lower-bound`` (the room's
    references, :mod:`palgym.bench.reference_entry`); ``planner``; ``selector`` (a rule
    selector, :mod:`palgym.bench.selector_entry`; its header records ``learned``); ``learned``
    (a model: ``pretrained[:NAME]``, a ``.zip``, a run folder); ``module`` (a
    ``MODULE:CLASS``); else ``heuristic`` (an aging guard too: it runs on the engine, recorded,
    :mod:`palgym.bench.engine_members`). Every bench kind but ``selector`` is one of
    :data:`palgym.bench.results.ENTRY_KINDS`."""
    kind = parse_contender(spec).kind
    return "heuristic" if kind == "guard" else kind


def entry_name(spec: str, kind: str) -> str:
    """The default entry name: a pretrained model's NAME, a run folder's name (also for its
    ``model.zip`` / ``best_model.zip``), a zip's stem; a selector's pretrained NAME or file
    stem; the spec itself otherwise."""
    if kind == "selector":
        parsed = parse_contender(spec)
        return parsed.body if parsed.pretrained else Path(parsed.body).stem
    if kind in REFERENCE_SPECS:
        return kind
    if kind != "learned":
        return spec
    if spec.startswith(PRETRAINED_PREFIX):
        return spec[len(PRETRAINED_PREFIX):]
    path = Path(spec)
    folder = path.parent.name if path.name in RUN_FOLDER_MODELS else ""
    return folder or path.stem


@dataclass(frozen=True)
class SplitPlan:
    """One task's split, resolved once when the run is planned: what every member of the
    split shares.

    Attributes:
        task: the task.
        split: the split's name.
        env_kwargs: the env kwargs without ``trace`` (:func:`palgym.bench.suites.split_env_kwargs`).
        traces: the split's traces, in the suite's order (read after their files' hashes were
            checked: :func:`palgym.bench.suites.split_traces`).
        env_layout: the env's layout hash under ``env_kwargs``
            (:func:`palgym.envs.layouts.env_layout`).
    """

    task: Task
    split: str
    env_kwargs: Mapping[str, Any]
    traces: tuple[Trace, ...]
    env_layout: str

    def make_env(self) -> Any:
        """A fresh env of the split (every member's: its env kwargs and traces)."""
        import gymnasium as gym

        return gym.make(self.task.env_id, **self.env_kwargs, trace=list(self.traces))

    def episodes(self, env: Any, trace_indices: Sequence[int] | None = None
                 ) -> Iterator[tuple[Episode, Durations]]:
        """Every (trace, seed) episode ``env`` (from :meth:`make_env`) builds on the traces
        ``trace_indices`` (None: all), in (trace, seed) order, with what its scheduler knows
        of job durations (:func:`env_episode`)."""
        for index in range(len(self.traces)) if trace_indices is None else trace_indices:
            for seed in self.task.seeds:
                yield env_episode(env, seed, index)


def resolve_splits(suite: Suite, tasks: Sequence[Task], splits: Sequence[str],
                   roots: DataRoots) -> dict[tuple[str, str], SplitPlan]:
    """Each of ``splits`` of each task, resolved once (:class:`SplitPlan`), keyed
    ``(task, split)``.

    Raises:
        SuiteDataError: naming missing or changed files.
        SuiteError: for a window larger than a trace of a split.
    """
    from palgym.bench.suites import split_env_kwargs, split_traces
    from palgym.envs.layouts import env_layout

    resolved = {}
    for task in tasks:
        for split in splits:
            kwargs = split_env_kwargs(suite, task, split, roots)
            resolved[(task.name, split)] = SplitPlan(
                task, split, kwargs, tuple(split_traces(suite, task, split, roots)),
                env_layout(task.env_id, kwargs))
    return resolved


def env_episode(env: Any, seed: int, index: int) -> tuple[Episode, Durations]:
    """The episode ``env`` builds on trace ``index`` with ``seed`` and what its scheduler knows
    of job durations."""
    env.reset(seed=seed, options={"trace": index})
    base = env.unwrapped
    return base.episode, base.durations


def episode_metrics(metrics: EpisodeMetrics) -> dict[str, Any]:
    """The keys of the env's ``info["episode_metrics"]`` that
    :func:`palgym.bench.results.row_metrics` reads, of an episode run on the engine (no
    invalid action: an engine entry returns a choice or stops the run)."""
    return {"avg_jct_s": metrics.avg_jct_s, "p99_jct_s": metrics.p99_jct_s,
            "makespan_s": metrics.makespan_s,
            "utilization_effective": metrics.utilization_effective,
            "num_jobs": metrics.num_jobs, "num_completed": metrics.num_completed,
            "num_unfinished": metrics.num_jobs - metrics.num_completed,
            "num_invalid_actions": 0}


@dataclass(frozen=True)
class Plan:
    """One entry's run: the request, the suite and tasks, the entry's kind and name, each
    split it runs resolved once (:class:`SplitPlan`), the parsed ``--agent`` spec
    (:class:`palgym.policies.contender_spec.ContenderSpec`), and the git commit of the code
    that runs it (read when the run is planned, before any episode: a commit made while a long
    run goes on is not the code that ran). ``learned``: a ``MODULE:CLASS`` entry whose class
    declares ``learned = True`` (a trained queue order or placement); its header's
    ``entry_kind`` is then ``learned``, and it runs as every module entry does."""

    request: RunRequest
    suite: Suite
    tasks: tuple[Task, ...]
    kind: str
    name: str
    commit: str = "unknown"
    splits: Mapping[tuple[str, str], SplitPlan] = field(default_factory=dict)
    spec: ContenderSpec | None = None
    learned: bool = False

    def split_plan(self, unit: Unit) -> SplitPlan:
        """The resolved split a unit runs on."""
        return self.splits[(unit.task, unit.split)]

    @property
    def member(self) -> str | None:
        """The member name of every row (None: each contender's label, ``best`` / ``field``)."""
        return None if self.kind in SPECIAL else self.name

    def unit(self, task: Task, split: str, specs: Sequence[str], kind: str | None = None
             ) -> Unit:
        """The unit running ``specs`` (of ``kind``; default: the entry's) on ``split``."""
        request = self.request
        return Unit(str(self.suite.path), request.roots, task.name, split, tuple(specs),
                    kind or self.kind, None, request.device, request.trust_model,
                    request.num_threads)

    def first_units(self) -> list[Unit]:
        """The units run first: the field on validation (``best``), the field on validation
        and test (``field``), the entry on test (the others)."""
        if self.kind == "best":
            return [self.unit(t, "validation", t.heuristic_field, "heuristic")
                    for t in self.tasks]
        if self.kind == "field":
            return [self.unit(t, s, t.heuristic_field, "heuristic") for t in self.tasks
                    for s in ("validation", "test")]
        return [self.unit(t, "test", [self.request.agent]) for t in self.tasks]

    def total_episodes(self) -> int:
        """Every episode the entry runs (for a progress bar)."""
        total = sum(self.episodes(u) for u in self.first_units())
        if self.kind == "best":
            total += sum(len(t.splits["test"].traces) * len(t.seeds) for t in self.tasks)
        return total

    def episodes(self, unit: Unit) -> int:
        """Episodes a unit runs."""
        task = self.suite.task(unit.task)
        traces = task.splits[unit.split].traces
        count = len(traces) if unit.traces is None else len(unit.traces)
        return count * len(task.seeds) * len(unit.specs)

    def header(self, members: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Header:
        """The results file's header line."""
        request = self.request
        return Header(
            self.suite.name, self.suite.sha256, self.name,
            "learned" if self.learned else self.kind, request.agent,
            __version__, self.commit, {t.name: t.env_layout for t in self.tasks},
            sorted({s for t in self.tasks for s in t.seeds}),
            {t: {m: dict(v) for m, v in found.items()} for t, found in members.items()},
            request.description, submission=request.submission)


def episode_rows(plan: Plan, unit: Unit, results: Mapping[str, Sequence[Any]]
                 ) -> list[EpisodeRow]:
    """The rows of one unit's outcomes (:class:`agents.rollout.EpisodeOutcome`, per label in
    (trace, seed) order over the unit's traces)."""
    task = plan.suite.task(unit.task)
    refs = task.splits[unit.split].traces
    if unit.traces is not None:
        refs = tuple(refs[i] for i in unit.traces)
    return _rows(plan, task, unit.split, refs, results)


def split_rows(plan: Plan, split: SplitPlan, outcomes: Sequence[Any]) -> list[EpisodeRow]:
    """The rows of the entry's outcomes on a whole split, in (trace, seed) order."""
    refs = split.task.splits[split.split].traces
    return _rows(plan, split.task, split.split, refs, {plan.name: outcomes})


def _rows(plan: Plan, task: Task, split: str, refs: Sequence[Any],
          results: Mapping[str, Sequence[Any]]) -> list[EpisodeRow]:
    seeds = task.seeds
    rows = []
    for label, outcomes in results.items():
        for index, outcome in enumerate(outcomes):
            ref = refs[index // len(seeds)]
            rows.append(EpisodeRow(
                task.name, split, ref.label, plan.suite.files[ref.file].sha256,
                int(seeds[index % len(seeds)]), plan.member or label,
                **row_metrics(outcome.metrics, outcome.num_steps),
                decision_time_s=float(outcome.decision_time_s),
                episode_hash=outcome.episode_hash, actions=encode_actions(outcome.actions)))
    return rows


def git_commit() -> str:
    """The git commit of the checkout palgym runs from, or ``unknown``."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = done.stdout.strip()
    return text if done.returncode == 0 and text else "unknown"
