"""Trace sets and their splits: members, split entries, the folder rule (see
:mod:`palgym.tracesets`)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from palgym.bundled import natural_key
from palgym.errors import ConfigError
from palgym.io.sia import read_sia_trace
from palgym.sim.workload import Trace

SPLITS: tuple[str, ...] = ("train", "validation", "test")
MANIFEST_FORMAT = "palgym-traceset/1"
TEST_FILES_FRAC = 0.4
"""Folder rule: fraction of the files (the last ones, rounded up) in the test split."""
VALIDATION_JOBS_FRAC = 0.2
"""Folder rule: fraction of each non-test file's jobs (the last ones, rounded up) in
validation."""
FOLDER_RULE = (
    "folder rule: *.csv files in natural name order; the last ceil(0.4 n) files are test; each "
    "other file's last ceil(0.2 J) jobs (arrival order) are validation, its other jobs train "
    "(a single file: jobs 60/20/20 train/validation/test)"
)


class TraceSetError(ConfigError):
    """A trace set that cannot be used: a changed or missing member, a malformed manifest,
    overlapping splits. The message names the file (and field)."""


@dataclass(frozen=True)
class Member:
    """One trace file of a set.

    Attributes:
        trace: trace id (unique in the set; the file stem by default).
        path: the file.
        sha256: hex SHA-256 of the file's bytes.
        num_jobs: J, jobs in the trace.
    """

    trace: str
    path: Path
    sha256: str
    num_jobs: int


@dataclass(frozen=True)
class SplitEntry:
    """A member's jobs ``[start, stop)`` (arrival positions) in one split."""

    trace: str
    start: int
    stop: int

    def label(self, member: Member) -> str:
        """Trace id of the entry: the member's, with ``[start:stop]`` for a part of it."""
        whole = self.start == 0 and self.stop == member.num_jobs
        return member.trace if whole else f"{member.trace}[{self.start}:{self.stop}]"


@dataclass(frozen=True)
class TraceSet:
    """A named set of trace files with disjoint splits (see the module docstring).

    Attributes:
        name: the set's name.
        members: the trace files, in order.
        splits: split name (:data:`SPLITS`) -> its entries.
        rule: how the splits were made (documentation, recorded in the manifest).
        duration_unit: how the files' ``duration`` column is read.
        source: the manifest file or folder it was loaded from ("" if built in memory).
    """

    name: str
    members: tuple[Member, ...]
    splits: Mapping[str, tuple[SplitEntry, ...]]
    rule: str
    duration_unit: str = "iterations"
    source: str = ""

    def member(self, trace: str) -> Member:
        """The member named ``trace``.

        Raises:
            TraceSetError: if there is none.
        """
        for member in self.members:
            if member.trace == trace:
                return member
        raise TraceSetError(f"{self.source or self.name}: no member named {trace!r}")

    def entries(self, split: str) -> tuple[SplitEntry, ...]:
        """The entries of ``split``.

        Raises:
            TraceSetError: for an unknown or empty split.
        """
        if split not in SPLITS:
            raise TraceSetError(f"split must be one of {list(SPLITS)}, got {split!r}")
        entries = tuple(self.splits.get(split, ()))
        if not entries:
            raise TraceSetError(f"{self.source or self.name}: split {split!r} is empty")
        return entries

    def labels(self, split: str) -> list[str]:
        """Trace ids of the split's entries (``name`` or ``name[start:stop]``)."""
        return [entry.label(self.member(entry.trace)) for entry in self.entries(split)]

    def traces(self, split: str) -> list[Trace]:
        """The split's traces; a job window's times are rebased to its first arrival.

        Raises:
            TraceSetError: for an unknown or empty split.
            TraceFormatError: for a malformed member file.
        """
        traces = []
        for entry in self.entries(split):
            member = self.member(entry.trace)
            trace = read_sia_trace(member.path, self.duration_unit, name=member.trace)
            traces.append(job_range(trace, entry.start, entry.stop, entry.label(member)))
        return traces

    def to_manifest(self, relative_to: Path | None = None) -> dict[str, Any]:
        """The manifest content (paths relative to ``relative_to`` where possible)."""

        def where(path: Path) -> str:
            if relative_to is None:
                return str(path)
            try:
                return os.path.relpath(path.resolve(), relative_to.resolve())
            except ValueError:  # another drive (Windows)
                return str(path.resolve())

        def entry(e: SplitEntry) -> dict[str, Any]:
            member = self.member(e.trace)
            whole = e.start == 0 and e.stop == member.num_jobs
            return {"trace": e.trace} if whole else {"trace": e.trace, "jobs": [e.start, e.stop]}

        return {
            "format": MANIFEST_FORMAT, "name": self.name, "rule": self.rule,
            "duration_unit": self.duration_unit,
            "members": [{"trace": m.trace, "path": where(m.path), "sha256": m.sha256,
                         "num_jobs": m.num_jobs} for m in self.members],
            "splits": {s: [entry(e) for e in self.splits.get(s, ())] for s in SPLITS},
        }


