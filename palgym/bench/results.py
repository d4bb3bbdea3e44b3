"""The results file of one benchmark entry (schema ``palgym-bench-results/2``): JSON Lines.

UTF-8, one JSON object per line, written atomically (:func:`write_results`). Line 1 is the
header (:class:`Header`); every other line is an ``episode`` (:class:`EpisodeRow`, one per
(task, split, trace, seed, member)) or, in a ``best`` entry's file, a ``choice`` per task
(:class:`ChoiceRow`: the field member chosen on the validation split and every member's
validation geomean). Floats are written by Python's ``json`` (shortest repr, read back bit for
bit); a float that is not finite (e.g. the average JCT of an episode in which no job
completed) is written as ``null``. ``decision_time_s`` is the only measured, non-deterministic
field. The header's ``members`` holds, per task and member, the env kwargs the member added to
the task's (``sticky``, ``max_tiers``, its own ``queue_order`` under the free regime, ...) and
the layout hash of that env (:func:`palgym.envs.layouts.env_layout`), so that every row can be
replayed without the agent (:mod:`palgym.bench.replay`). A rule selector's member adds a
``selector`` object there (its rules and the SHA-256 of its file); its rows' ``actions`` are
its choices of rule (:mod:`palgym.bench.selector_entry`).

Schema versions (:data:`READ_SCHEMAS`): ``/4`` adds the members' ``bound`` object (a lower
bound, its rows' ``avg_jct_s`` the bound: :mod:`palgym.bench.reference_entry`; only such a file
is written as ``/4``); ``/3`` adds the members' ``schedule`` object (a user's
placement run on the engine, its rows' ``actions`` a schedule record:
:mod:`palgym.bench.module_entry`; only such a file is written as ``/3``, every other as
``/2``); ``/2`` adds the members' ``selector`` object to ``/1``, which had none; a ``/1``
file reads as it always did, and a ``/1`` file with a ``selector``
object is refused. A change that a reader of the previous version would misread bumps the
number; the reader keeps reading every earlier version.

:func:`read_results` refuses an unknown ``schema``, a missing or unknown field and a value of
the wrong type (``NaN``, ``Infinity`` and a number that overflows a float among them),
naming the file, the line and the field (:class:`ResultsError`).
Actions: base64 of the zlib-compressed little-endian int32 env actions
(:func:`encode_actions`, :func:`decode_actions`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from palgym.bench.jsonlines import ResultsError, json_objects
from palgym.bench.row_values import decode_actions, encode_actions, finite_or_none, row_metrics
from palgym.errors import ConfigError
from palgym.io.atomic import atomic_write_text

SCHEMA = "palgym-bench-results/2"
"""The ``schema`` of the header line this palgym writes."""
SCHEDULE_SCHEMA = "palgym-bench-results/3"
"""The ``schema`` of a file with a ``schedule`` member (module docstring)."""
BOUND_SCHEMA = "palgym-bench-results/4"
"""The ``schema`` of a file with a ``bound`` member (a lower bound:
:mod:`palgym.bench.reference_entry`)."""
READ_SCHEMAS: tuple[str, ...] = ("palgym-bench-results/1", SCHEMA, SCHEDULE_SCHEMA,
                                 BOUND_SCHEMA)
"""The schemas this palgym reads (module docstring)."""
ENTRY_KINDS: tuple[str, ...] = ("heuristic", "learned", "planner", "module", "best", "field",
                                "best-known", "lower-bound")
"""What an entry is (the header's ``entry_kind``)."""
METRIC_FIELDS: tuple[str, ...] = (
    "avg_jct_s", "p99_jct_s", "makespan_s", "utilization", "num_jobs", "completed_jobs",
    "unfinished_jobs", "invalid_actions", "decisions")
"""The episode fields a replay recomputes (besides ``episode_hash`` and ``actions``)."""
AGENT_KWARGS: tuple[str, ...] = ("sticky", "class_reorder", "max_tiers", "num_slots",
                                 "observed_rates", "fallback_policy", "queue_order",
                                 "work_conserving")
"""The env kwargs a member may add to its task's (the header's ``members``): a heuristic's
dynamics, a model's layout and fallback, its own queue order (under the ``free`` regime
only) and the work-conserving action set of the scheduling task (``work_conserving``: it
changes the action space, with RESERVE, and the observation, not the episode: the same trace,
cluster, durations and dynamics, docs/ENV.md "Work-conserving scheduling"). Everything else is
the task's; every env takes the default ``jct`` reward (a reward changes no action's
effect)."""


@dataclass(frozen=True)
class Header:
    """Line 1 of a results file (see the module docstring and docs/BENCH.md)."""

    suite: str
    suite_sha256: str
    entry: str
    entry_kind: str
    entry_spec: str
    palgym_version: str
    commit: str
    env_layouts: dict[str, str]
    seeds: list[int]
    members: dict[str, dict[str, dict[str, Any]]]
    description: str = ""
    record: str = "header"
    schema: str = SCHEMA
    submission: dict[str, Any] | None = None


@dataclass(frozen=True)
class EpisodeRow:
    """One episode of one member (times in simulated seconds; ``utilization``: the effective
    GPU-time fraction, :func:`row_metrics`; ``decisions``: env steps; ``actions``:
    :func:`encode_actions`)."""

    task: str
    split: str
    trace: str
    trace_sha256: str
    seed: int
    member: str
    avg_jct_s: float | None
    p99_jct_s: float | None
    makespan_s: float | None
    utilization: float | None
    num_jobs: int
    completed_jobs: int
    unfinished_jobs: int
    invalid_actions: int
    decisions: int
    decision_time_s: float
    episode_hash: str
    actions: str
    record: str = "episode"


@dataclass(frozen=True)
class ChoiceRow:
    """The ``best`` entry's choice on one task: ``member`` has the lowest geomean average JCT
    on ``selection_split`` among ``field`` (values per member, in seconds)."""

    task: str
    member: str
    selection_split: str
    field: list[str]
    validation_geomean_avg_jct_s: dict[str, float | None]
    record: str = "choice"


Row = EpisodeRow | ChoiceRow


@dataclass(frozen=True)
class ResultsFile:
    """A read results file: its header and rows, each row with its 1-based line number."""

    path: Path
    header: Header
    episodes: tuple[tuple[int, EpisodeRow], ...]
    choices: tuple[tuple[int, ChoiceRow], ...]


def results_text(header: Header, rows: Sequence[Row]) -> str:
    """The file's text: the header line, then one line per row (``record`` first)."""
    def ordered(row: Header | Row) -> str:
        data = asdict(row)
        first = {"record": data.pop("record")}
        if isinstance(row, Header):
            first["schema"] = data.pop("schema")
            if data["submission"] is None:  # optional: written only when stated
                del data["submission"]
        return json.dumps(first | data, ensure_ascii=False, allow_nan=False)

    return "".join(ordered(row) + "\n" for row in [header, *rows])


def write_results(path: str | Path, header: Header, rows: Sequence[Row]) -> Path:
    """Write a results file atomically (:func:`palgym.io.atomic.atomic_write_text`).

    Raises:
        ValueError: for a float that is not finite (use :func:`finite_or_none`).
        OSError: if the file cannot be written.
    """
    return atomic_write_text(path, results_text(header, rows))


def write_results_or_recover(path: str | Path, header: Header, rows: Sequence[Row]) -> Path:
    """:func:`write_results`, and if it fails, the rows already computed are not lost: they go
    to a recovery file next to ``path`` (``<name>.recovery-<pid>.jsonl``; in the system's
    temporary folder when that folder cannot be written), as written by :func:`results_text`
    but with any value that is not finite kept as ``NaN`` / ``Infinity`` (so the file is not a
    valid results file; it keeps what the run measured), and the error says where.

    Raises:
        ConfigError: naming why ``path`` could not be written and the recovery file (or both
            failures, when the recovery could not be written either).
    """
    try:
        return write_results(path, header, rows)
    except (ValueError, OSError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    recovery = recovery_path(path)
    for target in (recovery, Path(tempfile.gettempdir()) / recovery.name):
        try:
            atomic_write_text(target, _lenient_text(header, rows))
        except OSError as exc:
            last = f"{target}: {exc}"
            continue
        raise ConfigError(f"could not write the results file {path} ({reason}); the "
                          f"{len(rows)} rows computed are in the recovery file {target} "
                          "(not a valid results file: fix the cause and run again, or repair "
                          "it by hand)")
    raise ConfigError(f"could not write the results file {path} ({reason}), nor a recovery "
                      f"file ({last})")


def recovery_path(path: str | Path) -> Path:
    """Where :func:`write_results_or_recover` puts the rows of a results file it could not
    write: ``<name>.recovery-<pid>.jsonl`` beside it."""
    target = Path(path)
    return target.with_name(f"{target.stem}.recovery-{os.getpid()}.jsonl")


def _lenient_text(header: Header, rows: Sequence[Row]) -> str:
    """:func:`results_text` where a value that is not finite is written as ``NaN`` /
    ``Infinity`` instead of refused."""
    return "".join(json.dumps(asdict(row), ensure_ascii=False, default=str) + "\n"
                   for row in [header, *rows])


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (float, int), "float|None": (float, int, type(None)),
    "list[str]": (list,), "list[int]": (list,), "dict": (dict,), "dict|None": (dict, type(None)),
}
OPTIONAL_FIELDS: frozenset[str] = frozenset({"submission"})
"""Fields a line may leave out (read as None): the header's ``submission`` object
(docs/SUBMITTING.md), stated by ``run --submission FILE``."""


def _type_name(annotation: Any) -> str:
    """The :data:`_TYPES` key of a field's annotation (a string: postponed annotations)."""
    text = str(annotation).replace(" ", "")
    if text.startswith("dict"):
        return "dict|None" if text.endswith("|None") else "dict"
    return text


def _checked(cls: type[Any], data: dict[str, Any], path: Path, line: int) -> Any:
    """``cls(**data)`` once every field is present, known and of its type."""
    names = [f.name for f in fields(cls)]
    for name in data:
        if name not in names:
            raise ResultsError(f"unknown field (a {cls.__name__} has {names})", path, line, name)
    data = {f.name: None for f in fields(cls) if f.name in OPTIONAL_FIELDS} | data
    for f in fields(cls):
        if f.name not in data:
            raise ResultsError("missing", path, line, f.name)
        value, kind = data[f.name], _type_name(f.type)
        ok = isinstance(value, _TYPES[kind]) and not isinstance(value, bool)
        if ok and kind in ("list[int]", "list[str]"):
            item = int if kind == "list[int]" else str
            ok = all(isinstance(v, item) and not isinstance(v, bool) for v in value)
        if not ok:
            raise ResultsError(f"must be {kind}, got {value!r}", path, line, f.name)
    return cls(**{k: float(v) if _type_name(f.type).startswith("float") and v is not None
                  else v for f in fields(cls) for k, v in [(f.name, data[f.name])]})


def _check_values(mapping: Mapping[str, Any], kinds: tuple[type, ...], file: Path, line: int,
                  field: str) -> None:
    """Every value of a mapping field is of ``kinds`` (a bool is no number)."""
    for key, value in mapping.items():
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise ResultsError(f"must be of {[k.__name__ for k in kinds]}, got {value!r}",
                               file, line, f"{field}.{key}")


def _check_schema(header: Header, file: Path) -> None:
    """A header of an earlier schema holds nothing it lacked: no ``selector`` member before
    ``/2``, no ``schedule`` member before ``/3``; a ``bound`` member in a ``/4`` file alone."""
    for task, members in header.members.items():
        for member, entry in members.items():
            if isinstance(entry, dict) and ("bound" in entry) != (header.schema == BOUND_SCHEMA):
                raise ResultsError(f"a bound member needs schema {BOUND_SCHEMA!r}, and only it "
                                   f"does; the file has {header.schema!r}", file, 1,
                                   f"members.{task}.{member}")
            if header.schema in (SCHEDULE_SCHEMA, BOUND_SCHEMA):
                continue
            if isinstance(entry, dict) and "schedule" in entry:
                raise ResultsError(f"a schedule member needs schema {SCHEDULE_SCHEMA!r}, the "
                                   f"file has {header.schema!r}", file, 1,
                                   f"members.{task}.{member}.schedule")
            if header.schema != SCHEMA and isinstance(entry, dict) and "selector" in entry:
                raise ResultsError(f"a selector member needs schema {SCHEMA!r}, the file has "
                                   f"{header.schema!r}", file, 1,
                                   f"members.{task}.{member}.selector")


MAX_FILE_ACTIONS = 1 << 26
"""The most actions (the sum of the rows' ``decisions``, or of a schedule row's flat record) a
results file may hold (the committed palgym-bench-v2 ``field`` file holds 48.1 million, its
guards' recorded schedules included: 192 MiB of int32 once inflated, one row at a time);
``allow_large`` multiplies it by 64."""
MAX_ROW_ACTIONS = 1 << 22
"""The most actions one row may hold: 16 MiB of int32 once inflated (the committed files'
longest episode has 333,467); ``allow_large`` multiplies it by 64."""


def _episode(value: dict[str, Any], file: Path, number: int, budget: int,
             scale: int, schedule: bool = False) -> tuple[EpisodeRow, int]:
    """An episode line and the values its ``actions`` hold: decodable into exactly its
    ``decisions`` actions, which must fit in the row limit and in what is left of the file's
    budget (``budget``); a schedule row's (``schedule``: schema :data:`SCHEDULE_SCHEMA`)
    ``actions`` hold its record's flat form, up to that limit, and ``decisions`` counts its
    commits."""
    row: EpisodeRow = _checked(EpisodeRow, value, file, number)
    limit = min(budget, MAX_ROW_ACTIONS * scale)
    if schedule:
        try:
            return row, int(decode_actions(row.actions, limit).size)
        except ValueError as exc:
            raise ResultsError(str(exc), file, number, "actions") from None
    if not 0 <= row.decisions <= limit:
        raise ResultsError(f"must be in [0, {limit}] (a row holds at most "
                           f"{MAX_ROW_ACTIONS * scale} actions, a file "
                           f"{MAX_FILE_ACTIONS * scale} in all; --allow-large lifts the "
                           f"limits), got {row.decisions}", file, number, "decisions")
    try:
        size = decode_actions(row.actions, row.decisions).size
    except ValueError as exc:
        raise ResultsError(str(exc), file, number, "actions") from None
    if size != row.decisions:
        raise ResultsError(f"holds {size} actions, the row's decisions are {row.decisions}",
                           file, number, "actions")
    return row, size


def read_results(path: str | Path, allow_large: bool = False) -> ResultsFile:
    """Read and check a results file (see the module docstring).

    Raises:
        ResultsError: naming the file, the line and the field, for a file that is not UTF-8,
            a line that is not a JSON object (or holds ``NaN``, ``Infinity`` or a number that
            overflows a float, or nests too deep), a file past its size limit
            (:data:`palgym.bench.jsonlines.MAX_RESULTS_BYTES`; ``allow_large`` lifts it), an
            unknown ``schema`` or ``record``, a missing, unknown or mistyped field, an unknown
            ``entry_kind``, ``actions`` that do not decode into the row's ``decisions``
            actions (decoded with a ceiling, :func:`decode_actions`; at most
            :data:`MAX_ROW_ACTIONS` per row and :data:`MAX_FILE_ACTIONS` in all), or an
            episode that repeats an earlier line's (task, split, trace, seed, member).
        OSError: if the file cannot be read.
    """
    file = Path(path)
    lines = json_objects(file, allow_large)
    first = next(lines)[1]
    if first.get("record") != "header":
        raise ResultsError(f"must be 'header' on line 1, got {first.get('record')!r}", file,
                           1, "record")
    if first.get("schema") not in READ_SCHEMAS:
        raise ResultsError(f"unknown schema {first.get('schema')!r}; this palgym reads "
                           f"{list(READ_SCHEMAS)}", file, 1, "schema")
    header: Header = _checked(Header, first, file, 1)
    _check_values(header.env_layouts, (str,), file, 1, "env_layouts")
    _check_values(header.members, (dict,), file, 1, "members")
    _check_schema(header, file)
    if header.entry_kind not in ENTRY_KINDS:
        raise ResultsError(f"must be one of {list(ENTRY_KINDS)}, got {header.entry_kind!r}",
                           file, 1, "entry_kind")
    episodes, choices = [], []
    scale = 64 if allow_large else 1
    budget = MAX_FILE_ACTIONS * scale
    seen: dict[tuple[str, str, str, int, str], int] = {}
    for number, value in lines:
        record = value.get("record")
        if record == "episode":
            row, size = _episode(value, file, number, budget, scale,
                                 header.schema == SCHEDULE_SCHEMA)
            key = (row.task, row.split, row.trace, row.seed, row.member)
            if key in seen:
                raise ResultsError(f"episode {(row.task, row.trace, row.seed)!r} repeats "
                                   f"line {seen[key]} (split {row.split}, member "
                                   f"{row.member})", file, number)
            seen[key] = number
            budget -= size
            episodes.append((number, row))
        elif record == "choice":
            choice: ChoiceRow = _checked(ChoiceRow, value, file, number)
            _check_values(choice.validation_geomean_avg_jct_s, (float, int, type(None)),
                          file, number, "validation_geomean_avg_jct_s")
            choices.append((number, choice))
        else:
            raise ResultsError(f"must be 'episode' or 'choice', got {record!r}", file,
                               number, "record")
    return ResultsFile(file, header, tuple(episodes), tuple(choices))


__all__ = ["AGENT_KWARGS", "ENTRY_KINDS", "MAX_FILE_ACTIONS", "MAX_ROW_ACTIONS", "METRIC_FIELDS",
           "BOUND_SCHEMA", "OPTIONAL_FIELDS", "READ_SCHEMAS", "SCHEDULE_SCHEMA",
           "SCHEMA", "ChoiceRow", "EpisodeRow", "Header", "ResultsError", "ResultsFile", "Row",
           "decode_actions", "encode_actions", "finite_or_none", "read_results", "recovery_path",
           "write_results_or_recover",
           "results_text", "row_metrics", "write_results"]
