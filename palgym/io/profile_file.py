"""palgym's per-GPU profile file: ``gpu,perfvar_classA,...,perfvar_classD``.

Values are written with ``repr`` so a round trip is exact; ``#`` lines at the top hold provenance.
PAL's own per-GPU format (``GPU_ID,Node_ID,PerfVar_classA,...,PerfVar_classD``) is read too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from palgym.errors import ProfileError
from palgym.io.atomic import atomic_write_text
from palgym.io.csvutil import parse_number, read_header, read_rows
from palgym.sim.types import PERF_CLASS_NAMES
from palgym.sim.variability import VariabilityProfile

PALGYM_COLUMNS = ("gpu", *(f"perfvar_class{c}" for c in PERF_CLASS_NAMES))
PAL_COLUMNS = ("GPU_ID", *(f"PerfVar_class{c}" for c in PERF_CLASS_NAMES))


def write_profile(profile: VariabilityProfile, path: str | Path, comment: str = "") -> Path:
    """Write a profile atomically; each ``comment`` line is written first, prefixed by ``# ``.

    Returns:
        The path written.
    """
    lines = [f"# {text}" for text in comment.splitlines()]
    lines.append(",".join(PALGYM_COLUMNS))
    for gpu in range(profile.num_gpus):
        values = ",".join(repr(float(v)) for v in profile.perfvar[:, gpu])
        lines.append(f"{gpu},{values}")
    return atomic_write_text(path, "\n".join(lines) + "\n")


def read_profile(path: str | Path, name: str | None = None) -> VariabilityProfile:
    """Read a profile file (palgym's or PAL's per-GPU format).

    Args:
        path: the CSV file.
        name: profile id; defaults to the file stem.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ProfileError: naming file, line and field for an unreadable or empty file, missing
            columns, a non-numeric / non-positive value, or GPU ids that are not 0..G-1 in order.
    """
    file = Path(path)
    header = read_header(file, ProfileError)
    columns = PAL_COLUMNS if PAL_COLUMNS[1] in header else PALGYM_COLUMNS
    gpu_field, class_fields = columns[0], columns[1:]
    rows: list[list[float]] = []
    for line, row in read_rows(file, columns, ProfileError):
        gpu = parse_number(
            row[gpu_field], int, path=file, line=line, field=gpu_field, error=ProfileError
        )
        if gpu != len(rows):
            raise ProfileError(
                f"expected GPU id {len(rows)}, got {gpu}", path=file, line=line, field=gpu_field
            )
        rows.append([
            parse_number(
                row[c], float, path=file, line=line, field=c, error=ProfileError,
                strictly_positive=True,
            )
            for c in class_fields
        ])
    if not rows:
        raise ProfileError("no GPU rows", path=file)
    return VariabilityProfile(name or file.stem, np.asarray(rows, dtype=np.float64).T.copy())
