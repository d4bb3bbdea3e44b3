"""Microsoft Philly job-level extract: ``timestamp,duration,num_gpus,gpu_time,cluster``.

Column mapping:

===========  ================  ==================================================================
file column  canonical column  rule
===========  ================  ==================================================================
timestamp    submit_time_s     date-time (or seconds); minus the earliest kept timestamp
duration     duration          seconds (``duration_unit`` = seconds)
num_gpus     num_gpus          integer
gpu_time     (ignored)         ``duration x num_gpus`` in the public file
cluster      (filter only)     virtual cluster (VC) id
(sort)       job_id            0..J-1 by timestamp (rows are unsorted; ties in file order)
(none)       model             ``unknown`` (Philly records no model: perf class A, palgym's rule)
===========  ================  ==================================================================

Dropped and reported: rows outside ``[start, end)``, rows of other VCs (``clusters``), rows with
``num_gpus`` < 1 and zero-length jobs (``duration`` <= 0). Empty or unparseable cells are errors.

Source: siasosp23/artifacts@aaf7a0de ``sia-simulator/traces/philly.csv`` (Jeon et al., ATC'19).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from traces.load_report import LoadReport
from traces.loaders.common import RowFilter, finish, iso, parse_bound
from traces.schema import UNKNOWN_MODEL, CanonicalTrace
from traces.tabular import parse_numbers, parse_times, read_table

PHILLY_COLUMNS: tuple[str, ...] = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")


def load_philly(
    path: str | Path, *, start: str | float | None = None, end: str | float | None = None,
    clusters: Iterable[str] | None = None, name: str | None = None,
) -> CanonicalTrace:
    """Load the Philly job-level extract, optionally one time window and / or some VCs.

    Args:
        path: the CSV file.
        start: keep jobs submitted at or after this date-time (e.g. ``"2017-10-01"``) or
            number of seconds (same clock as the file); None = no bound.
        end: keep jobs submitted before this; None = no bound.
        clusters: VC ids to keep; None = all.
        name: trace id (default: the file stem).

    Returns:
        The canonical trace (durations in seconds), the earliest kept job at time 0.

    Raises:
        TraceFormatError: naming file, line and field for a missing column or bad cell, or if no
            job is left.
        ConfigError: for an unparseable ``start`` / ``end``.
    """
    start_s, end_s = parse_bound(start, "start"), parse_bound(end, "end")
    table = read_table(path, PHILLY_COLUMNS)
    stamps = parse_times(table, "timestamp")
    duration = parse_numbers(table, "duration")
    num_gpus = parse_numbers(table, "num_gpus", integer=True)
    rows = RowFilter(table, LoadReport(str(table.path), rows_read=table.num_rows))
    rows.window(stamps, start_s, end_s, "timestamp")
    rows.among(table.cells["cluster"], clusters, "cluster", "virtual cluster")
    rows.drop(num_gpus < 1, "no GPU (num_gpus < 1)", "num_gpus")
    rows.drop(duration <= 0, "zero-length job (duration <= 0)", "duration")
    metadata = {
        "format": "philly", "source": str(table.path),
        "time_window": f"[{_show(start_s)}, {_show(end_s)})",
        "clusters": "all" if clusters is None else ",".join(sorted(map(str, clusters))),
    }
    trace = finish(table, rows, name, submit_s=stamps, metadata=metadata,
                   columns={"num_gpus": num_gpus, "duration": duration,
                            "duration_unit": "seconds", "model": UNKNOWN_MODEL})
    origin = float(trace.metadata["time_origin_s"])
    return trace.with_metadata(time_origin=iso(origin))


def _show(bound: float | None) -> str:
    return "-" if bound is None else iso(bound)
