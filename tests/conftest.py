"""Shared fixtures of the test suite.

- ``write_sia_csv``: writes a small Sia / PAL trace CSV (``job_id,num_gpus,submit_time,duration,
  model``) into ``tmp_path`` and returns its path.
- ``data_dir``: the optional public data folder named by ``PALGYM_DATA_DIR`` (holding the files
  of :data:`REQUIRED_DATA_FILES`, see docs/REPRODUCING.md); tests using it skip when the
  variable is unset.
  When it is set, the folder must hold every required file: otherwise the whole run stops at
  start-up with an error naming the folder and the missing files (a CI that was promised the data
  must not pass by skipping). A relative value is resolved once, against the folder pytest was
  started from, and written back to ``os.environ`` as an absolute path, so subprocesses started
  from other folders see the same data.
- every test starts and ends with the policy registry holding palgym's own policies only
  (``_registry_as_at_start``), whatever classes a test registers;
- every test starts as a fresh process for the "unknown model" warning, which
  :func:`palgym.sim.workload.perf_class_of_model` logs once per model name per process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from palgym.policies.registry import REGISTRY

_REGISTRY_AT_START = REGISTRY.snapshot()  # palgym's own policies (palgym.policies.catalog)

SIA_HEADER = "job_id,num_gpus,submit_time,duration,model"
DATA_DIR_VARIABLE = "PALGYM_DATA_DIR"
REQUIRED_DATA_FILES: tuple[str, ...] = (
    *(f"traces/sia_philly_pal/workload-{i}.csv" for i in range(1, 6)),
    *(f"variability/longhorn_pal/{name}-longhorn-agg.csv" for name in ("resnet", "bert",
                                                                       "pagerank")),
    "traces/philly_sia_artifact/philly.csv",
    "traces/pal_testbed/sia-160job-trace.csv",
    "traces/pal_testbed/sia-160job-reduced.csv",
    "traces/shockwave_synthetic_pal/poisson_trace_50+1.0.csv",
)
"""Files (relative to ``PALGYM_DATA_DIR``) that the real-data tests read."""

WriteSiaCsv = Callable[..., Path]


class DataDirError(Exception):
    """``PALGYM_DATA_DIR`` is set but does not name a complete public data folder."""


def resolve_data_dir(value: str | None, cwd: Path) -> Path | None:
    """The public data folder named by ``value`` (a ``PALGYM_DATA_DIR`` value), made absolute.

    Args:
        value: the variable's value; None or "" means unset.
        cwd: the folder a relative ``value`` is relative to.

    Returns:
        The absolute folder, or None when ``value`` is unset.

    Raises:
        DataDirError: naming the folder and every missing file, when the folder is missing or
            lacks a file of :data:`REQUIRED_DATA_FILES`.
    """
    if not value:
        return None
    path = Path(value)
    folder = (path if path.is_absolute() else cwd / path).resolve()
    if not folder.is_dir():
        raise DataDirError(f"{DATA_DIR_VARIABLE}={value!r}: folder {folder} does not exist")
    missing = [name for name in REQUIRED_DATA_FILES if not (folder / name).is_file()]
    if missing:
        raise DataDirError(
            f"{DATA_DIR_VARIABLE}={value!r}: folder {folder} lacks {len(missing)} of the "
            f"{len(REQUIRED_DATA_FILES)} required files: {', '.join(missing)}"
        )
    return folder


def pytest_configure(config: pytest.Config) -> None:
    """Resolve ``PALGYM_DATA_DIR`` once (absolute, checked) before any test module loads."""
    try:
        folder = resolve_data_dir(os.environ.get(DATA_DIR_VARIABLE), Path.cwd())
    except DataDirError as error:
        raise pytest.UsageError(
            f"{error}. Unset {DATA_DIR_VARIABLE} to skip the real-data tests, or point it at "
            "the public data folder (see docs/REPRODUCING.md)."
        ) from None
    if folder is not None:
        os.environ[DATA_DIR_VARIABLE] = str(folder)


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


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The public data folder named by ``PALGYM_DATA_DIR``, absolute and complete (checked at
    start-up, see :func:`pytest_configure`); skips the test when the variable is unset."""
    value = os.environ.get(DATA_DIR_VARIABLE)
    if not value:
        pytest.skip(
            f"{DATA_DIR_VARIABLE} is not set: point it at the public data folder (with "
            "traces/sia_philly_pal/ and variability/longhorn_pal/, see docs/REPRODUCING.md) to run "
            "this test"
        )
    path = Path(value)
    assert path.is_absolute() and path.is_dir(), value  # resolved by pytest_configure
    return path


@pytest.fixture(autouse=True)
def _registry_as_at_start() -> Iterator[None]:
    """Every test starts and ends with the policy registry as palgym registers it: a test
    that registers a user's class (palgym.register_placement, MODULE:CLASS) leaves no trace."""
    yield
    REGISTRY.restore(_REGISTRY_AT_START)
