"""Sia / PAL trace CSV: ``job_id,num_gpus,submit_time,duration,model[,batch_size]``.

Column mapping (no rebasing: times are kept as in the file, as :func:`palgym.io.read_sia_trace`
does):

==============  ===================  ===========================================================
file column     canonical column     rule
==============  ===================  ===========================================================
job_id          job_id               integer, unique
submit_time     submit_time_s        seconds, >= 0
num_gpus        num_gpus             integer >= 1
duration        duration             > 0; unit from the ``duration_unit`` option (PAL's files
                                     count iterations, the default)
model           model                non-empty; perf class derived from it
batch_size      batch_size           optional integer >= 1 (PAL's testbed lists)
==============  ===================  ===========================================================

Nothing is dropped: any bad value is a :class:`~palgym.errors.TraceFormatError` naming file, line
and field. Source: PAL artifact ``workload/workload.py::populate_from_trace``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from palgym.errors import coerce_enum
from palgym.io import DurationUnit
from traces.load_report import LoadReport
from traces.loaders.common import RowFilter, finish
from traces.schema import CanonicalTrace
from traces.tabular import empty_mask, parse_numbers, read_table, require

SIA_COLUMNS: tuple[str, ...] = ("job_id", "num_gpus", "submit_time", "duration", "model")


def load_sia(
    path: str | Path, *, duration_unit: DurationUnit | str = DurationUnit.ITERATIONS,
    name: str | None = None,
) -> CanonicalTrace:
    """Load a Sia / PAL trace CSV.

    Args:
        path: the CSV file.
        duration_unit: what ``duration`` counts (``iterations`` or ``seconds``).
        name: trace id (default: the file stem).

    Returns:
        The canonical trace, sorted by submit time (stable).

    Raises:
        TraceFormatError: naming file, line and field for a missing column, an empty,
            non-numeric, non-integer, negative or zero value, an empty model or a duplicate id.
        ConfigError: for an unknown ``duration_unit`` (naming the known ones).
    """
    unit = coerce_enum(DurationUnit, duration_unit, "duration_unit")
    table = read_table(path, SIA_COLUMNS)
    job_id = parse_numbers(table, "job_id", integer=True)
    num_gpus = parse_numbers(table, "num_gpus", integer=True)
    require(table, "num_gpus", num_gpus >= 1, ">= 1")
    submit = parse_numbers(table, "submit_time")
    require(table, "submit_time", submit >= 0, ">= 0")
    duration = parse_numbers(table, "duration")
    require(table, "duration", duration > 0, "> 0")
    require(table, "model", ~empty_mask(table, "model"), "non-empty")
    batch = None
    if "batch_size" in table.cells:
        batch = parse_numbers(table, "batch_size", integer=True, allow_empty=True)
        require(table, "batch_size", np.isnan(batch) | (batch >= 1), ">= 1")
    rows = RowFilter(table, LoadReport(str(table.path), rows_read=table.num_rows))
    columns: dict[str, object] = {
        "num_gpus": num_gpus, "duration": duration, "duration_unit": unit.value,
        "model": table.cells["model"],
    }
    if batch is not None:
        columns["batch_size"] = batch
    metadata = {"format": "sia", "source": str(table.path), "duration_unit": unit.value}
    return finish(table, rows, name, submit_s=submit, columns=columns, metadata=metadata,
                  job_id=job_id, rebase=False)
