"""The suite file's schema: its fields, the objects it reads into, and the reader that checks
every field (naming the file and the field); :mod:`palgym.bench.suites` loads suites with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from palgym.bundled import BUNDLED_PROFILES
from palgym.errors import ConfigError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset

SUITE_FORMAT = "palgym-bench-suite/1"
"""The ``format`` line of a suite file."""
SOURCES: tuple[str, ...] = ("bundled", "generated", "data")
"""Where a suite's files come from (see the module docstring)."""
SPLIT_NAMES: tuple[str, ...] = ("train", "validation", "test")
"""The splits every task declares."""
REGIMES: tuple[str, ...] = ("fixed", "free")
"""Queue-order regimes: every contender under the task's order, or its own."""
WORLD_KEYS: tuple[str, ...] = ("preset", "cluster", "window", "max_rounds", "locality_penalty",
                               "round_duration_s", "estimate_sigma")
"""Env kwargs a task's ``world`` may set (besides the task's variability, duration knowledge,
belief and queue order)."""
TASK_KEYS: tuple[str, ...] = (
    "name", "description", "env", "env_layout", "world", "variability", "duration_knowledge",
    "belief", "queue_order", "queue_order_regime", "heuristic_field", "seeds", "splits")
VARIABILITY_KINDS: tuple[str, ...] = ("bundled", "profile", "measurements")
DATA_DIR_VARIABLE = "PALGYM_DATA_DIR"
"""The environment variable that locates the public data (``--data-dir`` overrides it)."""
TRACES_COMMAND = "python -m traces "
"""How every ``generated`` file's command starts."""
GENERATING_COMMANDS: tuple[str, ...] = ("generate", "model-profile", "profile")
"""The ``python -m traces`` commands a ``generated`` file may run: each writes one file, which
``prepare`` puts at the file's path in the cache (``--output`` is prepare's to give)."""
MAX_SUITE_GPUS = 100_000
"""The most GPUs a suite's ``cluster`` may have (the paper's largest cluster has 512)."""
MAX_SUITE_WINDOW = 1_000_000
"""The largest ``window`` (jobs per episode) a suite may set; a window is also refused when it
is larger than a trace of its split (:func:`palgym.bench.suites.split_traces`), since such an
episode would silently run the whole trace."""


class SuiteError(ConfigError):
    """A malformed suite file (the message names the file and the field)."""


class SuiteDataError(ConfigError):
    """A suite's file that is missing or whose bytes changed (the message names it)."""


@dataclass(frozen=True)
class SuiteFile:
    """One file of a suite: its id, ``source``, path (relative to its source's folder), the
    hex SHA-256 of its bytes and, for a generated file, the ``python -m traces`` command."""

    id: str
    source: str
    path: str
    sha256: str
    command: str | None = None


@dataclass(frozen=True)
class TraceRef:
    """A split entry: a trace file, whole or jobs ``[start, stop)`` (arrival order)."""

    file: str
    jobs: tuple[int, int] | None = None

    @property
    def label(self) -> str:
        """The trace id in results: the file id, with ``[start:stop]`` for a job range."""
        return self.file if self.jobs is None else f"{self.file}[{self.jobs[0]}:{self.jobs[1]}]"


