"""Reader of per-run variability measurements (PAL-style folders: TACC Longhorn as shipped with
PAL, or any other cluster's files laid out the same way).

Each file has one row per run, with a GPU identity column ``uuid`` and a ``perf`` column that is a
time (larger = slower); other columns are ignored. A run's normalised value is
``perf / median(perf over all rows of the file)``. Which file serves which perf class is decided
by :func:`palgym.io.class_files.resolve_class_files` (workload names or an explicit mapping).

Source: PAL artifact ``blox/cluster_state.py::_get_machine_slowdowns`` and ``profiles.json``
(class A = resnet, B = bert, C = bert, D = pagerank); data: Sinha et al., "Not All GPUs Are
Created Equal", SC'22.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from palgym.errors import ProfileError
from palgym.io.class_files import LONGHORN_CLASS_FILES, resolve_class_files
from palgym.io.csvutil import parse_number, read_rows
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray

__all__ = ["LONGHORN_CLASS_FILES", "Measurements", "read_measurements"]


@dataclass(frozen=True, eq=False)
class Measurements:
    """Normalised measurements of the four perf classes.

    Attributes:
        norm_runs: per class, float64 (R_c,) runs' ``perf / median(perf)`` in file order.
        gpu_medians: per class, float64 (U_c,) median normalised run of each measured GPU
            (GPUs in order of first appearance).
        sources: per class, the file read.
        label: short name of the measurements (the folder's name, or the mapping file's stem).
    """

    norm_runs: tuple[FloatArray, ...]
    gpu_medians: tuple[FloatArray, ...]
    sources: tuple[str, ...]
    label: str = ""


def read_measurements(
    directory: str | Path,
    class_files: tuple[str, str, str, str] | None = None,
) -> Measurements:
    """Read the measurement file of every perf class.

    Args:
        directory: the measurement folder, or a ``.json`` class-to-file mapping file (see
            :mod:`palgym.io.class_files`).
        class_files: file name per class A..D inside ``directory`` (a file may serve several
            classes); None finds them by workload name or the folder's mapping file.

    Returns:
        The normalised runs and per-GPU medians.

    Raises:
        ProfileError: naming the folder, the class and the files found when a class has no
            file or several; naming file, line and field, for a missing or unreadable file, a
            missing ``uuid`` / ``perf`` column, an empty / non-numeric / non-positive
            ``perf``, or a file with no rows.
    """
    if class_files is None:
        resolved = resolve_class_files(directory)
        paths, label = list(resolved.files), resolved.label
    else:
        folder = Path(directory)
        if not folder.is_dir():
            raise ProfileError("not a folder of measurement files", path=folder)
        if len(class_files) != NUM_PERF_CLASSES:
            raise ProfileError(f"need {NUM_PERF_CLASSES} class files, got {len(class_files)}")
        paths, label = [folder / name for name in class_files], folder.name
    cache: dict[Path, tuple[FloatArray, FloatArray]] = {}
    for path in paths:
        if path not in cache:
            cache[path] = _read_file(path)
    return Measurements(
        norm_runs=tuple(cache[p][0] for p in paths),
        gpu_medians=tuple(cache[p][1] for p in paths),
        sources=tuple(str(p) for p in paths),
        label=label,
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
