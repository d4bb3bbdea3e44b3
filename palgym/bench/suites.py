"""Benchmark suites as data: the committed YAML files of ``palgym/bench/suites/``.

A suite (``format: palgym-bench-suite/1``) is frozen: a results file records the SHA-256 of
the suite file's bytes (:attr:`Suite.sha256`) and is valid for those bytes only; a changed
suite is a new suite (a new name or ``version``). It holds:

- ``files``: every file a task reads, by id, each with the SHA-256 of its bytes and its
  ``source``: ``bundled`` (under ``palgym/data``), ``generated`` (written into a cache folder
  by ``python -m palgym.bench prepare``, which runs the file's ``command``, a
  ``python -m traces ...`` line) or ``data`` (public files under ``PALGYM_DATA_DIR``);
- ``tasks``: each an env id (with its version, e.g. ``palgym/PALPlacement-v0``) and the layout
  hash of its env (:func:`palgym.envs.layouts.env_layout`), the ``world`` every contender
  shares (env kwargs among :data:`WORLD_KEYS`: preset, cluster, window, ...), where the GPUs'
  speeds come from (``variability``: ``{bundled: FILE}``, the env's bundled profile of the
  preset; ``{profile: FILE}``; ``{measurements: [FILE, ...]}``, a measurement folder), what the
  scheduler knows (``duration_knowledge``, ``belief``), the queue order and its regime
  (``fixed``: every contender runs under it; ``free``: a contender may bring its own, e.g.
  ``srtf/pal+backfill``), the heuristic field the validation-chosen ``best`` is picked from,
  the evaluation seeds and the train / validation / test splits (trace file ids, or
  ``{trace: ID, jobs: [START, STOP]}``); a split may override ``world`` and ``variability``
  (the cross-cluster task validates on one cluster and tests on another).

:func:`load_suite` reads and checks a suite (every error names the file and the field);
:func:`check_files` finds the files of the chosen tasks and checks their hashes (a missing file
is named with the variable or flag that locates it; a changed one with both hashes);
:func:`split_env_kwargs` and :func:`split_traces` give what the env of one split is built from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from palgym.bench.suite_schema import (
    DATA_DIR_VARIABLE,
    MAX_SUITE_WINDOW,
    SOURCES,
    SPLIT_NAMES,
    SUITE_FORMAT,
    TRACES_COMMAND,
    Split,
    Suite,
    SuiteDataError,
    SuiteError,
    SuiteFile,
    SuiteReader,
    Task,
    TraceRef,
)
from palgym.errors import ConfigError
from palgym.io.sia import read_sia_trace
from palgym.io.strict_json import MAX_DEPTH, StrictJsonError, check_tree, read_bounded
from palgym.sim.workload import Trace
from palgym.tracesets import job_range


@dataclass(frozen=True)
class DataRoots:
    """Where the ``data`` and ``generated`` files are (None: not given)."""

    data_dir: Path | None = None
    cache_dir: Path | None = None

    def path(self, file: SuiteFile) -> Path | None:
        """The file's path, or None when its source folder was not given.

        Raises:
            SuiteDataError: for a path that resolves outside its source's folder (through
                ``..`` or a link), naming the file and the folder.
        """
        if file.source == "bundled":
            root: Path | None = Path(str(resources.files("palgym").joinpath("data")))
        else:
            root = self.data_dir if file.source == "data" else self.cache_dir
        if root is None:
            return None
        path = root.joinpath(*file.path.split("/"))
        if not path.resolve().is_relative_to(root.resolve()):
            raise SuiteDataError(f"file {file.id!r}: {file.path!r} resolves to "
                                 f"{path.resolve()}, outside its {file.source} folder {root}")
        return path


MAX_SUITE_BYTES = 1 << 20
"""The largest suite file read (the committed suites are about 10 kB)."""


def suite_folder() -> Path:
    """The folder of the committed suites (``palgym/bench/suites``)."""
    return Path(str(resources.files("palgym").joinpath("bench", "suites")))


def suite_names() -> list[str]:
    """The committed suites' names (file stems), sorted."""
    return sorted(p.stem for p in suite_folder().glob("*.yaml"))