@dataclass(frozen=True)
class Split:
    """One split of a task: its traces, and the ``world`` / ``variability`` it overrides."""

    name: str
    traces: tuple[TraceRef, ...]
    world: Mapping[str, Any]
    variability: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Task:
    """One task of a suite (fields as in the module docstring)."""

    name: str
    description: str
    env_id: str
    env_layout: str
    world: Mapping[str, Any]
    variability: Mapping[str, Any]
    duration_knowledge: str
    belief: str
    queue_order: str
    queue_order_regime: str
    heuristic_field: tuple[str, ...]
    seeds: tuple[int, ...]
    splits: Mapping[str, Split]


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its name, version, file path and SHA-256, files and tasks."""

    name: str
    version: int
    description: str
    path: Path
    sha256: str
    files: Mapping[str, SuiteFile]
    tasks: tuple[Task, ...]

    def task(self, name: str) -> Task:
        """The task named ``name``.

        Raises:
            ConfigError: naming the suite's tasks, if there is none.
        """
        for task in self.tasks:
            if task.name == name:
                return task
        raise ConfigError(f"suite {self.name} has no task {name!r}; its tasks: "
                          f"{', '.join(t.name for t in self.tasks)}")

    def select(self, names: Sequence[str] | None) -> tuple[Task, ...]:
        """The tasks named (suite order kept for None: every task).

        Raises:
            ConfigError: for an unknown name.
        """
        return self.tasks if not names else tuple(self.task(n) for n in dict.fromkeys(names))


class SuiteReader:
    """Checks one suite file's fields (:meth:`task`, :meth:`suite_file`, ...); every error
    names the file and the field (:class:`SuiteError`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, field: str, message: str) -> NoReturn:
        raise SuiteError(f"{self.path}, field {field!r}: {message}")

    def mapping(self, value: Any, field: str, keys: Sequence[str] | None = None
                ) -> dict[str, Any]:
        if not isinstance(value, dict) or not value:
            self.fail(field, f"must be a non-empty mapping, got {value!r}")
        unknown = [k for k in value if keys is not None and k not in keys]
        if unknown:
            self.fail(field, f"unknown key(s) {unknown}; known: {list(keys or ())}")
        return dict(value)

    def sequence(self, value: Any, field: str) -> list[Any]:
        if not isinstance(value, list) or not value:
            self.fail(field, f"must be a non-empty list, got {value!r}")
        return list(value)

    def text(self, value: Any, field: str, choices: Sequence[str] | None = None) -> str:
        if not isinstance(value, str) or not value:
            self.fail(field, f"must be a non-empty string, got {value!r}")
        if choices is not None and value not in choices:
            self.fail(field, f"must be one of {list(choices)}, got {value!r}")
        return str(value)

    def integer(self, value: Any, field: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(field, f"must be an integer >= {minimum}, got {value!r}")
        return int(value)

    def suite_file(self, fid: str, spec: Any) -> SuiteFile:
        where = f"files.{fid}"
        spec = self.mapping(spec, where, ("source", "path", "sha256", "command"))
        source = self.text(spec.get("source"), f"{where}.source", SOURCES)
        digest = self.text(spec.get("sha256"), f"{where}.sha256")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            self.fail(f"{where}.sha256", f"must be 64 lowercase hex digits, got {digest!r}")
        path = self.text(spec.get("path"), f"{where}.path")
        self.relative_path(path, f"{where}.path")
        command = spec.get("command")
        if (source == "generated") != (command is not None):
            self.fail(f"{where}.command", "a generated file has a command, no other file has")
        if command is not None and not self.text(command, f"{where}.command").startswith(
                TRACES_COMMAND):
            self.fail(f"{where}.command", f"must start with {TRACES_COMMAND.strip()!r}")
        if command is not None and (command[len(TRACES_COMMAND):].split() or [""])[0] \
                not in GENERATING_COMMANDS:
            self.fail(f"{where}.command", f"must run one of {list(GENERATING_COMMANDS)} (the "
                      f"commands that write one --output file), got {command!r}")
        if command is not None and any(token.startswith(("--output", "--output-dir"))
                                       for token in command.split()):
            self.fail(f"{where}.command", "must not give --output: prepare writes the file "
                      "into the cache at the file's path")
        return SuiteFile(fid, source, path, digest, command)

    def relative_path(self, path: str, field: str) -> None:
        """A file's path stays inside its source's folder: relative, ``/``-separated, with no
        ``..``, ``.`` or empty part and no backslash or NUL."""
        parts = path.split("/")
        if (path.startswith(("/", "~")) or "\\" in path or "\0" in path or ":" in parts[0]
                or any(part in ("", ".", "..") for part in parts)):
            self.fail(field, f"must be a relative path inside the source's folder (no '..', "
                      f"'.', empty or absolute part), got {path!r}")

    def trace_ref(self, value: Any, field: str, files: Mapping[str, SuiteFile]) -> TraceRef:
        if isinstance(value, dict):
            spec = self.mapping(value, field, ("trace", "jobs"))
            jobs = self.sequence(spec.get("jobs"), f"{field}.jobs")
            start, stop = (self.integer(j, f"{field}.jobs") for j in (jobs + [None, None])[:2])
            if len(jobs) != 2 or stop <= start:
                self.fail(f"{field}.jobs", f"must be [START, STOP] with START < STOP, got {jobs}")
            ref = TraceRef(self.text(spec.get("trace"), f"{field}.trace"), (start, stop))
        else:
            ref = TraceRef(self.text(value, field))
        if ref.file not in files:
            self.fail(field, f"{ref.file!r} is not a file of the suite")
        return ref

    def variability(self, value: Any, field: str, files: Mapping[str, SuiteFile],
                    preset_name: str) -> dict[str, Any]:
        spec = self.mapping(value, field, VARIABILITY_KINDS)
        if len(spec) != 1:
            self.fail(field, f"give one of {list(VARIABILITY_KINDS)}, got {list(spec)}")
        kind, ids = next(iter(spec.items()))
        for fid in ids if isinstance(ids, list) else [ids]:
            if not isinstance(fid, str) or fid not in files:
                self.fail(f"{field}.{kind}", f"{fid!r} is not a file of the suite")
        if kind == "measurements":
            folders = {str(Path(files[f].path).parent) for f in self.sequence(ids, field)}
            if len(folders) != 1 or len({files[f].source for f in ids}) != 1:
                self.fail(f"{field}.{kind}", "the measurement files must share one folder")
        if kind == "bundled":
            sampling = str(preset(preset_name).profile_sampling)
            if Path(files[ids].path).name != BUNDLED_PROFILES.get(sampling):
                self.fail(f"{field}.bundled", f"preset {preset_name!r} samples {sampling!r}: "
                          f"its bundled profile is {BUNDLED_PROFILES.get(sampling)}")
        return {kind: ids}

    def world(self, value: Any, field: str) -> dict[str, Any]:
        world = self.mapping(value, field, WORLD_KEYS) if value is not None else {}
        if "cluster" in world:
            try:
                gpus = ClusterSpec.parse(self.text(world["cluster"], f"{field}.cluster")).num_gpus
            except ConfigError as exc:
                self.fail(f"{field}.cluster", str(exc))
            if gpus > MAX_SUITE_GPUS:
                self.fail(f"{field}.cluster", f"must have at most {MAX_SUITE_GPUS} GPUs, got "
                          f"{world['cluster']} ({gpus})")
        if "window" in world:
            window = self.integer(world["window"], f"{field}.window", 1)
            if window > MAX_SUITE_WINDOW:
                self.fail(f"{field}.window", f"must be at most {MAX_SUITE_WINDOW} jobs (leave "
                          f"the window out to run whole traces), got {window}")
        return world

    def split(self, name: str, value: Any, field: str, files: Mapping[str, SuiteFile],
              preset_name: str) -> Split:
        spec = self.mapping(value, field, ("traces", "world", "variability"))
        traces = tuple(self.trace_ref(v, f"{field}.traces[{i}]", files)
                       for i, v in enumerate(self.sequence(spec.get("traces"), f"{field}.traces")))
        world = self.world(spec.get("world"), f"{field}.world")
        variability = (None if spec.get("variability") is None else self.variability(
            spec["variability"], f"{field}.variability", files,
            str(world.get("preset", preset_name))))
        return Split(name, traces, world, variability)

    def task(self, field: str, value: Any, files: Mapping[str, SuiteFile]) -> Task:
        spec = self.mapping(value, field, TASK_KEYS)
        missing = [k for k in TASK_KEYS if k not in spec]
        if missing:
            self.fail(field, f"missing key(s) {missing}")
        world = self.world(spec["world"], f"{field}.world")
        preset_name = str(world.get("preset", "default"))
        regime = self.text(spec["queue_order_regime"], f"{field}.queue_order_regime", REGIMES)
        order = self.text(spec["queue_order"], f"{field}.queue_order")
        names = [self.text(n, f"{field}.heuristic_field")
                 for n in self.sequence(spec["heuristic_field"], f"{field}.heuristic_field")]
        if regime == "fixed" and any("/" in n and n.split("/")[0] != order for n in names):
            self.fail(f"{field}.heuristic_field", f"the regime is fixed: no queue order but "
                      f"{order!r} may be named, got {names}")
        seeds = [self.integer(s, f"{field}.seeds") for s in self.sequence(spec["seeds"],
                                                                           f"{field}.seeds")]
        if len(set(seeds)) != len(seeds):
            self.fail(f"{field}.seeds", f"must be unique, got {seeds}")
        splits_spec = self.mapping(spec["splits"], f"{field}.splits", SPLIT_NAMES)
        if list(splits_spec) != list(SPLIT_NAMES):
            self.fail(f"{field}.splits", f"must be {list(SPLIT_NAMES)} in this order")
        splits = {name: self.split(name, s, f"{field}.splits.{name}", files, preset_name)
                  for name, s in splits_spec.items()}
        return Task(
            self.text(spec["name"], f"{field}.name"), str(spec["description"] or ""),
            self.text(spec["env"], f"{field}.env"), self.text(spec["env_layout"],
                                                              f"{field}.env_layout"),
            world, self.variability(spec["variability"], f"{field}.variability", files,
                                    preset_name),
            self.text(spec["duration_knowledge"], f"{field}.duration_knowledge"),
            self.text(spec["belief"], f"{field}.belief"), order, regime, tuple(names),
            tuple(seeds), splits)
