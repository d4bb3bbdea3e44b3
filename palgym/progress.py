"""Progress: one long episode (simulated time, measured jobs completed of the total, rounds per
second) and a sweep (episodes done of the total).

On a terminal both are tqdm bars, and degrade to no bar when tqdm is missing, so ``palgym``
stays importable without it. Off a terminal (a log file, nohup, CI, a notebook's pipe) a
sweep writes one plain line with its ETA every :data:`LINE_INTERVAL_S` seconds
(:class:`LineProgress`; a background thread keeps the lines coming while one long episode
runs), and an episode draws nothing. ``--quiet`` (``enabled=False``) silences both. An
episode bar appears only once its episode has run for :data:`EPISODE_BAR_DELAY_S` (the
paper's 20-40 ms episodes never show one) and redraws at most every
:data:`REDRAW_INTERVAL_S`; :func:`palgym.simulate.drive` calls it every
:data:`PROGRESS_EVERY_ROUNDS` rounds (the round index it returns), so an episode without a bar
pays one clock read per that many rounds, and a disabled bar is never called again.
"""

from __future__ import annotations

import sys
import threading
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
LINE_INTERVAL_S = 15.0
"""Wall seconds between two lines of a :class:`LineProgress` (off a terminal)."""
HEARTBEAT_S = 1.0
"""Wall seconds between two looks of a :class:`LineProgress`'s thread at its clock."""

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


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min`` (rounded down to the unit shown)."""
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def progress_line(desc: str, done: int, total: int, elapsed_s: float) -> str:
    """``episodes: 12/40 (30%), 45 s elapsed, ETA 1 min 45 s``: the ETA is the elapsed time
    per unit done times the units left (``ETA unknown`` before the first)."""
    percent = f" ({100 * done // total}%)" if total > 0 else ""
    eta = ("ETA unknown (none done yet)" if done <= 0
           else f"ETA {duration_text(elapsed_s / done * max(total - done, 0))}")
    return f"{desc}: {done}/{total}{percent}, {duration_text(elapsed_s)} elapsed, {eta}"


class LineProgress:
    """Units done of a total, written to ``stream`` as one plain line (:func:`progress_line`)
    every ``interval_s`` wall seconds, for a stream that is no terminal.

    A line is due at each ``interval_s`` from the start; :meth:`update` and :meth:`tick`
    write it when it is due. With ``heartbeat`` a daemon thread calls :meth:`tick` every
    :data:`HEARTBEAT_S`, so lines keep coming while one unit runs for minutes. :meth:`close`
    stops the thread and writes a last line (``done``) if any line was written.

    Args:
        total: units in the run (>= 0).
        stream: where the lines go.
        desc: the lines' label.
        interval_s: wall seconds between two lines (> 0).
        clock: monotonic wall clock in seconds (for tests).
        heartbeat: start the thread (tests call :meth:`tick` themselves).
    """

    def __init__(self, total: int, stream: IO[str], desc: str = "episodes",
                 interval_s: float = LINE_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic, heartbeat: bool = True) -> None:
        self.total, self.done, self.lines = int(total), 0, 0
        self._stream, self._desc, self._interval_s, self._clock = stream, desc, interval_s, clock
        self._start_s = clock()
        self._next_s = self._start_s + interval_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if heartbeat:
            self._thread = threading.Thread(target=self._beat, name="palgym-progress",
                                            daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.tick()

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text + "\n")
            self._stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: stop writing
            self._stop.set()
        self.lines += 1

    def tick(self) -> bool:
        """Write the line if it is due (True if written)."""
        with self._lock:
            now = self._clock()
            if now < self._next_s or self._stop.is_set():
                return False
            self._next_s = now + self._interval_s
            self._write(progress_line(self._desc, self.done, self.total, now - self._start_s))
            return True

    def update(self, count: int = 1) -> None:
        """Count ``count`` more units done (and write the line if it is due)."""
        with self._lock:
            self.done += count
        self.tick()

    def close(self) -> None:
        """Stop the thread; write the last line if any was written (idempotent)."""
        if self._stop.is_set() and self._thread is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self.lines:
                elapsed = self._clock() - self._start_s
                self._write(f"{self._desc}: {self.done}/{self.total} done in "
                            f"{duration_text(elapsed)}")


class SweepProgress:
    """Episodes done of a sweep's total on ``stream``: a tqdm bar if it is a TTY, else a
    :class:`LineProgress` (a line with the ETA every ``interval_s``).

    Args:
        total: episodes in the sweep (>= 0).
        enabled: False for no output whatever the stream (e.g. ``--quiet``).
        stream: where the bar or lines go (default: ``sys.stderr``).
        desc: the bar's label.
        interval_s: wall seconds between two lines off a terminal.
    """

    def __init__(self, total: int, enabled: bool = True, stream: IO[str] | None = None,
                 desc: str = "episodes", interval_s: float = LINE_INTERVAL_S) -> None:
        stream = sys.stderr if stream is None else stream
        self._bar: Any = None
        if enabled and is_terminal(stream):
            self._bar = _tqdm(total=total, file=stream, unit="episode", desc=desc,
                              leave=False, position=0, dynamic_ncols=True)
        elif enabled:
            self._bar = LineProgress(total, stream, desc, interval_s)

    def update(self, count: int = 1) -> None:
        """Count ``count`` more episodes done."""
        if self._bar is not None:
            self._bar.update(count)

    def close(self) -> None:
        """Remove the bar, or stop the lines (idempotent)."""
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
