"""Helpers shared by the loaders: time-window and name filters, job numbering, finishing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from palgym.errors import ConfigError
from palgym.sim.types import BoolArray, FloatArray
from traces.load_report import LoadReport
from traces.schema import CanonicalTrace, make_canonical
from traces.tabular import RawTable


def parse_bound(value: str | float | int | None, option: str) -> float | None:
    """A window bound: None, seconds (a number) or a date-time string (naive = UTC).

    Returns:
        Seconds since 1970-01-01 (date-times) or the number itself.

    Raises:
        ConfigError: if the string is neither a number nor a date-time.
    """
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except ValueError:
        pass
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise ConfigError(f"{option}: not a number or date-time: {value!r}") from None
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize("UTC")
    return float(stamp.value) / 1e9


def iso(seconds: float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` (UTC) of seconds since 1970, for metadata (``{seconds} s`` when
    outside the years 1..9999)."""
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return f"{seconds!r} s"


class RowFilter:
    """Drops rows step by step, recording each reason in a :class:`LoadReport`.

    Attributes:
        alive: bool (R,) rows not dropped so far.
        report: the report entries are appended to.
    """

    def __init__(self, table: RawTable, report: LoadReport) -> None:
        self.table = table
        self.report = report
        self.alive: BoolArray = np.ones(table.num_rows, dtype=bool)

    def drop(self, mask: BoolArray, reason: str, field: str) -> None:
        """Drop the alive rows where ``mask`` (bool (R,)) is True, recording ``reason``."""
        hits = mask & self.alive
        self.report.record("dropped", hits, self.table.lines, reason, field)
        self.alive &= ~hits

    def change(self, mask: BoolArray, reason: str, field: str) -> None:
        """Record a change made to the alive rows where ``mask`` is True."""
        self.report.record("changed", mask & self.alive, self.table.lines, reason, field)

    def window(self, times: FloatArray, start: float | None, end: float | None,
               field: str) -> None:
        """Keep ``start <= time < end`` (either bound may be None)."""
        if start is not None:
            self.drop(times < start, f"before the window start {start!r}", field)
        if end is not None:
            self.drop(times >= end, f"at or after the window end {end!r}", field)

    def among(self, values: np.ndarray, chosen: Iterable[str] | None, field: str,
              what: str) -> None:
        """Keep rows whose ``values`` cell is in ``chosen`` (None keeps all)."""
        if chosen is None:
            return
        wanted = {str(v) for v in chosen}
        self.drop(~np.isin(values.astype(str), list(wanted)), f"{what} not selected "
                  f"(kept: {', '.join(sorted(wanted))})", field)


def finish(
    table: RawTable, rows: RowFilter, name: str | None, *, submit_s: FloatArray,
    columns: Mapping[str, object], metadata: dict[str, str], job_id: FloatArray | None = None,
    rebase: bool = True,
) -> CanonicalTrace:
    """Build the canonical trace of the alive rows, times rebased to the earliest kept submit.

    Args:
        table: the raw table.
        rows: the filter (its ``alive`` rows are kept).
        name: trace id (default: the file stem).
        submit_s: float64 (R,) absolute submit times (s).
        columns: the other canonical columns, each (R,) or one value.
        metadata: provenance; ``time_origin_s`` and ``job_id_rule`` are added.
        job_id: float64 (R,) ids from the file; None = number the kept jobs 0..J-1 in submit
            order (ties in file order).
        rebase: subtract the earliest kept submit time (False: keep the file's times).

    Returns:
        The canonical trace.

    Raises:
        TraceFormatError: if no row is left, or a value is outside the schema.
    """
    keep = rows.alive
    if not keep.any():
        raise table.error(f"no jobs left after filtering ({rows.report.summary()})")
    times = submit_s[keep]
    origin = float(times.min()) if rebase else 0.0
    if job_id is None:
        ids = np.empty(times.shape[0], dtype=np.int64)
        ids[np.argsort(times, kind="stable")] = np.arange(times.shape[0])
        metadata["job_id_rule"] = "0..J-1 in submit order (ties in file order)"
        kept_ids = ids.astype(np.float64)
    else:
        kept_ids = job_id[keep]
    metadata["time_origin_s"] = repr(origin)
    picked = {k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in columns.items()}
    return make_canonical(
        name or table.path.stem, job_id=kept_ids, submit_time_s=times - origin,
        metadata=metadata, source=str(table.path), source_line=table.lines[keep],
        report=rows.report, **picked,  # type: ignore[arg-type]
    )