def suite_path(name_or_path: str | Path) -> Path:
    """A committed suite's file by name, or a suite file's path.

    Raises:
        ConfigError: naming the committed suites, when neither exists.
    """
    committed = suite_folder() / f"{name_or_path}.yaml"
    if committed.is_file():
        return committed
    if Path(name_or_path).is_file():
        return Path(name_or_path)
    raise ConfigError(f"unknown suite {str(name_or_path)!r}: give a suite file or one of "
                      f"{', '.join(suite_names())}")


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_suite(name_or_path: str | Path) -> Suite:
    """Read and check a suite (:func:`suite_path` finds it).

    Raises:
        ConfigError: for an unknown suite.
        SuiteError: naming the file and the field, for a malformed suite.
    """
    import yaml

    path = suite_path(name_or_path)
    try:
        raw = read_bounded(path, MAX_SUITE_BYTES, "a suite file")
        text = raw.decode("utf-8")
        _check_yaml_depth(text, path)
        data = yaml.safe_load(text)
        check_tree(data, path)
    except StrictJsonError as exc:
        raise SuiteError(str(exc)) from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: not a YAML file ({exc})") from None
    reader = SuiteReader(path)
    doc = reader.mapping(data, "the file", ("format", "name", "version", "description",
                                            "files", "splits", "tasks"))
    if doc.get("format") != SUITE_FORMAT:
        reader.fail("format", f"must be {SUITE_FORMAT!r}, got {doc.get('format')!r}")
    files = {fid: reader.suite_file(fid, spec)
             for fid, spec in reader.mapping(doc.get("files"), "files").items()}
    tasks = tuple(reader.task(f"tasks[{i}]", spec, files)
                  for i, spec in enumerate(reader.sequence(doc.get("tasks"), "tasks")))
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        reader.fail("tasks", f"task names must be unique, got {names}")
    return Suite(reader.text(doc.get("name"), "name"), reader.integer(doc.get("version"),
                                                                     "version"),
                 str(doc.get("description") or ""), path, hashlib.sha256(raw).hexdigest(),
                 files, tasks)


def _check_yaml_depth(text: str, path: Path) -> None:
    """Refuse YAML nested deeper than :data:`palgym.io.strict_json.MAX_DEPTH`, from the
    parser's event stream (which does not recurse), before the document is composed (which
    does).

    Raises:
        StrictJsonError: naming the file and the line.
    """
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else None
                raise StrictJsonError(f"nested deeper than {MAX_DEPTH} mappings/lists", path,
                                      line)
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            depth -= 1


def split_variability(task: Task, split: str) -> Mapping[str, Any]:
    """The variability spec of ``split`` (its own, else the task's)."""
    return task.splits[split].variability or task.variability


def split_files(suite: Suite, task: Task, split: str) -> list[SuiteFile]:
    """The files ``split`` of ``task`` reads: its traces and its variability's files."""
    ids = [ref.file for ref in task.splits[split].traces]
    for value in split_variability(task, split).values():
        ids += value if isinstance(value, list) else [value]
    return [suite.files[fid] for fid in dict.fromkeys(ids)]


def check_files(suite: Suite, files: Sequence[SuiteFile], roots: DataRoots) -> None:
    """Every file exists and has its recorded SHA-256.

    Raises:
        SuiteDataError: naming every missing file with how to provide it (``PALGYM_DATA_DIR``
            or ``--data-dir`` for public data; ``python -m palgym.bench prepare`` and
            ``--cache`` for generated files), or the first changed file with the expected and
            the actual hash.
    """
    missing: dict[str, list[str]] = {}
    for file in dict.fromkeys(files):
        path = roots.path(file)
        if path is None or not path.is_file():
            missing.setdefault(file.source, []).append(str(path or file.path))
    if missing:
        raise SuiteDataError(f"suite {suite.name}: missing files: " + "; ".join(
            f"{', '.join(paths)} ({_hint(source, suite, roots)})"
            for source, paths in missing.items()))
    for file in dict.fromkeys(files):
        path = roots.path(file)
        assert path is not None
        actual = file_sha256(path)
        if actual != file.sha256:
            raise SuiteDataError(f"suite {suite.name}: {path} (file {file.id!r}) has SHA-256 "
                                 f"{actual}, the suite expects {file.sha256}")


