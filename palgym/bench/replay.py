"""``python -m palgym.bench validate``: replay every row's actions, recompute every metric.

For each results file (:mod:`palgym.bench.results`): the suite it names must have the bytes it
was run on (``suite_sha256``); each task's env must have the layout the header records and the
suite was frozen with; each member's env kwargs must be among
:data:`~palgym.bench.results.AGENT_KWARGS` (its own queue order only under the task's ``free``
regime) and its env's layout must be the one recorded. Then every episode row is replayed: a
fresh env of the task's split (the split's env kwargs, the member's, the split's traces), reset
with the row's seed on the row's trace, steps the row's actions, and every field but
``decision_time_s`` is recomputed from the env (``episode_hash`` from the reset, the metrics
from the final step) and compared bit for bit. A rule selector's row (a member with a
``selector`` object) is replayed on the episode that env builds, by the engine's rule selection
with the recorded choices (:func:`palgym.bench.selector_entry.replay_selector_row`), and a
user's placement's row (a member with a ``schedule`` object) on that episode by its recorded
schedule, without the user's module (:func:`palgym.bench.module_entry.replay_schedule_row`).
The file
must hold every (trace, seed) of the splits it runs exactly once per member; a ``best`` entry's
choice must be the lowest of its validation geomeans (and, when a ``field`` file of the same
suite is validated with it, those geomeans must be the field's, recomputed from its validation
rows).

Every disagreement is a :class:`Problem` naming the file, the line, the field, the expected
and the found value; the file is rejected when there is any.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from palgym.bench.module_entry import replay_schedule_row, schedule_object_problem
from palgym.bench.reference_entry import bound_object_problem, replay_bound_row
from palgym.bench.results import (
    AGENT_KWARGS,
    METRIC_FIELDS,
    ChoiceRow,
    EpisodeRow,
    ResultsError,
    ResultsFile,
    decode_actions,
    read_results,
    row_metrics,
)
from palgym.bench.selector_entry import (
    check_selector_task,
    replay_selector_row,
    selector_object_problem,
)
from palgym.bench.suites import (
    DataRoots,
    Suite,
    Task,
    load_suite,
    split_env_kwargs,
    split_traces,
    suite_names,
    suite_test_traces,
)
from palgym.errors import PalgymError
from palgym.policies.loader import no_user_imports
from palgym.sim.metrics import geomean


@dataclass(frozen=True)
class Problem:
    """One reason a results file is rejected."""

    path: str
    line: int | None
    field: str | None
    expected: Any
    found: Any
    note: str = ""

    def __str__(self) -> str:
        where = ", ".join([self.path] + ([f"line {self.line}"] if self.line else [])
                          + ([f"field {self.field!r}"] if self.field else []))
        note = f" ({self.note})" if self.note else ""
        return f"{where}: expected {self.expected!r}, found {self.found!r}{note}"


def _same(expected: Any, found: Any) -> bool:
    """Equal, floats bit for bit (their hex forms)."""
    if isinstance(expected, float) and isinstance(found, float):
        return expected.hex() == found.hex()
    return bool(expected == found) and type(expected) is type(found)


def replay_row(env: Any, row: EpisodeRow, index: int) -> dict[str, Any]:
    """Replay one row in ``env`` (reset with the row's seed on trace ``index``).

    Returns:
        The row's recomputed fields: :data:`METRIC_FIELDS` and ``episode_hash``, or
        ``{"actions": note}`` when the actions do not make one whole episode.
    """
    _, info = env.reset(seed=row.seed, options={"trace": index})
    actions = decode_actions(row.actions, row.decisions)
    for step, action in enumerate(actions.tolist()):
        try:
            _, _, terminated, truncated, step_info = env.step(int(action))
        except PalgymError as exc:
            return {"actions": f"action {step} ({action}) refused: {exc}"}
        if terminated or truncated:
            if step + 1 != actions.size:
                return {"actions": f"the episode ended after {step + 1} of {actions.size} "
                                   "actions"}
            return {"episode_hash": str(info["episode_hash"]),
                    **row_metrics(step_info["episode_metrics"], actions.size)}
    return {"actions": f"the episode has not ended after the file's {actions.size} actions"}


class _Check:
    """The problems of one file."""

    def __init__(self, results: ResultsFile, suite: Suite, roots: DataRoots,
                 on_row: Callable[[int], None] | None = None) -> None:
        self.results, self.suite, self.roots = results, suite, roots
        self.on_row = on_row
        self.problems: list[Problem] = []

    def add(self, line: int | None, field: str | None, expected: Any, found: Any,
            note: str = "") -> None:
        self.problems.append(Problem(str(self.results.path), line, field, expected, found,
                                     note))

    def header(self) -> None:
        from palgym.bench.submission import SubmissionError, check_submission
        from palgym.envs.layouts import env_layout

        header = self.results.header
        if header.submission is not None:
            try:
                check_submission(header.submission, f"{self.results.path}, line 1",
                                 suite_test_traces(self.suite))
            except SubmissionError as exc:
                self.add(1, exc.field, exc.rule, exc.found, "docs/SUBMITTING.md")
        if header.suite_sha256 != self.suite.sha256:
            self.add(1, "suite_sha256", self.suite.sha256, header.suite_sha256,
                     f"the file was run on other bytes of {self.suite.path}")
        for name, recorded in header.env_layouts.items():
            task = self.task(name, 1, f"env_layouts.{name}")
            if task is None:
                continue
            current = env_layout(task.env_id, split_env_kwargs(self.suite, task, "test",
                                                                self.roots))
            if recorded != current or recorded != task.env_layout:
                self.add(1, f"env_layouts.{name}", current, recorded,
                         f"the current {task.env_id} layout (the suite's: {task.env_layout})")
        for name, members in header.members.items():
            self.members(name, members)
        self.consistency()

    def members(self, name: str, members: Mapping[str, Any]) -> None:
        """The members of task ``name``: at most one per entry (a field entry: one per field
        member), since each builds an env, then each one's kwargs and layout."""
        task = self.task(name, 1, f"members.{name}")
        if task is None:
            return
        most = max(1, len(task.heuristic_field))
        if len(members) > most:
            self.add(1, f"members.{name}", f"at most {most} members (one per entry; a field "
                     "entry: one per field member)", len(members))
            return
        for member, entry in members.items():
            self.member(task, member, entry)

    def consistency(self) -> None:
        """The header agrees with itself and the suite: the suite's name, the same tasks in
        ``env_layouts`` and ``members``, and ``seeds`` the seeds of those tasks."""
        header, suite = self.results.header, self.suite
        if header.suite != suite.name and header.suite != str(suite.path):
            self.add(1, "suite", suite.name, header.suite, f"the suite of {suite.path}")
        if sorted(header.members) != sorted(header.env_layouts):
            self.add(1, "members", sorted(header.env_layouts), sorted(header.members),
                     "the tasks of env_layouts")
        names = {t.name for t in suite.tasks}
        seeds = sorted({s for t in suite.tasks if t.name in header.env_layouts and t.name in names
                        for s in t.seeds})
        if header.seeds != seeds:
            self.add(1, "seeds", seeds, header.seeds, "the seeds of the header's tasks")

    def selector(self, task: Task, field: str, entry: dict[str, Any]) -> bool:
        """A selector member: its ``selector`` object, no env kwargs, a task it can run
        (False: a problem was added)."""
        before = len(self.problems)
        problem = selector_object_problem(entry["selector"])
        if problem:
            self.add(1, f"{field}.selector", problem, entry["selector"])
        elif entry["env_kwargs"] != {}:
            self.add(1, f"{field}.env_kwargs", {}, entry["env_kwargs"],
                     "a selector adds no env kwarg")
        else:
            try:
                check_selector_task(task, "a selector member")
            except PalgymError as exc:
                self.add(1, field, "a task a selector runs", task.name, str(exc))
        return len(self.problems) == before

    def schedule(self, task: Task, field: str, entry: dict[str, Any]) -> bool:
        """A recorded schedule's member: its ``schedule`` object, no env kwargs (False: a
        problem was added)."""
        problem = schedule_object_problem(entry["schedule"], task.queue_order,
                                          task.queue_order_regime)
        if problem:
            self.add(1, f"{field}.schedule", problem, entry["schedule"])
        elif entry["env_kwargs"] != {}:
            self.add(1, f"{field}.env_kwargs", {}, entry["env_kwargs"],
                     "a recorded schedule adds no env kwarg")
        return not problem and entry["env_kwargs"] == {}

    def task(self, name: str, line: int, field: str) -> Task | None:
        names = [t.name for t in self.suite.tasks]
        if name not in names or name not in self.results.header.env_layouts:
            self.add(line, field, "a task of the suite and of the header's env_layouts", name)
            return None
        return self.suite.task(name)

    def member(self, task: Task, member: str, entry: Any) -> None:
        from palgym.envs.layouts import env_layout

        field = f"members.{task.name}.{member}"
        keys = {"env_kwargs", "env_layout"}
        extra = {"selector", "schedule", "bound"}
        if (not isinstance(entry, dict) or set(entry) - extra != keys
                or len(set(entry) & extra) > 1):
            self.add(1, field, "{'env_kwargs': {...}, 'env_layout': HASH}", entry)
            return
        own = entry["env_kwargs"]
        if "selector" in entry and not self.selector(task, field, entry):
            return
        if "schedule" in entry and not self.schedule(task, field, entry):
            return
        if "bound" in entry and (problem := bound_object_problem(entry["bound"])):
            self.add(1, f"{field}.bound", problem, entry["bound"])
            return
        allowed = [k for k in AGENT_KWARGS if k != "queue_order"
                   or task.queue_order_regime == "free"]
        bad = [k for k in own if k not in allowed] if isinstance(own, dict) else own
        if bad:
            self.add(1, f"{field}.env_kwargs", f"keys among {allowed}", bad)
            return
        kwargs = {**split_env_kwargs(self.suite, task, "test", self.roots), **own}
        try:
            current = env_layout(task.env_id, kwargs)
        except PalgymError as exc:
            self.add(1, f"{field}.env_kwargs", "kwargs the env takes", own, str(exc))
            return
        if current != entry["env_layout"]:
            self.add(1, f"{field}.env_layout", current, entry["env_layout"],
                     "the current env's layout with these kwargs")


def _groups(rows: Sequence[tuple[int, EpisodeRow]]
            ) -> dict[tuple[str, str, str], list[tuple[int, EpisodeRow]]]:
    groups: dict[tuple[str, str, str], list[tuple[int, EpisodeRow]]] = {}
    for line, row in rows:
        groups.setdefault((row.task, row.split, row.member), []).append((line, row))
    return groups


def check_rows(check: _Check) -> None:
    """Every row's place (task, member, split, trace, hash, seed), completeness, replay."""
    header, suite = check.results.header, check.suite
    splits = ("validation", "test") if header.entry_kind == "field" else ("test",)
    groups = _groups(check.results.episodes)
    for task_name, members in header.members.items():
        for member in members:
            for split in splits:
                if (task_name, split, member) not in groups:
                    check.add(None, "record", f"{split} episodes of {member} on {task_name}",
                              "none")
    for line, row in check.results.episodes:
        if row.seed not in header.seeds:
            check.add(line, "seed", f"one of the header's seeds {header.seeds}", row.seed)
    for (task_name, split, member), rows in groups.items():
        entry = header.members.get(task_name, {}).get(member)
        if entry is None or split not in splits or task_name not in [t.name for t in
                                                                      suite.tasks]:
            check.add(rows[0][0], "member", f"a member of the header on the "
                      f"{'/'.join(splits)} split", f"{member} on {task_name} / {split}")
            continue
        _replay_group(check, suite.task(task_name), split, member, entry, rows)


def _replay_group(check: _Check, task: Task, split: str, member: str,
                  entry: Mapping[str, Any], rows: Sequence[tuple[int, EpisodeRow]]) -> None:
    """Replay one member's rows of one split in a fresh env of that split (a selector
    member's: :func:`palgym.bench.selector_entry.replay_selector_row`)."""
    import gymnasium as gym

    suite, own = check.suite, entry["env_kwargs"]
    rules = entry["selector"]["rules"] if "selector" in entry else None
    refs = task.splits[split].traces
    labels = [r.label for r in refs]
    wanted = {(label, s) for label in labels for s in task.seeds}
    seen: set[tuple[str, int]] = set()
    kwargs = {**split_env_kwargs(suite, task, split, check.roots), **own}
    traces = split_traces(suite, task, split, check.roots)
    try:
        env = gym.make(task.env_id, **kwargs, trace=traces)
    except PalgymError as exc:  # e.g. a member's own queue order that cannot be made
        check.add(1, f"members.{task.name}.{member}.env_kwargs", "kwargs the env takes", own,
                  str(exc))
        return
    try:
        for line, row in rows:
            key = (row.trace, row.seed)
            if key not in wanted or key in seen:
                check.add(line, "trace", "each trace x seed of the split once",
                          f"{row.trace} seed {row.seed}")
                continue
            seen.add(key)
            ref = refs[labels.index(row.trace)]
            if row.trace_sha256 != suite.files[ref.file].sha256:
                check.add(line, "trace_sha256", suite.files[ref.file].sha256, row.trace_sha256)
            index = labels.index(row.trace)
            if "schedule" in entry:
                replayed = replay_schedule_row(env, row, index)
            elif "bound" in entry:
                replayed = replay_bound_row(env, row, index)
            elif rules is not None:
                replayed = replay_selector_row(env, row, index, rules)
            else:
                replayed = replay_row(env, row, index)
            _compare(check, line, row, replayed)
            if check.on_row is not None:
                check.on_row(1)
    finally:
        env.close()
    for trace, seed in sorted(wanted - seen):
        check.add(None, "record", f"{split} episode {trace} seed {seed} of {member} on "
                  f"{task.name}", "none")


def _compare(check: _Check, line: int, row: EpisodeRow, replayed: Mapping[str, Any]) -> None:
    if "actions" in replayed:
        check.add(line, "actions", "one whole episode", replayed["actions"])
        return
    for name in ("episode_hash", *METRIC_FIELDS):
        found = getattr(row, name)
        if not _same(replayed[name], found):
            check.add(line, name, replayed[name], found)


def check_choices(check: _Check, field_files: Sequence[ResultsFile]) -> None:
    """A ``best`` file's choices: one per task, the lowest geomean (ties by label), its rows'
    member; against a validated ``field`` file's validation rows when there is one."""
    header = check.results.header
    if header.entry_kind != "best":
        for line, _ in check.results.choices:
            check.add(line, "record", "no choice line outside a best entry", "choice")
        return
    chosen = {c.task: (line, c) for line, c in check.results.choices}
    for task_name in header.env_layouts:
        if task_name not in chosen:
            check.add(None, "record", f"a choice line for {task_name}", "none")
            continue
        line, choice = chosen[task_name]
        _check_choice(check, line, choice, field_files)


def _check_choice(check: _Check, line: int, choice: ChoiceRow,
                  field_files: Sequence[ResultsFile]) -> None:
    task = check.suite.task(choice.task)
    values = choice.validation_geomean_avg_jct_s
    if list(values) != list(task.heuristic_field) or choice.field != list(task.heuristic_field):
        check.add(line, "field", list(task.heuristic_field), choice.field)
        return
    finite = [(v, k) for k, v in values.items() if v is not None and math.isfinite(v)]
    if not finite or min(finite)[1] != choice.member:
        check.add(line, "member", min(finite)[1] if finite else None, choice.member)
    members = list(check.results.header.members.get(choice.task, {}))
    if members != [choice.member]:
        check.add(1, f"members.{choice.task}", [choice.member], members)
    for other in field_files:
        if other.header.suite_sha256 != check.results.header.suite_sha256:
            continue
        for member, value in values.items():
            rows = [r for _, r in other.episodes
                    if (r.task, r.split, r.member) == (choice.task, "validation", member)]
            if not rows or any(r.unfinished_jobs for r in rows):
                continue  # the choice counts an unfinished episode's censored JCT (not in rows)
            expected = _geomean([r.avg_jct_s for r in rows])
            if not _same(expected, value if value is not None else math.nan):
                check.add(line, f"validation_geomean_avg_jct_s.{member}", expected, value,
                          f"from the validation rows of {other.path}")


def _geomean(values: Sequence[float | None]) -> float:
    """Geomean of the values (NaN if any is None or there are none)."""
    if not values or any(v is None for v in values):
        return math.nan
    return geomean([float(v) for v in values if v is not None])


NO_IMPORT = ("validate imports no module a results file names (importing a module runs its "
             "code); pass --trust-modules if you trust the file and the module")
"""Why ``validate`` refuses a ``MODULE:CLASS`` name of a header (a member's own queue order,
a selector's rule) without ``--trust-modules``."""


def validate_files(paths: Sequence[str | Path], roots: DataRoots,
                   suite_file: str | Path | None = None, allow_large: bool = False,
                   trust_modules: bool = False,
                   on_row: Callable[[int], None] | None = None
                   ) -> Iterator[tuple[Path, list[Problem]]]:
    """Validate each results file (see the module docstring).

    Args:
        paths: results files.
        roots: where the suites' public and generated files are.
        suite_file: the suite file to check against (None: the committed suite each header
            names).
        allow_large: lift the size limits of the results files
            (:func:`palgym.bench.results.read_results`).
        trust_modules: import the modules a header's ``MODULE:CLASS`` names need (else each
            such name is a problem, :data:`NO_IMPORT`, and no module is imported).
        on_row: called with 1 after each episode row is replayed (a progress count).

    Yields:
        ``(path, problems)`` per file, in order (no problem: the file is valid).

    Raises:
        ConfigError: for an unknown suite; SuiteDataError for missing or changed data files.
        OSError: for a file that cannot be read.
    """
    files: list[ResultsFile | Problem] = []
    for path in paths:
        try:
            files.append(read_results(path, allow_large))
        except ResultsError as exc:
            files.append(Problem(exc.path, exc.line, exc.field, "a valid results file",
                                 str(exc).split(": ", 1)[-1]))
    field_files = [f for f in files if isinstance(f, ResultsFile)
                   and f.header.entry_kind == "field"]
    for item in files:
        if isinstance(item, Problem):
            yield Path(item.path), [item]
            continue
        if suite_file is None and item.header.suite not in suite_names():
            yield item.path, [Problem(str(item.path), 1, "suite", f"one of the committed "
                                      f"suites {suite_names()}", item.header.suite,
                                      "or pass --suite FILE: a header never names a path")]
            continue
        suite = load_suite(suite_file or item.header.suite)
        check = _Check(item, suite, roots, on_row)
        with nullcontext() if trust_modules else no_user_imports(NO_IMPORT):
            check.header()
            if not check.problems:
                check_rows(check)
                check_choices(check, [f for f in field_files if f is not item])
        yield item.path, check.problems


__all__ = ["NO_IMPORT", "Problem", "replay_row", "validate_files"]
