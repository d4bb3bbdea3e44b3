"""The environment variables every command line of palgym reads, read one way.

``$PALGYM_DATA_DIR`` (the public data, ``--data-dir``) and ``$PALGYM_BENCH_CACHE`` (the folder of a
suite's generated files, ``--cache``): a flag given on the command line wins; otherwise the
variable's value, when it is set and not empty; otherwise None. ``python -m palgym.bench``,
``python -m agents.rule_selector_cli`` and the run configurations (``agents/data_dir.py``) all
call :func:`from_environment`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from palgym.bench.suite_schema import DATA_DIR_VARIABLE

if TYPE_CHECKING:
    from palgym.bench.suites import DataRoots

CACHE_VARIABLE = "PALGYM_BENCH_CACHE"
"""The environment variable giving the default ``--cache`` folder."""


def from_environment(flag: str | Path | None, variable: str) -> str | None:
    """``flag`` when given (not None, not empty), else ``$variable`` when set and not empty,
    else None."""
    if flag is not None and str(flag) != "":
        return str(flag)
    return os.environ.get(variable) or None


def data_roots(data_dir: str | Path | None, cache: str | Path | None) -> DataRoots:
    """The :class:`palgym.bench.suites.DataRoots` of ``--data-dir`` and ``--cache``, each
    defaulting to its variable (:func:`from_environment`)."""
    from palgym.bench.suites import DataRoots

    data = from_environment(data_dir, DATA_DIR_VARIABLE)
    folder = from_environment(cache, CACHE_VARIABLE)
    return DataRoots(None if data is None else Path(data),
                     None if folder is None else Path(folder))


__all__ = ["CACHE_VARIABLE", "DATA_DIR_VARIABLE", "data_roots", "from_environment"]
