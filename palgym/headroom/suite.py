"""The small-instance suite file: generated instances, their proven optima and the hindsight
search's values, written by ``python -m palgym.headroom small`` and shipped as package data
(``palgym/data/small/palgym-small-v1.json``).

Format (``palgym-small/1``; JSON, finite numbers only)::

    {"format": "palgym-small/1", "preset": "default", "generator": ..., "command": ...,
     "solver": {"name": "cp-sat", "version", "time_limit_s", "workers"},
     "search": {"evaluations", "seed"},
     "instances": [{"name", "seed", "split", "cluster", "num_jobs", "episode_hash",
                    "status", "optimum_avg_jct_s", "solver_lower_bound_s",
                    "lower_bound_avg_jct_s", "best_heuristic", "best_heuristic_avg_jct_s",
                    "search_avg_jct_s", "search_placement", "solver_wall_s", "search_wall_s",
                    "schedule": [flat record]}, ...]}

``status`` is ``optimal`` when the optimum is proven (``optimum_avg_jct_s`` is then the
optimum and ``schedule`` attains it: the flat form of a
:class:`palgym.schedule_record.ScheduleRecord`, replayed by
:func:`palgym.schedule_record.replay_schedule`), else ``feasible`` (``optimum_avg_jct_s`` is
the best schedule found and ``solver_lower_bound_s`` the proven bound). Splits are by seed:
``seed % 5``
0-2 train, 3 validation, 4 test.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from palgym.errors import ConfigError
from palgym.schedule_record import ScheduleError, ScheduleRecord

SUITE_FORMAT = "palgym-small/1"
SUITE_FILE = "palgym-small-v1.json"
"""The shipped suite's file name (``palgym/data/small/``)."""
SPLITS = ("train", "train", "train", "validation", "test")
"""The split of an instance by ``seed % 5``."""
MAX_SUITE_BYTES = 16 * 2**20
"""The largest suite file read (bytes)."""


def split_of(seed: int) -> str:
    """The split of the instance of ``seed`` (module docstring)."""
    return SPLITS[seed % len(SPLITS)]


def suite_path() -> Path:
    """The shipped suite's path."""
    return Path(str(resources.files("palgym").joinpath("data", "small", SUITE_FILE)))


def read_suite(path: str | Path | None = None) -> dict[str, Any]:
    """Read a suite file (default: the shipped one) and check its form.

    Raises:
        ConfigError: naming the file (and the instance and field) for a file that is not a
            ``palgym-small/1`` suite.
    """
    path = Path(path) if path is not None else suite_path()
    try:
        if path.stat().st_size > MAX_SUITE_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_SUITE_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"),
                          parse_constant=_refuse_constant)
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read the suite: {error}") from error
    if not isinstance(data, dict) or data.get("format") != SUITE_FORMAT:
        raise ConfigError(f"{path}: not a {SUITE_FORMAT} file")
    instances = data.get("instances")
    if not isinstance(instances, list):
        raise ConfigError(f"{path}: field 'instances' must be a list")
    for k, item in enumerate(instances):
        _check_instance(item, f"{path}: instances[{k}]")
    return data


def _check_instance(item: object, where: str) -> None:
    """Check one instance's fields; its ``schedule`` becomes a ScheduleRecord (in place)."""
    if not isinstance(item, dict):
        raise ConfigError(f"{where} must be an object")
    for key, kind in (("seed", int), ("status", str), ("optimum_avg_jct_s", float),
                      ("solver_lower_bound_s", float), ("search_avg_jct_s", float)):
        value = item.get(key)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (number if kind is float else type(value) is kind):
            raise ConfigError(f"{where}: field {key!r} must be a {kind.__name__}")
    flat = item.get("schedule")
    if not isinstance(flat, list) or not all(type(v) is int for v in flat):
        raise ConfigError(f"{where}: field 'schedule' must be a list of integers")
    try:
        item["schedule"] = ScheduleRecord.from_ints(flat)
    except ScheduleError as error:
        raise ConfigError(f"{where}: field 'schedule': {error}") from error


def _refuse_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in a suite file")
