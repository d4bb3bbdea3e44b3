"""The evaluation's defaults, defined once (the command line, the requests and the reports read
them from here).

The baseline is the heuristic table's (:data:`palgym.report.DEFAULT_BASELINE`, the truly sticky
packed policy of PAL_MODEL section 7), re-exported so that both paths share one definition;
so are the bootstrap defaults, the benchmark's (:mod:`palgym.bench.bootstrap`).
"""

from __future__ import annotations

from palgym.bench.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from palgym.report import DEFAULT_BASELINE
from palgym.tracesets import BUNDLED_SET

DEFAULT_ENV_ID = "palgym/PALPlacement-v0"
"""Env of a side-by-side comparison without ``--env`` and without a learned agent's record."""
BEST_HEURISTIC_ENV_ID = "palgym/PALScheduling-v0"
"""Env whose episodes ``--best-heuristic`` draws (the scheduling env: the queue order matters)."""
DEFAULT_REFERENCE = "pal"
"""The second policy every contender is paired with (``--reference``)."""
DEFAULT_QUEUE_ORDER = "fifo"
"""Queue order of the heuristic table without ``--queue-order``."""
DEFAULT_PRESET = "default"
"""Simulator preset of the heuristic table without ``--preset``."""
DEFAULT_DURATION_KNOWLEDGE = "clairvoyant"
"""What the queue orders know of durations without ``--duration-knowledge``."""
DEFAULT_BELIEF = "oracle"
"""What PAL and PM-First read without ``--belief`` (the truth)."""
DEFAULT_TRACE_SET = BUNDLED_SET
"""Trace set of a comparison without ``--trace`` or ``--trace-set``."""
DEFAULT_SPLIT = "test"
"""Split a comparison (and ``--best-heuristic``) is measured on."""
DEFAULT_SELECTION_SPLIT = "validation"
"""Split ``--best-heuristic`` chooses on."""
SPLIT_NAMES: tuple[str, ...] = ("train", "validation", "test")
"""The splits of a trace set."""
DEFAULT_BOOTSTRAP_SEED = DEFAULT_SEED
"""Seed of the bootstrap's generator (the benchmark's, 0)."""
BOOTSTRAP_UNITS: tuple[str, ...] = ("episode", "trace")
"""What the bootstrap resamples (the first is the default)."""
HEURISTICS_VIA: tuple[str, ...] = ("simulator", "env")
"""How heuristic contenders run (the first is the default): on the simulator on the env's
episodes (identical by parity, many times faster), or stepping the env as agents."""
DEFAULT_DEVICE = "cpu"
"""Torch device of learned agents."""

__all__ = [
    "BEST_HEURISTIC_ENV_ID", "BOOTSTRAP_UNITS", "DEFAULT_BASELINE", "DEFAULT_BELIEF",
    "DEFAULT_BOOTSTRAP_SEED", "DEFAULT_CONFIDENCE", "DEFAULT_DEVICE",
    "DEFAULT_DURATION_KNOWLEDGE", "DEFAULT_ENV_ID", "DEFAULT_PRESET", "DEFAULT_QUEUE_ORDER",
    "DEFAULT_REFERENCE", "DEFAULT_RESAMPLES", "DEFAULT_SELECTION_SPLIT", "DEFAULT_SPLIT",
    "DEFAULT_TRACE_SET", "HEURISTICS_VIA", "SPLIT_NAMES",
]
