"""The canonical job schema every loader produces, and its content hash.

Columns (one row per job, rows sorted by ``submit_time_s``, ties in input order):

=================  ========  ==============================================================
column             dtype     meaning
=================  ========  ==============================================================
``job_id``         int64     unique id (the source's, or a documented numbering)
``submit_time_s``  float64   arrival, seconds from the trace's time origin, finite, >= 0
``num_gpus``       int64     GPUs the job needs (gang), >= 1
``duration``       float64   the job's length, finite, > 0, in ``duration_unit``
``duration_unit``  str       ``seconds`` (run time on a median GPU within one node) or
                             ``iterations`` (count of ``T_it(model)``-second iterations)
``model``          str       model / application name, non-empty (``unknown`` if the source
                             has none)
``perf_class``     str       optional ``A``..``D``; ``""`` = derive from ``model``
``batch_size``     Int64     optional global batch size, >= 1; ``<NA>`` = not given
=================  ========  ==============================================================

Source: the issue "Trace and variability ecosystem"; units follow :class:`palgym.io.DurationUnit`.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from palgym.errors import TraceFormatError
from palgym.io import DurationUnit
from palgym.sim.types import PERF_CLASS_NAMES, BoolArray, IntArray
from traces.load_report import LoadReport

CANONICAL_COLUMNS: tuple[str, ...] = (
    "job_id", "submit_time_s", "num_gpus", "duration", "duration_unit", "model", "perf_class",
    "batch_size",
)
REQUIRED_COLUMNS: tuple[str, ...] = CANONICAL_COLUMNS[:6]
DURATION_UNITS: tuple[str, ...] = tuple(unit.value for unit in DurationUnit)
UNKNOWN_MODEL: str = "unknown"
"""``model`` of jobs whose source records no model (perf class then follows palgym's rule)."""


@dataclass(frozen=True, eq=False)
class CanonicalTrace:
    """A validated trace in the canonical schema (see the module docstring).

    Attributes:
        name: trace id (e.g. the file stem).
        jobs: the J rows, columns :data:`CANONICAL_COLUMNS` with the dtypes above.
        metadata: provenance (format, source file, rules applied, seeds, command), written as
            ``# key: value`` lines / Parquet schema metadata.
        source: where the rows came from (file path), for error messages.
        source_line: int64 (J,) physical line of each job in ``source`` (0 = not from a file).
        report: what the loader dropped or changed (None if nothing was looked at).
    """

    name: str
    jobs: pd.DataFrame
    metadata: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    source_line: IntArray | None = None
    report: LoadReport | None = None

    @property
    def num_jobs(self) -> int:
        """J, the number of jobs."""
        return len(self.jobs)

    def line_of(self, row: int) -> int | None:
        """Source line of row ``row`` (None when unknown)."""
        if self.source_line is None or int(self.source_line[row]) == 0:
            return None
        return int(self.source_line[row])

    def to_csv_text(self) -> str:
        """The header and rows as CSV (floats with ``repr``, so a round trip is exact)."""
        frame = self.jobs
        batch = frame["batch_size"]
        columns = [
            frame["job_id"].tolist(),
            [repr(x) for x in frame["submit_time_s"].tolist()],
            frame["num_gpus"].tolist(),
            [repr(x) for x in frame["duration"].tolist()],
            frame["duration_unit"].tolist(),
            frame["model"].tolist(),
            frame["perf_class"].tolist(),
            ["" if pd.isna(x) else str(int(x)) for x in batch.tolist()],
        ]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CANONICAL_COLUMNS)
        writer.writerows(zip(*columns, strict=True))
        return buffer.getvalue()

    def content_hash(self) -> str:
        """SHA-256 (first 16 hex digits) of :meth:`to_csv_text`: equal rows, equal hash,
        whatever the file format or metadata."""
        return hashlib.sha256(self.to_csv_text().encode("utf-8")).hexdigest()[:16]

    def select(self, keep: BoolArray, name: str | None = None) -> CanonicalTrace:
        """The rows where ``keep`` (bool (J,)) is True, order preserved."""
        lines = None if self.source_line is None else self.source_line[keep]
        return replace(self, name=name or self.name,
                       jobs=self.jobs.loc[keep].reset_index(drop=True), source_line=lines)

    def with_columns(self, name: str | None = None, **columns: Any) -> CanonicalTrace:
        """A validated, re-sorted copy with some columns replaced (e.g. ``submit_time_s``)."""
        frame = self.jobs.copy()
        for key, values in columns.items():
            frame[key] = values
        return canonical_from_frame(frame, name or self.name, dict(self.metadata), self.source,
                                    self.source_line, self.report)

    def with_metadata(self, **entries: str) -> CanonicalTrace:
        """A copy with metadata entries added or replaced."""
        return replace(self, metadata={**self.metadata, **entries})


