"""palgym-bench's command line and the body of its ``run`` and ``prepare``
(``python -m palgym.bench``, ``palgym bench``; docs/BENCH.md).

- :mod:`~agents.bench.cli`: the parser and the commands ``list``, ``prepare``, ``run``,
  ``validate``, ``leaderboard``;
- :mod:`~agents.bench.runner`: one entry (a heuristic, a ``MODULE:CLASS``, a planner, a model,
  ``pretrained:NAME``, ``selector:PATH``, ``best``, ``field``) turned into the contenders of
  :mod:`agents.evaluation` on each split and run on the suite's identical episodes; its
  results file written with :mod:`palgym.bench.results`. ``prepare`` writes a suite's
  generated files with :mod:`traces`;
- :mod:`~agents.bench.contenders`: a unit's contenders and the env kwargs each member adds.

The suites, the results files, their replay and the leaderboard stay in :mod:`palgym.bench`:
they need neither ``agents`` nor ``traces``.
"""

from __future__ import annotations

from agents.lazy import lazy_exports

_LAZY = {
    ".cli": ("main",),
    ".contenders": ("build_contenders",),
    ".runner": ("RunRequest", "run_entry", "prepare"),
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
