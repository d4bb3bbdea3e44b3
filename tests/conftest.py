"""Shared fixtures of the test suite.

- ``write_sia_csv``: writes a small Sia / PAL trace CSV (``job_id,num_gpus,submit_time,duration,
  model``) into ``tmp_path`` and returns its path.
- ``data_dir``: the optional public data folder named by ``PALGYM_DATA_DIR`` (holding
  ``traces/sia_philly_pal/`` and ``variability/longhorn_pal/``, see README.md); tests using it
  skip when it is unset.
- every test starts as a fresh process for the "unknown model" warning, which
  :func:`palgym.sim.workload.perf_class_of_model` logs once per model name per process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

SIA_HEADER = "job_id,num_gpus,submit_time,duration,model"

WriteSiaCsv = Callable[..., Path]


@pytest.fixture
def write_sia_csv(tmp_path: Path) -> WriteSiaCsv:
    """Factory writing a Sia trace CSV into ``tmp_path``.

    Call as ``write_sia_csv(rows, name="trace.csv", header=SIA_HEADER)`` where ``rows`` is a
    sequence of row tuples (joined with commas) or of raw line strings (written as is). The
    header is line 1, so row ``i`` (0-based) is on line ``i + 2``.
    """

    def write(
        rows: Sequence[Sequence[object] | str],
        name: str = "trace.csv",
        header: str | None = SIA_HEADER,
    ) -> Path:
        lines = [] if header is None else [header]
        for row in rows:
            lines.append(row if isinstance(row, str) else ",".join(str(cell) for cell in row))
        path = tmp_path / name
        path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
        return path

    return write


@pytest.fixture(autouse=True)
def _forget_warned_unknown_models() -> None:
    """Each test sees the first "unknown model" warning of every model name again."""
    from palgym.sim import workload

    workload._WARNED_UNKNOWN_MODELS.clear()


@pytest.fixture
def data_dir() -> Path:
    """The public data folder named by ``PALGYM_DATA_DIR`` (skip the test when unset)."""
    value = os.environ.get("PALGYM_DATA_DIR")
    if not value:
        pytest.skip(
            "PALGYM_DATA_DIR is not set: point it at the public data folder (with "
            "traces/sia_philly_pal/ and variability/longhorn_pal/, see README.md) to run this test"
        )
    path = Path(value)
    if not path.is_dir():
        pytest.skip(f"PALGYM_DATA_DIR={value!r} is not a folder")
    return path
