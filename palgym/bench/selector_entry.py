"""``python -m palgym.bench run --agent selector:PATH``: a rule selector as a benchmark entry,
and the replay of its rows.

A rule selector (``agents/selection/selector.py``, a JSON file of format ``palgym-rule-selector/2``,
or ``/1``, which has no aging floor) picks, at the first round and at every round with an
event, which rule ``ORDER/PLACEMENT[+SUFFIX]`` of its field schedules the cluster. It runs on
the engine's rule selection (:func:`palgym.rule_selection.run_selected_episode`), not through
the env: its rules differ in queue order, which one env fixes. Each episode is the one the
task's env builds for the row's (trace, seed) (``reset(seed, options={"trace": index})``, then
``env.episode``: the same episode hash as every other row), with the duration knowledge of the
task (``env.durations``).

A row of a selector member has the fields of every episode row: the metrics of the episode;
``decisions``: the times the selector was asked; ``decision_time_s``: the wall seconds spent in
the selector; ``actions``: the rule index it chose at each ask, in the codec of env actions
(:func:`palgym.bench.results.encode_actions`). The header's ``members`` entry of the member
adds ``selector``: ``{"rules": [...], "sha256": HEX}`` (the field, index order, and the SHA-256
of the selector file's bytes), so the row is replayed without the selector
(:func:`replay_selector_row`: a selector that returns the recorded choices in order).

Runs on the tasks whose queue-order regime is ``free`` (a selector brings its own queue
orders), with the task's belief (one belief shared by the rules,
:class:`palgym.rule_selection.SharedBelief`); a rule the task's duration knowledge cannot run
(SRTF under ``unknown``) is refused before any episode. This module imports no agent:
``agents.bench.runner`` loads the file (``agents/selection/entry.py``) and hands over a
:class:`LoadedSelector`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from palgym.bench.entries import Plan, SplitPlan, env_episode, episode_metrics, split_rows
from palgym.bench.results import Row, decode_actions, row_metrics, write_results_or_recover
from palgym.bench.suites import Suite, Task
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.policies.contender_spec import ContenderSpec, parse_contender
from palgym.rule_selection import Selector, check_rules, run_selected_episode

PREFIX = "selector:"
"""An ``--agent`` spec of a rule selector: ``selector:PATH`` or ``selector:pretrained:NAME``."""
HEADER_KIND = "learned"
"""The header's ``entry_kind`` of a selector entry: it is learned, and online (it reads only
what a scheduler knows: :data:`palgym.rule_selection.STATE_FEATURES`)."""
SELECTOR_KEYS = ("rules", "sha256")
"""The keys of a selector member's ``selector`` object in the header."""


@dataclass(frozen=True)
class LoadedSelector:
    """A selector file, loaded.

    Attributes:
        path: the file.
        sha256: hex SHA-256 of its bytes.
        rules: the field, in index order (checked by :func:`palgym.rule_selection.check_rules`).
        select: the selector (:data:`palgym.rule_selection.Selector`).
    """

    path: Path
    sha256: str
    rules: tuple[str, ...]
    select: Selector

    def member_object(self) -> dict[str, Any]:
        """The header's ``selector`` object of the member."""
        return {"rules": list(self.rules), "sha256": self.sha256}


def selector_path(spec: ContenderSpec | str, pretrained_dir: Path) -> Path:
    """The file of a ``selector:`` spec (:func:`palgym.policies.contender_spec.parse_contender`):
    ``selector:PATH`` -> PATH; ``selector:pretrained:NAME`` -> ``pretrained_dir/NAME.json``.

    Raises:
        ConfigError: naming the spec, for no path, a NAME that is a path, a missing
            ``pretrained_dir`` or file.
    """
    if isinstance(spec, str):
        spec = parse_contender(spec if spec.startswith(PREFIX) else PREFIX + spec)
    if spec.pretrained:
        if not pretrained_dir.is_dir():
            raise ConfigError(f"--agent {spec.text}: no pretrained selectors ({pretrained_dir} "
                              "does not exist): give selector:PATH")
        path = pretrained_dir / f"{spec.body}.json"
    else:
        path = Path(spec.body)
    if not path.is_file():
        raise ConfigError(f"--agent {spec.text}: no selector file {str(path)!r}")
    return path


