"""Reader of per-run variability measurements (TACC Longhorn files as shipped with PAL).

Each file has one row per run, with a GPU identity column ``uuid`` and a ``perf`` column that is a
time (larger = slower); other columns are ignored. A run's normalised value is
``perf / median(perf over all rows of the file)``.

Source: PAL artifact ``blox/cluster_state.py::_get_machine_slowdowns`` and ``profiles.json``
(class A = resnet, B = bert, C = bert, D = pagerank); data: Sinha et al., "Not All GPUs Are
Created Equal", SC'22.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from palgym.errors import ProfileError
from palgym.io.csvutil import parse_number, read_rows
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray

LONGHORN_CLASS_FILES: tuple[str, str, str, str] = (
    "resnet-longhorn-agg.csv",
    "bert-longhorn-agg.csv",
    "bert-longhorn-agg.csv",
    "pagerank-longhorn-agg.csv",
)
"""File per perf class A..D in a Longhorn folder (PAL artifact ``profiles.json``)."""


@dataclass(frozen=True, eq=False)
class Measurements:
    """Normalised measurements of the four perf classes.

    Attributes:
        norm_runs: per class, float64 (R_c,) runs' ``perf / median(perf)`` in file order.
        gpu_medians: per class, float64 (U_c,) median normalised run of each measured GPU
            (GPUs in order of first appearance).
        sources: per class, the file read.
    """

    norm_runs: tuple[FloatArray, ...]
    gpu_medians: tuple[FloatArray, ...]
    sources: tuple[str, ...]


def read_measurements(
    directory: str | Path,
    class_files: tuple[str, str, str, str] = LONGHORN_CLASS_FILES,
) -> Measurements:
    """Read the measurement file of every perf class from ``directory``.

    Args:
        directory: folder holding the files.
        class_files: file name per class A..D (a file may serve several classes).

    Returns:
        The normalised runs and per-GPU medians.

    Raises:
        ProfileError: naming file, line and field, for a missing or unreadable file, a missing
            ``uuid`` / ``perf`` column, an empty / non-numeric / non-positive ``perf``, or a file
            with no rows.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ProfileError("not a folder of measurement files", path=folder)
    cache: dict[str, tuple[FloatArray, FloatArray]] = {}
    for file_name in class_files:
        if file_name not in cache:
            cache[file_name] = _read_file(folder / file_name)
    if len(class_files) != NUM_PERF_CLASSES:
        raise ProfileError(f"need {NUM_PERF_CLASSES} class files, got {len(class_files)}")
    return Measurements(
        norm_runs=tuple(cache[f][0] for f in class_files),
        gpu_medians=tuple(cache[f][1] for f in class_files),
        sources=tuple(str(folder / f) for f in class_files),
    )


def _read_file(path: Path) -> tuple[FloatArray, FloatArray]:
    uuids: list[str] = []
    perf: list[float] = []
    for line, row in read_rows(path, ("uuid", "perf"), ProfileError):
        perf.append(
            parse_number(
                row["perf"], float, path=path, line=line, field="perf", error=ProfileError,
                strictly_positive=True,
            )
        )
        if row["uuid"] == "":
            raise ProfileError("empty value", path=path, line=line, field="uuid")
        uuids.append(row["uuid"])
    if not perf:
        raise ProfileError("no measurement rows", path=path, line=2)
    values = np.asarray(perf, dtype=np.float64)
    norm = values / np.median(values)
    index_of: dict[str, list[int]] = {}
    for position, uuid in enumerate(uuids):
        index_of.setdefault(uuid, []).append(position)
    medians = np.array([np.median(norm[idx]) for idx in index_of.values()], dtype=np.float64)
    return norm, medians
