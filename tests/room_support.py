"""The machinery the room tests share: a tiny suite (:func:`tests.bench_suites.tiny_suite`)
and its module-scoped entries (``field``, ``best-known``, ``lower-bound``), each run once per
test module, and the reading of their results files back.

A test module states only what differs, its suite and the tasks its entries run::

    ROOM = Room("room", lambda folder: tiny_suite(folder, [...]), tasks=(TASK,))
    suite, folder, field, best_known, bound = ROOM.fixtures()
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agents.bench.runner import run_entry
from palgym.bench.entries import RunRequest
from palgym.bench.replay import validate_files
from palgym.bench.results import read_results
from palgym.bench.suites import DataRoots

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
"""The repository's benchmark scripts (plain files, not a package)."""


def script(name: str) -> ModuleType:
    """The benchmark script ``benchmarks/NAME.py``, loaded as a module (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


Key = tuple[str, str, int]
"""An episode: (task, trace, seed)."""


def problems(path: Path, suite: Path) -> list:
    """The replay's problems with the results file ``path`` of ``suite`` ([] when it
    validates)."""
    [(_, found)] = list(validate_files([path], DataRoots(), suite))
    return found


def jcts(path: Path, member: str | None = None, split: str = "test") -> dict[Key, float]:
    """The average JCTs (s) of a results file's ``split`` episodes by (task, trace, seed):
    every row, or only ``member``'s (a field's member)."""
    return {(row.task, row.trace, row.seed): row.avg_jct_s
            for _, row in read_results(path).episodes
            if row.split == split and (member is None or row.member == member)}


def rows(path: Path, *fields: str, task: str | None = None) -> list[tuple[Any, ...]]:
    """The ``fields`` of a results file's episode rows, in file order (only ``task``'s)."""
    get = attrgetter(*fields)
    return [tuple(get(row)) if len(fields) > 1 else (get(row),)
            for _, row in read_results(path).episodes if task is None or row.task == task]


@dataclass(frozen=True)
class Room:
    """A test module's tiny suite and the entries run on it.

    Attributes:
        name: the temporary folders' prefix.
        make_suite: writes the suite file into a folder, returns its path.
        tasks: the tasks an entry runs unless told otherwise.
        best_known: the ``best-known`` fixture's ``--agent`` spec.
        reference_tasks: the tasks the ``best_known`` and ``bound`` fixtures run (None:
            :attr:`tasks`).
    """

    name: str
    make_suite: Callable[[Path], Path]
    tasks: tuple[str, ...]
    best_known: str = "best-known"
    reference_tasks: tuple[str, ...] | None = None

    def run(self, suite: Path, agent: str, out: Path, tasks: tuple[str, ...] | None = None,
            **options: Any) -> Path:
        """Run the entry ``agent`` on ``tasks`` (default: :attr:`tasks`) of ``suite`` into
        ``out`` (``options``: further :class:`RunRequest` fields); returns the results file."""
        request = RunRequest(str(suite), agent, out, DataRoots(),
                             tasks=self.tasks if tasks is None else tasks, progress=False,
                             **options)
        return run_entry(request)[0]

    def fixtures(self) -> tuple[Any, ...]:
        """The module-scoped fixtures ``suite``, ``folder`` (where the entries write),
        ``field``, ``best_known`` and ``bound`` (the ``lower-bound`` entry), in that order:
        assign them to those names in the test module."""

        @pytest.fixture(scope="module", name="suite")
        def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
            """The tiny suite's file."""
            return self.make_suite(tmp_path_factory.mktemp(self.name))

        @pytest.fixture(scope="module", name="folder")
        def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
            """Where the module's entries write their results files."""
            return tmp_path_factory.mktemp(f"{self.name}-results")

        @pytest.fixture(scope="module", name="field")
        def field(suite: Path, folder: Path) -> Path:
            """The ``field`` entry's results file."""
            return self.run(suite, "field", folder / "field.jsonl")

        @pytest.fixture(scope="module", name="best_known")
        def best_known(suite: Path, folder: Path) -> Path:
            """The ``best-known`` entry's results file (spec :attr:`best_known`)."""
            return self.run(suite, self.best_known, folder / "best-known.jsonl",
                            self.reference_tasks)

        @pytest.fixture(scope="module", name="bound")
        def bound(suite: Path, folder: Path) -> Path:
            """The ``lower-bound`` entry's results file."""
            return self.run(suite, "lower-bound", folder / "lower-bound.jsonl",
                            self.reference_tasks)

        return suite, folder, field, best_known, bound