def selector_tasks(suite: Suite) -> list[str]:
    """The tasks of ``suite`` a selector may run (queue-order regime ``free``)."""
    return [t.name for t in suite.tasks if t.queue_order_regime == "free"]


def check_selector_task(task: Task, where: str, runnable: Sequence[str] = ()) -> None:
    """Refuse a task a selector cannot run (module docstring); ``runnable``: the suite's
    tasks it may run, named in the error.

    Raises:
        ConfigError: naming ``where``, the task and why.
    """
    hint = (f" (--tasks {' '.join(runnable)}; a task whose durations are unknown refuses "
            "rules that read them: SRTF, SRSF, EASY backfilling)") if runnable else ""
    if task.queue_order_regime != "free":
        raise ConfigError(f"{where}: task {task.name} fixes queue order {task.queue_order!r} "
                          "(regime fixed), a selector's rules bring their own: run it on "
                          f"tasks of queue-order regime free{hint}")


@dataclass
class TimedSelector:
    """Calls ``select``, recording each choice and the wall seconds spent in it."""

    select: Selector
    choices: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        start = getattr(self.select, "start", None)
        if start is not None:  # drive_selector's hook of a selector that simulates ahead
            self.start = start

    def __call__(self, features: Any, view: Any) -> int:
        began = time.perf_counter()
        chosen = self.select(features, view)
        self.seconds += time.perf_counter() - began
        self.choices.append(int(chosen))
        return chosen


class _TooManyAsksError(PalgymError):
    """The replayed episode asked more often than the file recorded."""


class _RecordedChoices:
    """A selector returning recorded choices in order (:class:`_TooManyAsksError` beyond them)."""

    def __init__(self, choices: Sequence[int]) -> None:
        self.choices, self.asked = list(choices), 0

    def __call__(self, features: Any, view: Any) -> int:
        if self.asked >= len(self.choices):
            raise _TooManyAsksError
        self.asked += 1
        return self.choices[self.asked - 1]


class _ProbeError(PalgymError):
    """Raised by the probing selector at its first ask: the rules were built."""


def _probe_selector(features: Any, view: Any) -> int:
    raise _ProbeError


@dataclass(frozen=True)
class SelectorOutcome:
    """One episode of a selector, with what :func:`palgym.bench.entries.episode_rows` reads
    of an :class:`agents.rollout.EpisodeOutcome` (``metrics``: the env's final
    ``episode_metrics`` keys; ``num_steps``: the selector's asks; ``actions``: its choices)."""

    metrics: Mapping[str, Any]
    num_steps: int
    decision_time_s: float
    episode_hash: str
    actions: list[int]


def _probe(split: SplitPlan, env: Any, selector: LoadedSelector, agent: str) -> None:
    """Build the rules on the split's first episode (a ConfigError names a rule the task
    cannot run, e.g. SRTF without durations)."""
    episode, durations = next(split.episodes(env))  # trace 0, the task's first seed
    try:
        run_selected_episode(episode, selector.rules, _probe_selector, durations)
    except ConfigError as exc:
        raise ConfigError(f"--agent {agent}: task {split.task.name}: {exc}") from None
    except _ProbeError:
        pass


def run_selector_split(split: SplitPlan, env: Any, selector: LoadedSelector,
                       step: Callable[[int], None]) -> list[SelectorOutcome]:
    """The split's episodes in ``env`` (:meth:`SplitPlan.make_env`), in (trace, seed) order
    (``step(1)`` after each)."""
    outcomes = []
    for episode, durations in split.episodes(env):
        timed = TimedSelector(selector.select)
        done = run_selected_episode(episode, selector.rules, timed, durations)
        outcomes.append(SelectorOutcome(
            episode_metrics(done.result.metrics), done.choices, timed.seconds,
            done.result.episode_hash, timed.choices))
        step(1)
    return outcomes