def job_range(trace: Trace, start: int, stop: int, name: str) -> Trace:
    """Jobs ``[start, stop)`` of ``trace`` (arrival order), times rebased to the first arrival.

    The whole trace (``[0, J)``) is returned unchanged.
    """
    if start == 0 and stop == trace.num_jobs:
        return trace
    keep = np.zeros(trace.num_jobs, dtype=bool)
    keep[start:stop] = True
    part = trace.select(keep, name=name)
    return replace(part, submit_time_s=part.submit_time_s - float(part.submit_time_s[0]))


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_disjoint(trace_set: TraceSet) -> None:
    """Check that every split entry lies inside its member and no job is in two entries.

    Raises:
        TraceSetError: naming the set, the trace and the overlapping splits.
    """
    where = trace_set.source or trace_set.name
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for split in SPLITS:
        for entry in trace_set.splits.get(split, ()):
            member = trace_set.member(entry.trace)
            if not 0 <= entry.start < entry.stop <= member.num_jobs:
                raise TraceSetError(f"{where}: split {split!r}, trace {entry.trace!r}: jobs "
                                    f"[{entry.start}, {entry.stop}) outside [0, "
                                    f"{member.num_jobs})")
            spans.setdefault(entry.trace, []).append((entry.start, entry.stop, split))
    for trace, ranges in spans.items():
        ranges.sort()
        for (_, stop, first), (start, _, second) in zip(ranges, ranges[1:], strict=False):
            if start < stop:
                raise TraceSetError(f"{where}: trace {trace!r} has jobs in both the {first!r} "
                                    f"and the {second!r} split (splits must be disjoint)")


SplitSpec = str | tuple[str, int, int]


def make_trace_set(
    name: str,
    files: Sequence[str | Path],
    splits: Mapping[str, Sequence[SplitSpec]],
    rule: str,
    duration_unit: str = "iterations",
) -> TraceSet:
    """Build a set from files (hashing and counting them) and explicit splits.

    Args:
        name: the set's name.
        files: trace files; their stems are the trace ids.
        splits: split -> entries, each a trace id (whole trace) or ``(trace id, start, stop)``.
        rule: how the splits were chosen (recorded in the manifest).
        duration_unit: how ``duration`` is read.

    Returns:
        The set, checked with :func:`check_disjoint`.

    Raises:
        TraceSetError: for duplicate trace ids, unknown split names or overlapping splits.
        TraceFormatError: for a malformed file.
    """
    members: list[Member] = []
    for file in map(Path, files):
        if any(m.trace == file.stem for m in members):
            raise TraceSetError(f"{file}: two members are named {file.stem!r}")
        num_jobs = read_sia_trace(file, duration_unit).num_jobs
        members.append(Member(file.stem, file, file_sha256(file), num_jobs))
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise TraceSetError(f"unknown split(s) {unknown}: use {list(SPLITS)}")
    by_name = {m.trace: m for m in members}
    resolved: dict[str, tuple[SplitEntry, ...]] = {}
    for split, specs in splits.items():
        entries = []
        for spec in specs:
            trace, start, stop = (spec, 0, None) if isinstance(spec, str) else spec
            if trace not in by_name:
                raise TraceSetError(f"split {split!r}: no member named {trace!r}")
            entries.append(SplitEntry(trace, start, by_name[trace].num_jobs if stop is None
                                      else stop))
        resolved[split] = tuple(entries)
    trace_set = TraceSet(name, tuple(members), resolved, rule, duration_unit)
    check_disjoint(trace_set)
    return trace_set


def folder_rule(folder: str | Path, duration_unit: str = "iterations") -> TraceSet:
    """Split a folder's ``*.csv`` files by the documented folder rule (:data:`FOLDER_RULE`).

    Raises:
        TraceSetError: for a folder without ``*.csv`` files, or a file too short to split.
    """
    root = Path(folder)
    files = sorted(root.glob("*.csv"), key=natural_key)
    if not files:
        raise TraceSetError(f"{root}: no trace files (*.csv) for a trace set")
    counts = [read_sia_trace(f, duration_unit).num_jobs for f in files]
    splits: dict[str, list[SplitSpec]] = {split: [] for split in SPLITS}
    if len(files) == 1:
        total = counts[0]
        part = math.ceil(VALIDATION_JOBS_FRAC * total)
        if total < 3:
            raise TraceSetError(f"{files[0]}: {total} job(s) cannot split into three parts")
        splits["train"].append((files[0].stem, 0, total - 2 * part))
        splits["validation"].append((files[0].stem, total - 2 * part, total - part))
        splits["test"].append((files[0].stem, total - part, total))
    else:
        num_test = math.ceil(TEST_FILES_FRAC * len(files))
        for file, total in zip(files[: len(files) - num_test], counts, strict=False):
            if total < 2:
                raise TraceSetError(f"{file}: 1 job cannot split into train and validation")
            part = math.ceil(VALIDATION_JOBS_FRAC * total)
            splits["train"].append((file.stem, 0, total - part))
            splits["validation"].append((file.stem, total - part, total))
        splits["test"].extend(f.stem for f in files[len(files) - num_test:])
    trace_set = make_trace_set(root.resolve().name, files, splits, FOLDER_RULE, duration_unit)
    return replace(trace_set, source=str(root))
