"""The part of a results file the leaderboard reads (docs/SUBMITTING.md, schema
``palgym-bench-results/1``): the header, the episode lines' metrics and the ``best`` entry's
choice lines (:func:`rows_of`), and an entry's test-split episodes by (task, trace, seed)
(:func:`entry_of`). Actions, hashes and the other fields are the replay's business.

:func:`rows_of` is a minimal reader, checking only what the leaderboard uses; the complete
reader of the schema (every field, the action codec) replaces it where it is available.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from palgym.bench.submission import check_submission
from palgym.errors import ConfigError

SCHEMA = "palgym-bench-results/1"
"""The one results schema the leaderboard reads."""

ENTRY_KINDS = ("heuristic", "learned", "planner", "module", "best", "field")
"""Accepted ``entry_kind`` values."""

HEADER_FIELDS: dict[str, type | tuple[type, ...]] = {
    "record": str, "schema": str, "suite": str, "suite_sha256": str, "entry": str,
    "entry_kind": str, "entry_spec": str, "palgym_version": str, "commit": str,
}
"""Header fields the leaderboard reads, with their JSON types."""

EPISODE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "task": str, "split": str, "trace": str, "trace_sha256": str, "seed": int, "member": str,
    "avg_jct_s": (int, float, type(None)), "num_jobs": int, "completed_jobs": int,
    "unfinished_jobs": int, "invalid_actions": int, "decisions": int,
    "decision_time_s": (int, float),
}
"""Episode fields the leaderboard reads, with their JSON types."""

Key = tuple[str, str, int]
"""An episode: (task, trace, seed)."""

REFERENCE, BEST, FIELD = "pal", "best", "field"
"""The entries every leaderboard compares with, and the entry holding the oracle's field."""

CHOICE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "task": str, "member": str, "selection_split": str, "field": list,
}
"""Choice fields (``best`` entries) the leaderboard reads."""


TYPE_NAMES: dict[type, str] = {str: "a string", int: "an integer", list: "a list"}
"""How an error names a JSON type."""


