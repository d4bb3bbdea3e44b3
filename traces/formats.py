"""One entry point for every supported trace format: detection, loading, conversion to palgym.

=============  =====================================================  ===========================
format         header (detected when all these columns are present)  loader
=============  =====================================================  ===========================
``canonical``  job_id, submit_time_s, num_gpus, duration,             :func:`read_canonical`
               duration_unit, model (or a ``.parquet`` file)
``sia``        job_id, num_gpus, submit_time, duration, model          :func:`load_sia`
``pollux``     name, time, application, num_replicas, batch_size       :func:`load_pollux`
``philly``     timestamp, duration, num_gpus, gpu_time, cluster        :func:`load_philly`
``helios``     job_id, vc, gpu_num, state, submit_time, duration       :func:`load_helios`
``alibaba``    num_gpu, gpu_milli, creation_time, deletion_time,       :func:`load_alibaba`
               scheduled_time
=============  =====================================================  ===========================

``evaluate.py --trace PATH [--trace-format NAME]`` calls :func:`load_trace`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError, TraceFormatError
from palgym.sim.workload import Trace
from traces.canonical_io import PARQUET_SUFFIXES, read_canonical
from traces.convert import to_trace
from traces.loaders import load_alibaba, load_helios, load_philly, load_pollux, load_sia
from traces.loaders.alibaba import ALIBABA_REQUIRED
from traces.loaders.helios import HELIOS_REQUIRED
from traces.loaders.philly import PHILLY_COLUMNS
from traces.loaders.pollux import POLLUX_COLUMNS
from traces.loaders.sia import SIA_COLUMNS
from traces.schema import REQUIRED_COLUMNS, CanonicalTrace

logger = logging.getLogger(__name__)

Loader = Callable[..., CanonicalTrace]

_FORMATS: dict[str, tuple[tuple[str, ...], Loader]] = {
    "canonical": (REQUIRED_COLUMNS, read_canonical),
    "sia": (SIA_COLUMNS, load_sia),
    "pollux": (POLLUX_COLUMNS, load_pollux),
    "philly": (PHILLY_COLUMNS, load_philly),
    "helios": (HELIOS_REQUIRED, load_helios),
    "alibaba": (ALIBABA_REQUIRED, load_alibaba),
}
"""Detection order matters: the first format whose columns are all present wins."""

TRACE_FORMATS: tuple[str, ...] = tuple(_FORMATS)
"""Names accepted by ``format=`` / ``--trace-format``."""


def detect_format(path: str | Path) -> str:
    """The format of a trace file, from its suffix (Parquet = canonical) or its CSV header.

    Args:
        path: the file.

    Returns:
        One of :data:`TRACE_FORMATS`.

    Raises:
        TraceFormatError: naming the file and line 1 if the file is unreadable, empty, or its
            header matches no format.
    """
    file = Path(path)
    if file.suffix.lower() in PARQUET_SUFFIXES:
        return "canonical"
    names = _header(file)
    header = set(names)
    for name, (columns, _) in _FORMATS.items():
        if header.issuperset(columns):
            return name
    known = "; ".join(f"{n}: {','.join(c)}" for n, (c, _) in _FORMATS.items())
    raise TraceFormatError(
        f"unknown trace format (header: {','.join(names)}); expected one of {known}",
        path=file, line=1,
    )


def _header(file: Path) -> tuple[str, ...]:
    """Header of a CSV file without parsing its rows (first non-comment, non-blank line)."""
    try:
        with file.open(encoding="utf-8-sig", newline="") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    return read_table_header(line, file)
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"cannot read file: {exc}", path=file) from exc
    raise TraceFormatError("empty file (no header)", path=file, line=1)


def read_table_header(line: str, file: Path) -> tuple[str, ...]:
    """Column names of one CSV header line, stripped."""
    import csv

    try:
        return tuple(c.strip() for c in next(csv.reader([line])))
    except csv.Error as exc:
        raise TraceFormatError(f"unreadable CSV header: {exc}", path=file, line=1) from exc


def load_canonical(path: str | Path, format: str | None = None, **options: Any) -> CanonicalTrace:
    """Load any supported trace file into the canonical schema.

    Args:
        path: the file.
        format: one of :data:`TRACE_FORMATS`; None = :func:`detect_format`.
        **options: the loader's keyword options (e.g. ``duration_unit`` for ``sia``, ``start``
            / ``end`` / ``clusters`` for ``philly``, ``fractional`` for ``alibaba``, ``name``).
            ``duration_unit`` is accepted for every format but used only by ``sia`` (whose files
            do not say what ``duration`` counts): the other formats fix their unit (canonical:
            per row; pollux, philly, helios, alibaba: seconds) and ignore it, so a CLI can pass
            its ``--duration-unit`` whatever the file.

    Returns:
        The canonical trace; ``trace.report`` says what was dropped or changed and why.

    Raises:
        ConfigError: for an unknown format or an option the format's loader does not take.
        TraceFormatError: naming file, line and field for a malformed file.
    """
    chosen = detect_format(path) if format is None else format
    if chosen not in _FORMATS:
        raise ConfigError(f"unknown trace format {chosen!r} (choose {', '.join(TRACE_FORMATS)})")
    loader = _FORMATS[chosen][1]
    accepted = set(inspect.signature(loader).parameters) - {"path"}
    if "duration_unit" not in accepted and options.pop("duration_unit", None) is not None:
        logger.debug("%s: duration_unit ignored (format %s fixes its unit)", path, chosen)
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ConfigError(
            f"format {chosen!r} takes options {', '.join(sorted(accepted))}; "
            f"got {', '.join(unknown)}"
        )
    return loader(path, **options)


def load_trace(path: str | Path, format: str | None = None, **options: Any) -> Trace:
    """Load any supported trace file as a palgym :class:`~palgym.sim.workload.Trace`.

    Same as :func:`load_canonical` followed by :func:`traces.convert.to_trace` (durations:
    iterations x ``T_it(model)``, or seconds as 1-second iterations, as ``read_sia_trace``). For a
    Sia / PAL CSV the result equals :func:`palgym.io.read_sia_trace` (same options).

    Args:
        path: the file.
        format: one of :data:`TRACE_FORMATS`; None = detect from the suffix / header.
        **options: the loader's keyword options (see :func:`load_canonical`).

    Returns:
        The validated palgym Trace, sorted by submit time.

    Raises:
        ConfigError: for an unknown format or option.
        TraceFormatError: naming file, line and field for a malformed file, or (iterations) a
            model without a known per-iteration time.
    """
    return to_trace(load_canonical(path, format, **options))
