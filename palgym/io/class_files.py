"""Which measurement file serves which perf class, in any PAL-style measurement folder.

A measurement folder holds one runs file (CSV, ``uuid`` + ``perf``) per measured workload. Each
perf class takes its runs from one workload: A = ResNet-50, B = BERT, C = BERT, D = PageRank.
The file of a class is found in one of two ways:

- **by workload name**: the one ``*.csv`` file of the folder whose name has the workload as a
  word, i.e. a token of the lower-cased file stem split at every non-alphanumeric character that
  equals the workload name or is the name followed by a digit and anything
  (``resnet-longhorn-agg.csv``, ``frontera-resnet50.csv``, ``ResNet_50_v100.csv`` serve class A;
  ``albert.csv`` and ``bertlarge.csv`` do not serve B);
- **by an explicit mapping**: a JSON object ``{"A": FILE, "B": FILE, "C": FILE, "D": FILE}``
  (a subset is allowed: the other classes are found by workload name), either in the folder as
  :data:`MAPPING_FILE_NAME` or passed instead of the folder (its optional ``"folder"`` entry,
  relative to the mapping file, names the measurement folder; default: the mapping file's own
  folder). FILE is relative to the measurement folder or absolute.

Source: PAL artifact ``profiles.json`` (classA resnet, classB bert, classC bert, classD
pagerank) and ``aggregated_data/sim/{resnet,bert,pagerank}-longhorn-agg.csv``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from palgym.errors import ProfileError
from palgym.io.strict_json import StrictJsonError, read_json

CLASS_NAMES: tuple[str, str, str, str] = ("A", "B", "C", "D")
"""Perf class letters, in class order."""
CLASS_WORKLOADS: tuple[str, str, str, str] = ("resnet", "bert", "bert", "pagerank")
"""Measured workload of each perf class A..D (PAL artifact ``profiles.json``)."""
LONGHORN_CLASS_FILES: tuple[str, str, str, str] = (
    "resnet-longhorn-agg.csv",
    "bert-longhorn-agg.csv",
    "bert-longhorn-agg.csv",
    "pagerank-longhorn-agg.csv",
)
"""File per perf class A..D in a Longhorn folder (PAL artifact ``profiles.json``)."""
MAPPING_FILE_NAME = "perf_classes.json"
"""Name of the optional class-to-file mapping inside a measurement folder."""
_FOLDER_KEY = "folder"


@dataclass(frozen=True)
class ClassFiles:
    """The resolved measurement file of every perf class.

    Attributes:
        folder: the measurement folder.
        files: per class A..D, the file (a file may serve several classes).
        label: short name of the measurements (the folder's name, or the mapping file's stem
            when a mapping file was given instead of a folder).
        mapping: the mapping file used, if any.
    """

    folder: Path
    files: tuple[Path, Path, Path, Path]
    label: str
    mapping: Path | None = None


def resolve_class_files(source: str | Path) -> ClassFiles:
    """Find the measurement file of every perf class.

    Args:
        source: a measurement folder, or a ``.json`` class-to-file mapping file.

    Returns:
        The folder, the four class files and a label.

    Raises:
        ProfileError: naming the folder, each unresolved class, its workload and the CSV files
            found, when a class has no matching file or several; naming the mapping file and
            the field for an unreadable or invalid mapping or a mapped file that does not exist;
            when ``source`` is neither a folder nor a ``.json`` file.
    """
    path = Path(source)
    if path.is_file() and path.suffix.lower() == ".json":
        folder, explicit = _read_mapping(path)
        return _resolve(folder, explicit, path.stem, path)
    if not path.is_dir():
        raise ProfileError("not a folder of measurement files (nor a .json class mapping)",
                           path=path)
    mapping = path / MAPPING_FILE_NAME
    if mapping.is_file():
        folder, explicit = _read_mapping(mapping)
        return _resolve(folder, explicit, path.name, mapping)
    return _resolve(path, {}, path.name, None)


def workload_matches(file_name: str, workload: str) -> bool:
    """Whether ``file_name`` names ``workload`` as a word (see the module docstring).

    Args:
        file_name: e.g. ``frontera-resnet50.csv``.
        workload: e.g. ``resnet``.

    Returns:
        True for a token equal to ``workload`` or ``workload`` followed by a digit.
    """
    tokens = re.split(r"[^0-9a-z]+", Path(file_name).stem.lower())
    pattern = re.compile(re.escape(workload) + r"(\d.*)?")
    return any(pattern.fullmatch(token) for token in tokens)


def _resolve(folder: Path, explicit: dict[str, Path], label: str,
             mapping: Path | None) -> ClassFiles:
    if not folder.is_dir():
        raise ProfileError("not a folder of measurement files", path=folder)
    candidates = sorted(
        p for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() == ".csv" and not p.name.startswith(".")
    )
    files: list[Path] = []
    problems: list[str] = []
    for index, (name, workload) in enumerate(zip(CLASS_NAMES, CLASS_WORKLOADS, strict=True)):
        if name in explicit:
            files.append(explicit[name])
            continue
        found = [p for p in candidates if workload_matches(p.name, workload)]
        if len(found) == 1:
            files.append(found[0])
            continue
        problems.append(_problem(folder, index, found))
    if problems:
        listed = ", ".join(p.name for p in candidates) or "none"
        how = (f"name the file of each class in {folder / MAPPING_FILE_NAME} (JSON, e.g. "
               '{"A": "resnet.csv"}) or pass such a mapping file as the measurement folder')
        raise ProfileError(f"{'; '.join(problems)}. CSV files found: {listed}. To choose, {how}",
                           path=mapping or folder)
    return ClassFiles(folder, (files[0], files[1], files[2], files[3]), label, mapping)


def _problem(folder: Path, index: int, found: list[Path]) -> str:
    name, workload = CLASS_NAMES[index], CLASS_WORKLOADS[index]
    if not found:
        return (f"perf class {name} needs a runs file of workload {workload!r}: no CSV file "
                f"named after it (such as {folder / LONGHORN_CLASS_FILES[index]})")
    return (f"perf class {name} (workload {workload!r}) is ambiguous: {len(found)} CSV files "
            f"match ({', '.join(p.name for p in found)})")


def _read_mapping(path: Path) -> tuple[Path, dict[str, Path]]:
    """The measurement folder and the class -> file entries of a mapping file."""
    try:  # strict JSON, at most 1 MiB (palgym/io/strict_json.py)
        data = read_json(path, max_bytes=1 << 20, what="a class mapping")
    except OSError as exc:
        raise ProfileError(f"cannot read the class mapping: {exc}", path=path) from None
    except StrictJsonError as exc:
        raise ProfileError(f"not valid JSON: {exc.reason}", path=path, line=exc.line,
                           field=exc.field) from None
    if not isinstance(data, dict):
        raise ProfileError("a class mapping must be a JSON object such as "
                           '{"A": "resnet.csv", "B": "bert.csv", ...}', path=path)
    allowed = (*CLASS_NAMES, _FOLDER_KEY)
    for key, value in data.items():
        if key not in allowed:
            raise ProfileError(f"unknown key (allowed: {', '.join(allowed)})", path=path,
                               field=key)
        if not isinstance(value, str) or not value.strip():
            raise ProfileError(f"must be a non-empty file name, got {value!r}", path=path,
                               field=key)
    folder = path.parent / data.get(_FOLDER_KEY, ".")
    explicit: dict[str, Path] = {}
    for name in CLASS_NAMES:
        if name in data:
            file = folder / data[name]
            if not file.is_file():
                raise ProfileError(f"perf class {name}: mapped file {file} does not exist "
                                   "(or is not a file)",
                                   path=path, field=name)
            explicit[name] = file
    return folder, explicit