@dataclass(frozen=True)
class ResultsFile:
    """One results file as the leaderboard reads it.

    Attributes:
        path: the file, as given (used in every error).
        header: the header object (line 1).
        episodes: ``(line number, object)`` of every episode line, in file order.
        choices: ``(line number, object)`` of every choice line (``best`` entries).
    """

    path: str
    header: dict[str, Any]
    episodes: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    choices: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def check_fields(obj: dict[str, Any], fields: dict[str, type | tuple[type, ...]],
                 where: str) -> None:
    """Refuse a missing field or one of the wrong JSON type (bool is not a number).

    Raises:
        ConfigError: ``"{where}, field 'x': missing"`` or ``"... must be a T, got V"``.
    """
    for name, kind in fields.items():
        if name not in obj:
            raise ConfigError(f"{where}, field {name!r}: missing")
        value = obj[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            wanted = TYPE_NAMES.get(kind, "number") if isinstance(kind, type) else (
                "a number or null" if type(None) in kind else "a number")
            raise ConfigError(f"{where}, field {name!r}: must be {wanted}, got {value!r}")


def check_episode(obj: dict[str, Any], where: str) -> None:
    """:func:`check_fields` plus the values: a finite positive avg JCT (null only when no job
    completed), counts >= 0 that add up (completed + unfinished = num_jobs), a finite decision
    time >= 0.

    Raises:
        ConfigError: naming ``where`` and the field.
    """
    check_fields(obj, EPISODE_FIELDS, where)
    jct = obj["avg_jct_s"]
    if jct is None and obj["completed_jobs"] > 0:
        raise ConfigError(f"{where}, field 'avg_jct_s': null with {obj['completed_jobs']} "
                          f"completed jobs")
    if jct is not None and not (math.isfinite(jct) and jct > 0):
        raise ConfigError(f"{where}, field 'avg_jct_s': must be finite and > 0 (or null when "
                          f"no job completed), got {jct!r}")
    for name in ("num_jobs", "completed_jobs", "unfinished_jobs", "invalid_actions",
                 "decisions"):
        if obj[name] < 0:
            raise ConfigError(f"{where}, field {name!r}: must be >= 0, got {obj[name]!r}")
    if obj["completed_jobs"] + obj["unfinished_jobs"] != obj["num_jobs"]:
        raise ConfigError(f"{where}, field 'unfinished_jobs': completed_jobs "
                          f"{obj['completed_jobs']} + unfinished_jobs {obj['unfinished_jobs']}"
                          f" != num_jobs {obj['num_jobs']}")
    if not (math.isfinite(obj["decision_time_s"]) and obj["decision_time_s"] >= 0):
        raise ConfigError(f"{where}, field 'decision_time_s': must be finite and >= 0, "
                          f"got {obj['decision_time_s']!r}")


def parse_line(text: str, where: str) -> dict[str, Any]:
    """One JSON object line (NaN and infinities refused).

    Raises:
        ConfigError: naming ``where`` for invalid JSON or a value that is not an object.
    """
    def refuse(constant: str) -> None:
        raise ConfigError(f"{where}: {constant} is not a JSON number")

    try:
        obj = json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: a line must be a JSON object, got {type(obj).__name__}")
    return obj


def check_header(header: dict[str, Any], where: str) -> None:
    """The header's schema, record, entry kind and (if any) ``submission`` object.

    Raises:
        ConfigError: naming ``where`` and the field.
    """
    check_fields(header, HEADER_FIELDS, where)
    if header["record"] != "header":
        raise ConfigError(f"{where}, field 'record': line 1 must be the header, got "
                          f"{header['record']!r}")
    if header["schema"] != SCHEMA:
        raise ConfigError(f"{where}, field 'schema': unknown schema {header['schema']!r} "
                          f"(this palgym reads {SCHEMA!r})")
    if header["entry_kind"] not in ENTRY_KINDS:
        raise ConfigError(f"{where}, field 'entry_kind': must be one of {list(ENTRY_KINDS)}, "
                          f"got {header['entry_kind']!r}")
    if header.get("submission") is not None:
        check_submission(header["submission"], where)


def rows_of(path: str | Path) -> ResultsFile:
    """Read a results file (JSON Lines, UTF-8): its header, episode and choice lines.

    Args:
        path: the results file.

    Returns:
        The file's header, episodes and choices, each with its 1-based line number.

    Raises:
        ConfigError: ``"{path}, line N, field 'x': ..."`` for an unreadable file, a line that
            is not a JSON object, an unknown schema or record, a missing field, a wrong type
            or an impossible value.
    """
    name = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{name}: cannot read the results file ({exc})") from None
    if not lines:
        raise ConfigError(f"{name}: empty results file (line 1 must be the header)")
    header = parse_line(lines[0], f"{name}, line 1")
    check_header(header, f"{name}, line 1")
    result = ResultsFile(path=name, header=header)
    for number, text in enumerate(lines[1:], start=2):
        where = f"{name}, line {number}"
        if not text.strip():
            raise ConfigError(f"{where}: empty line")
        obj = parse_line(text, where)
        record = obj.get("record")
        if record == "episode":
            check_episode(obj, where)
            result.episodes.append((number, obj))
        elif record == "choice":
            check_fields(obj, CHOICE_FIELDS, where)
            result.choices.append((number, obj))
        else:
            raise ConfigError(f"{where}, field 'record': must be 'episode' or 'choice', "
                              f"got {record!r}")
    return result


class Episode(NamedTuple):
    """What the leaderboard reads of one episode line (``avg_jct_s`` +inf: no job completed)."""

    avg_jct_s: float
    unfinished_jobs: int
    invalid_actions: int
    decisions: int
    decision_time_s: float
    trace_sha256: str
    where: str


@dataclass(frozen=True)
class Entry:
    """One results file's test-split episodes.

    Attributes:
        name, kind, spec, palgym_version, commit, description: from the header.
        path: the results file.
        episodes: test-split episodes by key (empty for a ``field`` entry).
        members: ``field`` entries: member -> test-split episodes by key.
        choices: ``best`` entries: task -> the member chosen on validation.
        fields: ``best`` entries: task -> the members (sorted) the choice was made among.
        submission: the header's checked ``submission`` object, or None.
    """

    name: str
    kind: str
    spec: str
    palgym_version: str
    commit: str
    description: str
    path: str
    episodes: dict[Key, Episode]
    members: dict[str, dict[Key, Episode]]
    choices: dict[str, str]
    fields: dict[str, tuple[str, ...]]
    submission: dict[str, Any] | None


def episode_of(obj: dict[str, Any], where: str) -> Episode:
    """The leaderboard's view of an episode line checked by :func:`check_episode` (an
    average JCT of null, no job completed, is +inf: worse than any)."""
    jct = math.inf if obj["avg_jct_s"] is None else float(obj["avg_jct_s"])
    return Episode(jct, int(obj["unfinished_jobs"]),
                   int(obj["invalid_actions"]), int(obj["decisions"]),
                   float(obj["decision_time_s"]), str(obj["trace_sha256"]), where)


def choices_of(results: ResultsFile) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A ``best`` entry's task -> (chosen member, the field it was chosen from); refuses a
    choice not made on validation or not in its field."""
    chosen: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line, obj in results.choices:
        where = f"{results.path}, line {line}"
        if obj["selection_split"] != "validation":
            raise ConfigError(f"{where}, field 'selection_split': the best heuristic is chosen "
                              f"on the validation split, got {obj['selection_split']!r}")
        if obj["task"] in chosen:
            raise ConfigError(f"{where}, field 'task': a second choice for {obj['task']!r}")
        if obj["member"] not in obj["field"]:
            raise ConfigError(f"{where}, field 'member': {obj['member']!r} is not in the field "
                              f"{obj['field']}")
        chosen[obj["task"]] = (obj["member"], tuple(sorted(map(str, obj["field"]))))
    return chosen


def entry_of(results: ResultsFile) -> Entry:
    """An :class:`Entry` from a read results file (test-split episodes only).

    Raises:
        ConfigError: naming the file and line for a repeated episode, a member that does not
            match the entry (or, for ``best``, the task's choice), a task of ``best`` with no
            choice, or a choice outside the validation split.
    """
    header, name = results.header, results.header["entry"]
    kind = header["entry_kind"]
    made = choices_of(results) if kind == BEST else {}
    choices = {task: member for task, (member, _) in made.items()}
    episodes: dict[Key, Episode] = {}
    members: dict[str, dict[Key, Episode]] = {}
    for line, obj in results.episodes:
        if obj["split"] != "test":
            continue
        where = f"{results.path}, line {line}"
        key: Key = (obj["task"], obj["trace"], obj["seed"])
        member = obj["member"]
        expected = choices.get(key[0]) if kind == BEST else name
        if kind == BEST and expected is None:
            raise ConfigError(f"{where}, field 'task': no choice line for task {key[0]!r}")
        if kind != FIELD and member != expected:
            raise ConfigError(f"{where}, field 'member': expected {expected!r}, got {member!r}")
        table = members.setdefault(member, {}) if kind == FIELD else episodes
        if key in table:
            raise ConfigError(f"{where}: episode {key} repeats {table[key].where}")
        table[key] = episode_of(obj, where)
    return Entry(name=name, kind=kind, spec=header["entry_spec"],
                 palgym_version=header["palgym_version"], commit=header["commit"],
                 description=str(header.get("description", "")), path=results.path,
                 episodes=episodes, members=members, choices=choices,
                 fields={task: field for task, (_, field) in made.items()},
                 submission=header.get("submission"))