def run_selector_entry(plan: Plan, selector: LoadedSelector, started: float
                       ) -> tuple[Path, int, float]:
    """Run a selector entry and write its results file (as
    :func:`agents.bench.runner.run_entry`; ``started``: its ``time.perf_counter()``).

    Raises:
        ConfigError: for ``workers`` > 1 or Ray (a selector entry runs in one process), a task
            the selector cannot run (:func:`check_selector_task`, or a rule refused on the
            task's first episode).
        OSError: if the output cannot be written.
    """
    from palgym.progress import SweepProgress

    request = plan.request
    if request.workers > 1 or request.ray_address is not None:
        raise ConfigError(f"--agent {request.agent}: a selector entry runs in one process "
                          "(on the engine, seconds per episode): drop --workers / --ray")
    runnable = selector_tasks(plan.suite)
    for task in plan.tasks:
        check_selector_task(task, f"--agent {request.agent}", runnable)
    splits = [plan.split_plan(unit) for unit in plan.first_units()]
    envs = [split.make_env() for split in splits]
    rows: list[Row] = []
    members: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for split, env in zip(splits, envs, strict=True):
            _probe(split, env, selector, request.agent)
        bar = SweepProgress(plan.total_episodes(), enabled=request.progress)
        try:
            for split, env in zip(splits, envs, strict=True):
                outcomes = run_selector_split(split, env, selector, bar.update)
                rows += split_rows(plan, split, outcomes)
                members[split.task.name] = {plan.name: {
                    "env_kwargs": {}, "env_layout": split.env_layout,
                    "selector": selector.member_object()}}
        finally:
            bar.close()
    finally:
        for env in envs:
            env.close()
    header = replace(plan.header(members), entry_kind=HEADER_KIND)
    write_results_or_recover(request.output, header, rows)
    return request.output, len(rows), time.perf_counter() - started


# --------------------------------------------------------------------------- replay
def selector_object_problem(value: Any) -> str:
    """Why a header's ``selector`` object is malformed (``""``: it is not)."""
    if not isinstance(value, dict) or set(value) != set(SELECTOR_KEYS):
        return f"an object with keys {list(SELECTOR_KEYS)}"
    sha = value["sha256"]
    if not (isinstance(sha, str) and len(sha) == 64
            and all(c in "0123456789abcdef" for c in sha)):
        return "sha256: 64 lowercase hex digits"
    rules = value["rules"]
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        return "rules: a list of ORDER/PLACEMENT names"
    try:
        check_rules(rules)
    except ConfigError as exc:
        return f"rules: {exc}"
    return ""


def replay_selector_row(env: Any, row: Any, index: int, rules: Sequence[str]
                        ) -> dict[str, Any]:
    """Replay one selector row: the episode ``env`` builds on trace ``index`` with the row's
    seed, run by :func:`run_selected_episode` with the row's recorded choices.

    Returns:
        The row's recomputed fields (:data:`palgym.bench.results.METRIC_FIELDS` and
        ``episode_hash``), or ``{"actions": note}`` when the choices do not make one whole
        episode (the selector asked more or fewer times than recorded, or a choice is
        refused).
    """
    choices = decode_actions(row.actions, row.decisions).tolist()
    episode, durations = env_episode(env, row.seed, index)
    recorded = _RecordedChoices(choices)
    try:
        done = run_selected_episode(episode, rules, recorded, durations)
    except _TooManyAsksError:
        return {"actions": f"the selector is asked more than the file's {len(choices)} times"}
    except InvalidActionError as exc:
        return {"actions": f"choice {recorded.asked - 1} refused: {exc}"}
    except PalgymError as exc:
        return {"actions": f"the episode stopped after {recorded.asked} choices: {exc}"}
    if done.choices != len(choices):
        return {"actions": f"the episode ended after {done.choices} of the file's "
                           f"{len(choices)} choices"}
    return {"episode_hash": done.result.episode_hash,
            **row_metrics(episode_metrics(done.result.metrics), done.choices)}


__all__ = ["HEADER_KIND", "PREFIX", "LoadedSelector", "SelectorOutcome", "check_selector_task",
           "replay_selector_row", "run_selector_entry", "selector_object_problem",
           "selector_path"]
