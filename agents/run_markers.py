"""Markers that tell a later reader whether a training run folder is complete.

- ``RUNNING``: written when the folder is claimed (and when a resume starts), removed when the
  run ends, however it ends, short of ``kill -9``, which no process can catch: a folder that
  still holds ``RUNNING`` when no training runs in it was killed (or its machine stopped), and
  its files are those of an unfinished run.
- ``INTERRUPTED``: Ctrl-C or SIGTERM stopped the run. Inside the training loop the model is
  still saved (``model.zip`` holds the steps run, which the marker gives); outside it no
  ``model.zip`` is written. A later successful resume of the folder removes it.
- ``FAILED``: an error stopped the run (:func:`agents.sb3.runs.recording_failure`).

:func:`folder_state` reads them; :func:`check_run_folder` (used by the model loaders,
``evaluate.py --agent`` and ``bench run`` among them) refuses a folder without ``model.zip``
naming the marker, and warns when the ``model.zip`` there comes from an incomplete run.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from palgym.errors import ConfigError
from palgym.io import atomic_write_text

logger = logging.getLogger(__name__)

RUNNING_FILE = "RUNNING"
INTERRUPTED_FILE = "INTERRUPTED"
FAILED_FILE = "FAILED"
MARKERS: tuple[str, ...] = (RUNNING_FILE, INTERRUPTED_FILE, FAILED_FILE)
"""The markers, in the order :func:`folder_state` reports them."""


def mark(run_dir: Path, marker: str, text: str) -> None:
    """Write ``run_dir/marker`` atomically (a warning, not an error, if it cannot be)."""
    try:
        atomic_write_text(run_dir / marker, text.rstrip("\n") + "\n")
    except OSError as exc:
        logger.warning("could not write %s: %s", run_dir / marker, exc)


def folder_state(run_dir: Path) -> list[str]:
    """The markers present in ``run_dir`` (an empty list: a complete run)."""
    return [m for m in MARKERS if (run_dir / m).is_file()]


def check_run_folder(run_dir: Path, model: Path) -> None:
    """Refuse or warn about an incomplete run folder before its model is loaded.

    Raises:
        ConfigError: when ``model`` does not exist and the folder is marked (naming the
            marker and its first line).
    """
    state = folder_state(run_dir)
    if not state:
        return
    marker = state[0]
    first = ((run_dir / marker).read_text(encoding="utf-8", errors="replace").splitlines()
             or [""])[0]
    why = {RUNNING_FILE: "the run is still running or was killed before it finished",
           INTERRUPTED_FILE: "the run was interrupted", FAILED_FILE: "the run failed"}[marker]
    if not model.is_file():
        raise ConfigError(f"{run_dir}: incomplete run folder, no {model.name}: {why} "
                          f"({marker}: {first})")
    logger.warning("%s: %s holds %s: %s (%s); its %s may not be the run's final model",
                   run_dir, run_dir.name, marker, why, first, model.name)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt as Ctrl-C does, so that the run
    saves what it can and marks its folder (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = ["FAILED_FILE", "INTERRUPTED_FILE", "MARKERS", "RUNNING_FILE", "check_run_folder",
           "folder_state", "mark", "sigterm_as_interrupt"]
