"""Progress off a terminal: a plain line with the ETA at a steady interval (a fake clock, no
timing), nothing with ``enabled=False``, and a thread that keeps the lines coming while no
unit completes."""

from __future__ import annotations

import io
import threading

import pytest

from palgym import progress
from palgym.progress import LineProgress, SweepProgress, duration_text, progress_line


def test_durations_and_the_eta_by_hand() -> None:
    assert [duration_text(s) for s in (0, 42.9, 60, 185, 3600, 7659)] == [
        "0 s", "42 s", "1 min 00 s", "3 min 05 s", "1 h 00 min", "2 h 07 min"]
    # 12 of 40 done in 45 s: 3.75 s each, 28 left -> 105 s
    assert progress_line("episodes", 12, 40, 45.0) == (
        "episodes: 12/40 (30%), 45 s elapsed, ETA 1 min 45 s")
    assert progress_line("episodes", 0, 40, 20.0) == (
        "episodes: 0/40 (0%), 20 s elapsed, ETA unknown (none done yet)")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_interval_then_a_last_one() -> None:
    clock, stream = Clock(), io.StringIO()
    bar = LineProgress(10, stream, "episodes", interval_s=15.0, clock=clock, heartbeat=False)
    clock.now = 105.0
    bar.update(1)  # 5 s in: not due
    assert stream.getvalue() == ""
    clock.now = 115.0
    bar.update(1)  # 15 s: due
    clock.now = 120.0
    assert not bar.tick()  # next due at 130
    clock.now = 130.0
    assert bar.tick()
    clock.now = 131.0
    bar.update(3)
    bar.close()
    bar.close()  # idempotent
    assert stream.getvalue().splitlines() == [
        "episodes: 2/10 (20%), 15 s elapsed, ETA 1 min 00 s",
        "episodes: 2/10 (20%), 30 s elapsed, ETA 2 min 00 s",
        "episodes: 5/10 done in 31 s"]


def test_a_short_run_writes_nothing() -> None:
    clock, stream = Clock(), io.StringIO()
    bar = LineProgress(3, stream, interval_s=15.0, clock=clock, heartbeat=False)
    clock.now = 110.0
    bar.update(3)
    bar.close()
    assert stream.getvalue() == ""


def test_sweep_progress_off_a_terminal_writes_lines_unless_disabled() -> None:
    lines, quiet = io.StringIO(), io.StringIO()
    for stream, enabled in ((lines, True), (quiet, False)):
        bar = SweepProgress(4, enabled=enabled, stream=stream, interval_s=0.0)
        bar.update(1)
        bar.update(1)
        bar.close()
    text = lines.getvalue().splitlines()
    assert text[0].startswith("episodes: 1/4 (25%), ") and text[1].startswith("episodes: 2/4")
    assert text[-1].startswith("episodes: 2/4 done in")
    assert quiet.getvalue() == ""


def test_the_thread_writes_while_no_unit_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    # the clock jumps 20 s per read: every look of the thread finds a line due
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.001)
    ticks = iter(range(10**6))
    written = threading.Event()

    class Stream(io.StringIO):
        def write(self, text: str) -> int:
            if "elapsed" in text:
                written.set()
            return super().write(text)

    stream = Stream()
    bar = LineProgress(5, stream, interval_s=15.0, clock=lambda: 20.0 * next(ticks))
    assert written.wait(timeout=60), "no line from the thread"
    bar.close()
    first = stream.getvalue().splitlines()[0]
    assert first.startswith("episodes: 0/5 (0%), ") and first.endswith(
        "ETA unknown (none done yet)")
