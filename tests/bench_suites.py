"""Small suites for the palgym-bench tests: the lite suite's tasks cut down to a few short
windows on bundled traces only (no generated file, so no ``prepare``), written as a suite file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from palgym.bench.suites import suite_folder

LITE = "palgym-bench-v1-lite"


def lite_data() -> dict[str, Any]:
    """The lite suite's content (anchors resolved)."""
    data: dict[str, Any] = yaml.safe_load((suite_folder() / f"{LITE}.yaml").read_text())
    return data


def tiny_suite(folder: Path, tasks: Sequence[str], *, window: int = 8,
               seeds: Sequence[int] = (0,), fields: dict[str, list[str]] | None = None,
               name: str = "tiny") -> Path:
    """A suite file of the lite suite's ``tasks`` with ``window``-job windows, ``seeds``,
    validation = ``sia-philly-gen-3``, test = ``sia-philly-gen-4`` (both bundled); ``fields``
    replaces a task's heuristic field."""
    data = lite_data()
    data["name"] = name
    data["tasks"] = [t for t in data["tasks"] if t["name"] in tasks]
    for task in data["tasks"]:
        task["world"] = {**task["world"], "window": window}
        task["seeds"] = list(seeds)
        task["heuristic_field"] = (fields or {}).get(task["name"], task["heuristic_field"])
        task["splits"] = {
            "train": {"traces": ["sia-philly-gen-0"]},
            "validation": {"traces": ["sia-philly-gen-3"]},
            "test": {"traces": ["sia-philly-gen-4"]},
        }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
