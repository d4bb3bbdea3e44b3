"""Trace-set manifests (JSON): read with hash verification, write atomically; resolve a set
spec (``"bundled"``, a folder, a manifest file) and split specs (``"<set>:<split>"``).

See :mod:`palgym.tracesets` for the manifest format and the rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from palgym.io.atomic import atomic_write_text
from palgym.io.strict_json import StrictJsonError, read_json
from palgym.sim.workload import Trace
from palgym.tracesets import sets
from palgym.tracesets.sets import SPLITS, Member, SplitEntry, TraceSet, TraceSetError

MANIFEST_NAME = "palgym-traceset.json"
"""A folder holding this file is split by it (instead of the folder rule)."""
BUNDLED_SET = "bundled"


def bundled_manifest_path() -> Path:
    """The manifest of the bundled set (``palgym/data/traces/palgym-traceset.json``)."""
    return Path(str(resources.files("palgym").joinpath("data", "traces", MANIFEST_NAME)))


def write_manifest(trace_set: TraceSet, path: str | Path) -> Path:
    """Write the set's manifest atomically (member paths relative to its folder).

    Returns:
        The path written.
    """
    target = Path(path)
    content = trace_set.to_manifest(relative_to=target.parent)
    return atomic_write_text(target, json.dumps(content, indent=2) + "\n")


def _field(mapping: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise TraceSetError(f"{where}: missing field {key!r}")
    value = mapping[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TraceSetError(f"{where}: field {key!r} has the wrong type ({value!r})")
    return value


def _member(item: Any, root: Path, path: Path, index: int, verify: bool) -> Member:
    where = f"{path}, members[{index}]"
    trace = _field(item, "trace", str, where)
    file = Path(_field(item, "path", str, where))
    file = file if file.is_absolute() else Path(os.path.normpath(root / file))
    expected = _field(item, "sha256", str, where)
    num_jobs = _field(item, "num_jobs", int, where)
    if verify:
        if not file.is_file():
            raise TraceSetError(f"{path}: member {trace!r}: file {file} is missing")
        actual = sets.file_sha256(file)
        if actual != expected:
            raise TraceSetError(
                f"{file}: content changed since the manifest {path} was written (member "
                f"{trace!r}: sha256 {actual}, manifest says {expected}); restore the file or "
                "rewrite the manifest")
    return Member(trace, file, expected, num_jobs)


def _entries(items: Any, split: str, path: Path, members: Mapping[str, Member]
             ) -> tuple[SplitEntry, ...]:
    if not isinstance(items, list):
        raise TraceSetError(f"{path}: field 'splits.{split}' must be a list")
    entries = []
    for index, item in enumerate(items):
        where = f"{path}, splits.{split}[{index}]"
        trace = _field(item, "trace", str, where)
        if trace not in members:
            raise TraceSetError(f"{where}: no member named {trace!r}")
        jobs = item.get("jobs", [0, members[trace].num_jobs])
        if (not isinstance(jobs, list) or len(jobs) != 2
                or not all(isinstance(j, int) and not isinstance(j, bool) for j in jobs)):
            raise TraceSetError(f"{where}: field 'jobs' must be [start, stop] (integers)")
        entries.append(SplitEntry(trace, jobs[0], jobs[1]))
    return tuple(entries)


def read_manifest(path: str | Path, verify: bool = True) -> TraceSet:
    """Read a manifest, hash every member (``verify``) and check the splits.

    Args:
        path: the JSON manifest.
        verify: compare every member's SHA-256 with the manifest's (default).

    Returns:
        The set (``source`` = the manifest path).

    Raises:
        TraceSetError: naming the file (and field) for a malformed manifest, a missing or
            changed member file, or overlapping splits.
    """
    file = Path(path)
    try:  # strict JSON, at most 16 MiB (palgym/io/strict_json.py)
        content = read_json(file, max_bytes=16 << 20, what="a trace-set manifest")
    except OSError as exc:
        raise TraceSetError(f"{file}: cannot read the trace-set manifest: {exc}") from None
    except StrictJsonError as exc:
        raise TraceSetError(f"cannot read the trace-set manifest: {exc}") from None
    if _field(content, "format", str, str(file)) != sets.MANIFEST_FORMAT:
        raise TraceSetError(f"{file}: field 'format' must be {sets.MANIFEST_FORMAT!r}")
    items = _field(content, "members", list, str(file))
    members = [_member(item, file.parent, file, i, verify) for i, item in enumerate(items)]
    by_name = {m.trace: m for m in members}
    if len(by_name) != len(members):
        raise TraceSetError(f"{file}: two members have the same 'trace' id")
    splits = _field(content, "splits", dict, str(file))
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise TraceSetError(f"{file}: unknown split(s) {unknown} in 'splits' (use {list(SPLITS)})")
    trace_set = TraceSet(
        name=str(content.get("name", file.parent.name)), members=tuple(members),
        splits={s: _entries(v, s, file, by_name) for s, v in splits.items()},
        rule=str(content.get("rule", "")),
        duration_unit=str(content.get("duration_unit", "iterations")), source=str(file),
    )
    sets.check_disjoint(trace_set)
    return trace_set


def load_trace_set(spec: str | Path, duration_unit: str = "iterations") -> TraceSet:
    """Resolve a set spec: ``"bundled"``, a manifest file, or a folder (its manifest if it has
    one, else the folder rule with ``duration_unit``).

    Raises:
        TraceSetError: for a spec that names none of these, or any error of
            :func:`read_manifest` / :func:`~palgym.tracesets.sets.folder_rule`.
    """
    if str(spec) == BUNDLED_SET:
        return read_manifest(bundled_manifest_path())
    path = Path(spec)
    if path.is_file():
        return read_manifest(path)
    if path.is_dir():
        manifest = path / MANIFEST_NAME
        if manifest.is_file():
            return read_manifest(manifest)
        return sets.folder_rule(path, duration_unit)
    raise TraceSetError(f"trace set {str(spec)!r} is neither 'bundled', a manifest file nor a "
                        "folder of traces")


def parse_split_spec(spec: Any) -> tuple[str, str] | None:
    """``(set, split)`` of a split spec, or None if ``spec`` is not one.

    A split spec is ``{"set": ..., "split": ...}`` or a string ``"<set>:<split>"`` whose
    ``<split>`` is one of :data:`SPLITS` (``"bundled:train"``, ``"/data/sia:test"``).

    Raises:
        TraceSetError: for a mapping without both keys or with an unknown split.
    """
    if isinstance(spec, Mapping):
        if set(spec) != {"set", "split"}:
            raise TraceSetError(f"a trace-set spec needs exactly 'set' and 'split', got {spec!r}")
        if spec["split"] not in SPLITS:
            raise TraceSetError(f"split must be one of {list(SPLITS)}, got {spec['split']!r}")
        return str(spec["set"]), str(spec["split"])
    if isinstance(spec, str):
        head, sep, split = spec.rpartition(":")
        if sep and head and split in SPLITS:
            return head, split
    return None


def split_traces(set_spec: str | Path, split: str) -> list[Trace]:
    """The traces of one split of a set (see :func:`load_trace_set`)."""
    return load_trace_set(set_spec).traces(split)


def split_specs(set_specs: list[str] | tuple[str, ...], split: str) -> list[str]:
    """``"<set>:<split>"`` for every set whose ``split`` is not empty (their union).

    Args:
        set_specs: set specs (see :func:`load_trace_set`).
        split: one of :data:`SPLITS`.

    Returns:
        The split specs, in the order of ``set_specs``.

    Raises:
        TraceSetError: if no set has entries in ``split`` (or a set cannot be loaded).
    """
    if split not in SPLITS:
        raise TraceSetError(f"split must be one of {list(SPLITS)}, got {split!r}")
    found = [f"{spec}:{split}" for spec in set_specs if load_trace_set(spec).splits.get(split)]
    if not found:
        raise TraceSetError(f"split {split!r} is empty in every trace set {list(set_specs)}")
    return found
