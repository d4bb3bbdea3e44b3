"""One results file's check for ``python -m palgym.bench validate`` (:mod:`palgym.bench.replay`):
its problems (:class:`Problem`, each naming the file, the line, the field, the expected and the
found value) and the checks of its header against the suite (:class:`FileCheck`).

The header's suite must have the bytes the file was run on (``suite_sha256``); each task's env
must have the layout the header records and the suite was frozen with; each member's env kwargs
must be among :data:`~palgym.bench.results.AGENT_KWARGS` (its own queue order only under the
task's ``free`` regime) and its env's layout must be the one recorded; a selector's, a recorded
schedule's and a reference's member carry a valid object of their kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from palgym.bench.bound_entry import bound_object_problem
from palgym.bench.module_entry import schedule_object_problem
from palgym.bench.results import AGENT_KWARGS, ResultsFile
from palgym.bench.selector_entry import check_selector_task, selector_object_problem
from palgym.bench.suites import DataRoots, Suite, Task, split_env_kwargs, suite_test_traces
from palgym.errors import PalgymError


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


def same_bits(expected: Any, found: Any) -> bool:
    """Equal, floats bit for bit (their hex forms)."""
    if isinstance(expected, float) and isinstance(found, float):
        return expected.hex() == found.hex()
    return bool(expected == found) and type(expected) is type(found)


class FileCheck:
    """The problems of one results file, and the checks of its header against the suite
    (:meth:`header`); the replay of its rows (:func:`palgym.bench.replay.check_rows`) and a
    ``best`` entry's choices (:func:`palgym.bench.choice_check.check_choices`) add theirs with
    :meth:`add`."""

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


__all__ = ["FileCheck", "Problem", "same_bits"]
