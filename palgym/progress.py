"""Progress bars on a terminal: one long episode (simulated time, measured jobs completed of
the total, rounds per second) and a sweep (episodes done of the total).

Both are quiet unless their stream is a TTY (CI logs and pipes get no stray output) and
degrade to no bar when tqdm is missing, so ``palgym`` stays importable without it. An
episode bar appears only once its episode has run for :data:`EPISODE_BAR_DELAY_S` (the
paper's 20-40 ms episodes never show one) and redraws at most every
:data:`REDRAW_INTERVAL_S`; :func:`palgym.simulate.drive` calls it every
:data:`PROGRESS_EVERY_ROUNDS` rounds (the round index it returns), so an episode without a bar
pays one clock read per that many rounds, and a disabled bar is never called again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from palgym.sim.engine import Simulator
from palgym.sim.types import JobStatus

EPISODE_BAR_DELAY_S = 1.0
"""Wall seconds an episode runs before its bar appears."""
REDRAW_INTERVAL_S = 0.5
"""Least wall seconds between two redraws of an episode bar."""
PROGRESS_EVERY_ROUNDS = 8
"""Rounds between two calls of an :class:`EpisodeProgress` by :func:`palgym.simulate.drive`."""
EPISODE_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} jobs{postfix}"
"""Completed of measured jobs, then the postfix (tqdm's own rate and ETA would count jobs
from the bar's late start)."""
NEVER = 2**62
"""The round index a disabled bar asks to be called at next (never)."""
SECONDS_PER_HOUR = 3600.0

_COMPLETED = np.int8(JobStatus.COMPLETED)


def is_terminal(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (default: ``sys.stderr``) is a TTY (False if it cannot tell)."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _tqdm(**kwargs: Any) -> Any:
    """A tqdm bar, or None when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(**kwargs)


class SweepProgress:
    """Episodes done of a sweep's total, on ``stream`` if it is a TTY (else nothing).

    Args:
        total: episodes in the sweep (>= 0).
        enabled: False for no bar whatever the stream (e.g. ``--quiet``).
        stream: where the bar is drawn (default: ``sys.stderr``).
        desc: the bar's label.
    """

    def __init__(self, total: int, enabled: bool = True, stream: IO[str] | None = None,
                 desc: str = "episodes") -> None:
        stream = sys.stderr if stream is None else stream
        self._bar = (_tqdm(total=total, file=stream, unit="episode", desc=desc, leave=False,
                           position=0, dynamic_ncols=True)
                     if enabled and is_terminal(stream) else None)

    def update(self, count: int = 1) -> None:
        """Count ``count`` more episodes done."""
        if self._bar is not None:
            self._bar.update(count)

    def close(self) -> None:
        """Remove the bar (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class EpisodeProgress:
    """The bar of one episode: measured jobs completed of the total, with the simulated time
    (h) and rounds per second (wall) as its postfix.

    Call it with the engine (:func:`palgym.simulate.drive` does, every few rounds); it draws
    nothing before :data:`EPISODE_BAR_DELAY_S` and redraws at most every
    :data:`REDRAW_INTERVAL_S`. Close it when the episode ends.

    Args:
        label: the bar's label (e.g. ``trace fifo pal``).
        enabled: False for no bar whatever the stream.
        stream: where the bar is drawn (default: ``sys.stderr``); no bar unless a TTY.
        clock: monotonic wall clock in seconds (for tests).
        delay_s: wall seconds before the bar appears (>= 0).
    """

    def __init__(self, label: str, enabled: bool = True, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 delay_s: float = EPISODE_BAR_DELAY_S) -> None:
        self.label = label
        self._stream = sys.stderr if stream is None else stream
        self.enabled = enabled and is_terminal(self._stream)
        self._clock = clock
        self._start_s = clock()
        self._next_s = self._start_s + delay_s
        self._bar: Any = None

    def __call__(self, sim: Simulator) -> int:
        """Redraw from ``sim`` if it is time to (cheap otherwise: one clock read).

        Returns:
            The round index to be called at next (:data:`NEVER` when disabled).
        """
        if not self.enabled:
            return NEVER
        now = self._clock()
        if now >= self._next_s:
            self._next_s = now + REDRAW_INTERVAL_S
            self._draw(sim, now)
        return sim.round_index + PROGRESS_EVERY_ROUNDS if self.enabled else NEVER

    def _draw(self, sim: Simulator, now: float) -> None:
        measured = sim.jobs.num_measured
        if self._bar is None:
            self._bar = _tqdm(total=measured, file=self._stream, desc=self.label,
                              leave=False, position=1, dynamic_ncols=True,
                              bar_format=EPISODE_BAR_FORMAT)
            if self._bar is None:  # no tqdm: stay quiet
                self.enabled = False
                return
        done = int(np.count_nonzero(sim.jobs.status[:measured] == _COMPLETED))
        rate = sim.round_index / max(now - self._start_s, 1e-9)
        self._bar.n = done
        self._bar.set_postfix_str(
            f"t={sim.now_s / SECONDS_PER_HOUR:.1f} h, round {sim.round_index}, "
            f"{rate:.0f} rounds/s, {now - self._start_s:.0f} s", refresh=False)
        self._bar.refresh()

    @property
    def shown(self) -> bool:
        """Whether the bar has been drawn."""
        return self._bar is not None

    def close(self) -> None:
        """Remove the bar (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