def make_canonical(
    name: str,
    *,
    job_id: Sequence[int] | np.ndarray,
    submit_time_s: Sequence[float] | np.ndarray,
    num_gpus: Sequence[int] | np.ndarray,
    duration: Sequence[float] | np.ndarray,
    duration_unit: str | Sequence[str] | np.ndarray,
    model: str | Sequence[str] | np.ndarray,
    perf_class: Sequence[str] | np.ndarray | None = None,
    batch_size: Sequence[float] | np.ndarray | None = None,
    metadata: Mapping[str, str] | None = None,
    source: str = "",
    source_line: Sequence[int] | np.ndarray | None = None,
    report: LoadReport | None = None,
) -> CanonicalTrace:
    """Build, validate and stably sort a canonical trace from columns of length J.

    Args:
        name: trace id.
        job_id, submit_time_s, num_gpus, duration: J values each (see the module table).
        duration_unit, model: one value for all jobs, or J values.
        perf_class: J letters ``A``..``D`` or ``""``; None = all ``""``.
        batch_size: J values, NaN = not given; None = none given.
        metadata: provenance entries.
        source: file path for error messages.
        source_line: int (J,) physical lines in ``source``.
        report: the loader's report.

    Returns:
        The trace, rows sorted by ``submit_time_s`` (stable).

    Raises:
        TraceFormatError: naming source, line (when known) and field, for any value outside the
            schema or a duplicate ``job_id``.
    """
    num = len(job_id)
    frame = pd.DataFrame({
        "job_id": np.asarray(job_id, dtype=np.float64),
        "submit_time_s": np.asarray(submit_time_s, dtype=np.float64),
        "num_gpus": np.asarray(num_gpus, dtype=np.float64),
        "duration": np.asarray(duration, dtype=np.float64),
        "duration_unit": _broadcast(duration_unit, num),
        "model": _broadcast(model, num),
        "perf_class": _broadcast("" if perf_class is None else perf_class, num),
        "batch_size": np.full(num, np.nan) if batch_size is None
        else np.asarray(batch_size, dtype=np.float64),
    })
    return canonical_from_frame(frame, name, dict(metadata or {}), source,
                                None if source_line is None else np.asarray(source_line),
                                report)


def _broadcast(values: str | Sequence[str] | np.ndarray, num: int) -> np.ndarray:
    if isinstance(values, str):
        return np.full(num, values, dtype=object)
    return np.asarray([str(v) for v in values], dtype=object)


def canonical_from_frame(
    frame: pd.DataFrame, name: str, metadata: dict[str, str], source: str,
    source_line: np.ndarray | None, report: LoadReport | None,
) -> CanonicalTrace:
    """Validate a frame with the canonical columns, cast the dtypes and sort it stably.

    Raises:
        TraceFormatError: see :func:`make_canonical`.
    """
    lines = (np.zeros(len(frame), dtype=np.int64) if source_line is None
             else np.asarray(source_line, dtype=np.int64))
    where = source or name
    _validate(frame, lines, where)
    order = np.argsort(frame["submit_time_s"].to_numpy(), kind="stable")
    jobs = pd.DataFrame({
        "job_id": frame["job_id"].to_numpy()[order].astype(np.int64),
        "submit_time_s": frame["submit_time_s"].to_numpy(dtype=np.float64)[order],
        "num_gpus": frame["num_gpus"].to_numpy()[order].astype(np.int64),
        "duration": frame["duration"].to_numpy(dtype=np.float64)[order],
        "duration_unit": frame["duration_unit"].to_numpy(dtype=object)[order],
        "model": frame["model"].to_numpy(dtype=object)[order],
        "perf_class": frame["perf_class"].to_numpy(dtype=object)[order],
        "batch_size": pd.array(
            frame["batch_size"].to_numpy(dtype=np.float64, na_value=np.nan)[order], dtype="Int64"
        ),
    })
    return CanonicalTrace(name, jobs, metadata, source,
                          None if source_line is None else lines[order], report)


def _validate(frame: pd.DataFrame, lines: IntArray, where: str) -> None:
    if len(frame) == 0:
        raise TraceFormatError("the trace has no jobs", path=where)

    def numeric(column: str) -> np.ndarray:
        values: np.ndarray = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
        return values

    job_id, submit, gpus = numeric("job_id"), numeric("submit_time_s"), numeric("num_gpus")
    duration, batch = numeric("duration"), numeric("batch_size")
    whole = np.isfinite(job_id) & (job_id == np.floor(job_id)) & (np.abs(job_id) <= 2**53)
    checks: tuple[tuple[str, BoolArray, str], ...] = (
        ("job_id", whole, "an integer"),
        ("submit_time_s", np.isfinite(submit) & (submit >= 0), "a finite number >= 0"),
        ("num_gpus", np.isfinite(gpus) & (gpus >= 1) & (gpus == np.floor(gpus))
         & (gpus <= 2**31), "an integer >= 1"),
        ("duration", np.isfinite(duration) & (duration > 0), "a finite number > 0"),
        ("duration_unit", frame["duration_unit"].isin(DURATION_UNITS).to_numpy(),
         f"one of {', '.join(DURATION_UNITS)}"),
        ("model", (frame["model"].astype(str).str.len() > 0).to_numpy(), "a non-empty name"),
        ("perf_class", frame["perf_class"].isin(("", *PERF_CLASS_NAMES)).to_numpy(),
         "empty or one of A, B, C, D"),
        ("batch_size", np.isnan(batch) | ((batch >= 1) & (batch == np.floor(batch))
                                          & (batch <= 2**53)), "empty or an integer >= 1"),
    )
    for column, ok, expected in checks:
        bad = np.flatnonzero(~ok)
        if bad.size:
            row = int(bad[0])
            raise TraceFormatError(
                f"job row {row}: value {frame[column].iloc[row]!r}, expected {expected}",
                path=where, line=int(lines[row]) or None, field=column,
            )
    duplicated = pd.Series(job_id).duplicated().to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        raise TraceFormatError(f"duplicate job id {int(job_id[row])}", path=where,
                               line=int(lines[row]) or None, field="job_id")