def _hint(source: str, suite: Suite, roots: DataRoots) -> str:
    if source == "data":
        if roots.data_dir is None:
            return (f"public data: pass --data-dir DIR or set {DATA_DIR_VARIABLE}, the folder "
                    "holding traces/ and variability/")
        return (f"public data: not in {roots.data_dir} (--data-dir, else {DATA_DIR_VARIABLE}): "
                "give the folder holding traces/ and variability/")
    if source == "generated":
        cache = "--cache DIR" if roots.cache_dir is None else f"--cache {roots.cache_dir}"
        return (f"generated: run python -m palgym.bench prepare --suite {suite.name} {cache}, "
                "then pass the same --cache")
    return "bundled with palgym: reinstall palgym"


def suite_test_traces(suite: Suite) -> frozenset[str]:
    """The trace file ids of every task's test split (what a ``submission``'s
    ``selection_data`` may not name: :func:`palgym.bench.submission.check_submission`)."""
    return frozenset(ref.file for task in suite.tasks for ref in task.splits["test"].traces)


def split_env_kwargs(suite: Suite, task: Task, split: str, roots: DataRoots) -> dict[str, Any]:
    """The env kwargs every contender of ``split`` shares (without ``trace``): the world
    (the split's overrides on the task's), duration knowledge, belief, queue order and the
    profile file or measurement folder (none for the bundled profile: the env's own)."""
    kwargs: dict[str, Any] = {**task.world, **task.splits[split].world,
                              "duration_knowledge": task.duration_knowledge,
                              "belief": task.belief, "queue_order": task.queue_order}
    variability = split_variability(task, split)
    if "profile" in variability:
        kwargs["profile"] = str(roots.path(suite.files[variability["profile"]]))
    if "measurements" in variability:
        first = roots.path(suite.files[variability["measurements"][0]])
        kwargs["variability_data"] = str(Path(str(first)).parent)
    return kwargs


def split_traces(suite: Suite, task: Task, split: str, roots: DataRoots) -> list[Trace]:
    """The traces of ``split`` (ids: :attr:`TraceRef.label`; job ranges rebased to their first
    arrival), read after :func:`check_files`.

    Raises:
        SuiteDataError: as :func:`check_files`.
        SuiteError: for a ``window`` larger than a trace of the split.
        TraceFormatError: for a malformed trace file.
    """
    check_files(suite, split_files(suite, task, split), roots)
    traces = []
    window = {**task.world, **task.splits[split].world}.get("window")
    for ref in task.splits[split].traces:
        path = roots.path(suite.files[ref.file])
        trace = read_sia_trace(str(path), name=ref.file)
        trace = (trace if ref.jobs is None else
                 job_range(trace, ref.jobs[0], ref.jobs[1], ref.label))
        if window is not None and window > trace.num_jobs:
            raise SuiteError(f"{suite.path}, field 'tasks.{task.name}.world.window': a window "
                             f"of {window} jobs is larger than trace {ref.label!r} of split "
                             f"{split} ({trace.num_jobs} jobs): its episodes would run the "
                             "whole trace (leave the window out to run whole traces)")
        traces.append(trace)
    return traces


__all__ = [
    "DATA_DIR_VARIABLE", "MAX_SUITE_BYTES", "MAX_SUITE_WINDOW",
    "SOURCES", "SPLIT_NAMES", "SUITE_FORMAT", "TRACES_COMMAND", "DataRoots",
    "Split", "Suite", "SuiteDataError", "SuiteError", "SuiteFile", "Task", "TraceRef",
    "check_files", "file_sha256", "load_suite", "split_env_kwargs", "split_files",
    "split_traces", "split_variability", "suite_names", "suite_path", "suite_test_traces",
]
