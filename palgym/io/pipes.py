"""Standard output of the command-line entry points (``evaluate.py``, ``train.py``,
``python -m traces``, ``python -m palgym.tracesets``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run_cli(main: Callable[[], int]) -> int:
    """Run ``main`` and return its exit code; a closed stdout ends it quietly.

    When the reader of stdout goes away (e.g. ``python -m traces describe FILE | head``),
    writing or flushing stdout raises :class:`BrokenPipeError`. That is not an error of the
    command: stdout is pointed at the null device (so that the interpreter's final flush cannot
    fail again) and the exit code is 0, without a traceback. Source: the Python documentation,
    "Note on SIGPIPE" (``signal`` module).

    Args:
        main: the entry point (no arguments; parses ``sys.argv`` itself).

    Returns:
        ``main``'s exit code, or 0 after a closed pipe.
    """
    try:
        try:
            return main()
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
