"""Helios (SenseTime, SC'21) ``cluster_log.csv``:
``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``.

Column mapping:

=================  ================  ===========================================================
file column        canonical column  rule
=================  ================  ===========================================================
job_id             job_id            kept if every cell is an integer, else 0..J-1 by submit
submit_time        submit_time_s     date-time (or seconds); minus the earliest kept submit
gpu_num            num_gpus          integer
duration           duration          seconds (``duration_unit`` = seconds); empty = never ran
vc                 (filter only)     virtual cluster
state              (filter only)     see ``states``
user, cpu_num,     (ignored)
node_num,
start_time,
end_time, queue
(none)             model             ``unknown`` (perf class A, palgym's rule)
=================  ================  ===========================================================

**GPU jobs only**: rows with ``gpu_num`` < 1 (CPU jobs) are dropped. **State filter**: by
default every state is kept (a failed, cancelled or timed-out job held its GPUs while it ran);
``states=("COMPLETED",)`` keeps finished jobs only. Jobs that never ran (empty or zero
``duration``) are dropped. Each drop is reported with its reason.

Source: S-Lab HeliosData (Hu et al., "Characterization and Prediction of Deep Learning Workloads
in Large-Scale GPU Datacenters", SC'21), ``data/<cluster>/cluster_log.csv``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from traces.load_report import LoadReport
from traces.loaders.common import RowFilter, finish, iso, parse_bound
from traces.schema import UNKNOWN_MODEL, CanonicalTrace
from traces.tabular import parse_numbers, parse_times, read_table

HELIOS_COLUMNS: tuple[str, ...] = (
    "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
    "start_time", "end_time", "duration", "queue",
)
HELIOS_REQUIRED: tuple[str, ...] = ("job_id", "vc", "gpu_num", "state", "submit_time", "duration")
"""Columns the loader reads (the others may be absent)."""


def load_helios(
    path: str | Path, *, states: Iterable[str] | None = None, vcs: Iterable[str] | None = None,
    start: str | float | None = None, end: str | float | None = None, name: str | None = None,
) -> CanonicalTrace:
    """Load a Helios ``cluster_log.csv`` (GPU jobs only).

    Args:
        path: the CSV file.
        states: job states to keep (e.g. ``("COMPLETED",)``); None = all.
        vcs: virtual clusters to keep; None = all.
        start: keep jobs submitted at or after this date-time / seconds; None = no bound.
        end: keep jobs submitted before this; None = no bound.
        name: trace id (default: the file stem).

    Returns:
        The canonical trace (durations in seconds), the earliest kept job at time 0.

    Raises:
        TraceFormatError: naming file, line and field for a missing column or bad cell, a
            duplicate ``job_id``, or if no job is left.
        ConfigError: for an unparseable ``start`` / ``end``.
    """
    start_s, end_s = parse_bound(start, "start"), parse_bound(end, "end")
    table = read_table(path, HELIOS_REQUIRED)
    submit = parse_times(table, "submit_time")
    gpus = parse_numbers(table, "gpu_num", integer=True)
    duration = parse_numbers(table, "duration", allow_empty=True)
    rows = RowFilter(table, LoadReport(str(table.path), rows_read=table.num_rows))
    rows.drop(gpus < 1, "CPU job (gpu_num < 1)", "gpu_num")
    rows.window(submit, start_s, end_s, "submit_time")
    rows.among(table.cells["vc"], vcs, "vc", "virtual cluster")
    rows.among(table.cells["state"], states, "state", "state")
    rows.drop(np.isnan(duration) | (duration <= 0), "never ran (duration empty or <= 0)",
              "duration")
    ids = pd.to_numeric(pd.Series(table.cells["job_id"], dtype=object), errors="coerce")
    numeric_ids = ids.to_numpy(dtype=np.float64, na_value=np.nan)
    kept = numeric_ids[rows.alive]
    use_ids = bool(np.isfinite(kept).all() and (kept == np.floor(kept)).all()
                   and (np.abs(kept) <= 2**53).all())
    metadata = {
        "format": "helios", "source": str(table.path),
        "states": "all" if states is None else ",".join(sorted(map(str, states))),
        "vcs": "all" if vcs is None else ",".join(sorted(map(str, vcs))),
        "time_window": f"[{'-' if start_s is None else iso(start_s)}, "
                       f"{'-' if end_s is None else iso(end_s)})",
    }
    trace = finish(table, rows, name, submit_s=submit, metadata=metadata,
                   job_id=numeric_ids if use_ids else None,
                   columns={"num_gpus": gpus, "duration": duration,
                            "duration_unit": "seconds", "model": UNKNOWN_MODEL})
    return trace.with_metadata(time_origin=iso(float(trace.metadata["time_origin_s"])))
