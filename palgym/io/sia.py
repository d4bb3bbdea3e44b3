"""Reader of the Sia / PAL trace CSV: ``job_id,num_gpus,submit_time,duration,model[,batch_size]``.

Source: PAL artifact ``workload/workload.py::populate_from_trace``; the Sia-Philly traces
(``workload-traces/philly/workload-N.csv``). In PAL's files ``duration`` is an **iteration
count**; a job's ideal run time is ``duration x T_it(model)``.
"""

from __future__ import annotations

import logging
from enum import Enum
from pathlib import Path

from palgym.errors import TraceFormatError, coerce_enum
from palgym.io.csvutil import parse_number, read_header, read_rows
from palgym.sim.workload import MODEL_ITERATION_TIME_S, Trace, perf_class_of_model

logger = logging.getLogger(__name__)

SIA_COLUMNS: tuple[str, ...] = ("job_id", "num_gpus", "submit_time", "duration", "model")


class DurationUnit(str, Enum):
    """What the ``duration`` column counts."""

    ITERATIONS = "iterations"
    """PAL's reading: iterations of ``T_it(model)`` seconds (the model must be known)."""
    SECONDS = "seconds"
    """Seconds on a median GPU: simulated with T_it = 1 s, iterations = seconds."""


def has_sia_header(path: str | Path) -> bool:
    """True if the file's CSV header has every column of :data:`SIA_COLUMNS` (False if it
    cannot be read: the reader then reports why)."""
    try:
        header = read_header(Path(path), TraceFormatError)
    except TraceFormatError:
        return False
    return set(header).issuperset(SIA_COLUMNS)


def read_sia_trace(
    path: str | Path,
    duration_unit: DurationUnit | str = DurationUnit.ITERATIONS,
    name: str | None = None,
) -> Trace:
    """Read and validate a Sia / PAL trace file.

    Args:
        path: CSV file with the columns of :data:`SIA_COLUMNS` (extra columns such as
            ``batch_size`` are ignored).
        duration_unit: how to read ``duration`` (see :class:`DurationUnit`).
        name: trace id; defaults to the file stem.

    Returns:
        The trace, sorted by submit time (stable).

    Raises:
        TraceFormatError: naming file, line and field, for: unreadable or empty file, missing
            column, empty / non-numeric / non-finite / negative cell, non-integer ``job_id`` or
            ``num_gpus``, ``num_gpus`` < 1, ``duration`` <= 0, duplicate ``job_id``, and (with
            iteration durations) a model without a known per-iteration time.
        ConfigError: for an unknown ``duration_unit`` (naming the known ones).
    """
    file = Path(path)
    unit = coerce_enum(DurationUnit, duration_unit, "duration_unit")
    job_ids: list[int] = []
    num_gpus: list[int] = []
    submit_times: list[float] = []
    durations: list[float] = []
    models: list[str] = []
    iteration_times: list[float] = []
    lines: list[int] = []
    first_line_of: dict[int, int] = {}
    for line, row in read_rows(file, SIA_COLUMNS, TraceFormatError):
        job_id = int(_number(row, "job_id", int, file, line))
        if job_id in first_line_of:
            raise TraceFormatError(
                f"duplicate job id {job_id} (first on line {first_line_of[job_id]})",
                path=file, line=line, field="job_id",
            )
        first_line_of[job_id] = line
        lines.append(line)
        job_ids.append(job_id)
        num_gpus.append(int(_number(row, "num_gpus", int, file, line, positive=True)))
        submit_times.append(float(_number(row, "submit_time", float, file, line, minimum=0)))
        durations.append(float(_number(row, "duration", float, file, line, positive=True)))
        model = row["model"]
        if model == "":
            raise TraceFormatError("empty value", path=file, line=line, field="model")
        models.append(model)
        iteration_times.append(_iteration_time(model, unit, file, line))
    if not job_ids:
        raise TraceFormatError("no jobs (only a header)", path=file, line=2)
    return Trace.from_columns(
        name or file.stem,
        job_id=job_ids,
        submit_time_s=submit_times,
        num_gpus=num_gpus,
        total_iterations=durations,
        iteration_time_s=iteration_times,
        model=models,
        perf_class=[int(perf_class_of_model(m)) for m in models],
        source=str(file),
        source_line=lines,
    )


def _number(
    row: dict[str, str],
    field: str,
    kind: type[int] | type[float],
    file: Path,
    line: int,
    minimum: float | None = None,
    positive: bool = False,
) -> int | float:
    return parse_number(
        row[field], kind, path=file, line=line, field=field, error=TraceFormatError,
        minimum=minimum, strictly_positive=positive,
    )


def _iteration_time(model: str, unit: DurationUnit, file: Path, line: int) -> float:
    if unit is DurationUnit.SECONDS:
        return 1.0
    known = MODEL_ITERATION_TIME_S.get(model)
    if known is None:
        raise TraceFormatError(
            f"unknown model {model!r}: durations are iterations, and the per-iteration time is "
            f"known only for {', '.join(sorted(MODEL_ITERATION_TIME_S))} (to treat durations as "
            "seconds: --duration-unit seconds on the command line, duration_unit='seconds' in "
            "Python)",
            path=file, line=line, field="model",
        )
    return known
