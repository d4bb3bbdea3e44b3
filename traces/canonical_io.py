"""Canonical trace files: CSV (always) and Parquet (when ``pyarrow`` is installed).

CSV layout: ``# key: value`` metadata lines (``content_hash`` last), the header
:data:`~traces.schema.CANONICAL_COLUMNS`, one row per job; floats written with ``repr`` so a
round trip is exact. Parquet holds the same columns, with the metadata (and ``content_hash``) in
the schema metadata. Reading checks a recorded ``content_hash`` against the rows.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from palgym.errors import ConfigError, TraceFormatError
from palgym.io.atomic import atomic_write_bytes, atomic_write_text
from traces.load_report import LoadReport
from traces.schema import REQUIRED_COLUMNS, CanonicalTrace, make_canonical
from traces.tabular import empty_mask, parse_numbers, read_table

PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")
HASH_KEY = "content_hash"


def write_canonical(trace: CanonicalTrace, path: str | Path) -> Path:
    """Write a canonical trace atomically; Parquet if the suffix is ``.parquet`` / ``.pq``.

    Args:
        trace: the trace.
        path: destination (folders are created).

    Returns:
        The path written.

    Raises:
        ConfigError: for Parquet without ``pyarrow`` installed.
        OSError: if the file cannot be written.
    """
    target = Path(path)
    metadata = {**trace.metadata, HASH_KEY: trace.content_hash()}
    if target.suffix.lower() in PARQUET_SUFFIXES:
        return atomic_write_bytes(target, _parquet_bytes(trace, metadata))
    header = "".join(f"# {key}: {_one_line(value)}\n" for key, value in metadata.items())
    return atomic_write_text(target, header + trace.to_csv_text())


def _one_line(value: str) -> str:
    return str(value).replace("\r", " ").replace("\n", " ")


def _pyarrow() -> object:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet
    except ImportError:
        raise ConfigError(
            "Parquet needs pyarrow: pip install 'palgym[parquet]' (or write a .csv file)"
        ) from None
    return pyarrow


def _parquet_bytes(trace: CanonicalTrace, metadata: dict[str, str]) -> bytes:
    pa = _pyarrow()
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(trace.jobs, preserve_index=False)  # type: ignore[attr-defined]
    table = table.replace_schema_metadata({k: str(v) for k, v in metadata.items()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def read_canonical(path: str | Path, name: str | None = None) -> CanonicalTrace:
    """Read a canonical CSV or Parquet file.

    Args:
        path: the file.
        name: trace id; default the file stem.

    Returns:
        The trace with its metadata (``content_hash`` removed after it is checked).

    Raises:
        TraceFormatError: naming file, line and field, for any value outside the schema, a
            missing column, or a ``content_hash`` that does not match the rows.
        ConfigError: for Parquet without ``pyarrow``.
    """
    file = Path(path)
    if file.suffix.lower() in PARQUET_SUFFIXES:
        trace = _read_parquet(file, name or file.stem)
    else:
        trace = _read_csv(file, name or file.stem)
    recorded = trace.metadata.get(HASH_KEY)
    metadata = {k: v for k, v in trace.metadata.items() if k != HASH_KEY}
    trace = CanonicalTrace(trace.name, trace.jobs, metadata, trace.source, trace.source_line,
                           trace.report)
    if recorded is not None and recorded != trace.content_hash():
        raise TraceFormatError(
            f"recorded content hash {recorded} != {trace.content_hash()} of the rows (the file "
            f"was edited; delete the '# {HASH_KEY}' line to accept it)",
            path=file, field=HASH_KEY,
        )
    return trace


def _read_csv(file: Path, name: str) -> CanonicalTrace:
    table = read_table(file, REQUIRED_COLUMNS)
    metadata = dict(
        (key.strip(), value.strip())
        for key, _, value in (c.partition(":") for c in table.comments) if key.strip()
    )
    batch = (parse_numbers(table, "batch_size", integer=True, allow_empty=True)
             if "batch_size" in table.cells else None)
    perf_class = table.cells.get("perf_class")
    for column in ("model",):
        if empty_mask(table, column).any():
            row = int(np.flatnonzero(empty_mask(table, column))[0])
            raise table.error("empty value", row, column)
    report = LoadReport(str(file), rows_read=table.num_rows)
    return make_canonical(
        name,
        job_id=parse_numbers(table, "job_id", integer=True),
        submit_time_s=parse_numbers(table, "submit_time_s"),
        num_gpus=parse_numbers(table, "num_gpus", integer=True),
        duration=parse_numbers(table, "duration"),
        duration_unit=table.cells["duration_unit"],
        model=table.cells["model"],
        perf_class=perf_class,
        batch_size=batch,
        metadata=metadata,
        source=str(file),
        source_line=table.lines,
        report=report,
    )


def _read_parquet(file: Path, name: str) -> CanonicalTrace:
    _pyarrow()
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file)
    except (OSError, ValueError) as exc:
        raise TraceFormatError(f"unreadable Parquet file: {exc}", path=file) from exc
    raw_meta = table.schema.metadata or {}
    metadata = {
        k.decode(): v.decode() for k, v in raw_meta.items() if not k.startswith(b"pandas")
    }
    frame = table.to_pandas()
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceFormatError("missing column", path=file, field=missing[0])
    num = len(frame)
    return make_canonical(
        name,
        job_id=frame["job_id"].to_numpy(dtype=np.float64),
        submit_time_s=frame["submit_time_s"].to_numpy(dtype=np.float64),
        num_gpus=frame["num_gpus"].to_numpy(dtype=np.float64),
        duration=frame["duration"].to_numpy(dtype=np.float64),
        duration_unit=frame["duration_unit"].astype(str).to_numpy(),
        model=frame["model"].astype(str).to_numpy(),
        perf_class=frame["perf_class"].fillna("").astype(str).to_numpy()
        if "perf_class" in frame else None,
        batch_size=frame["batch_size"].to_numpy(dtype=np.float64, na_value=np.nan)
        if "batch_size" in frame else None,
        metadata=metadata,
        source=str(file),
        source_line=np.arange(1, num + 1, dtype=np.int64),
        report=LoadReport(str(file), rows_read=num),
    )
