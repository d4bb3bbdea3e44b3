"""Evaluation in one place: contenders on identical episodes -> one comparison -> one report.

- :mod:`agents.evaluation.defaults`: every default of an evaluation, defined once;
- :mod:`agents.evaluation.traces`: the one trace resolver (paths of any format, bundled names,
  ``bundled``, ``SET:SPLIT``) of ``evaluate.py`` and ``train.py``;
- :mod:`agents.evaluation.names`: the one parser of heuristic names
  ``[ORDER/]PLACEMENT[+SUFFIX]`` (and ``best``);
- :mod:`agents.evaluation.contenders`: :class:`Contender`, one abstraction for heuristics (also
  ``ORDER/PLACEMENT`` combinations), learned models and planners;
- :mod:`agents.evaluation.comparison`: :func:`run_contenders` on identical episodes (checked by
  hash), :class:`SideBySide` / :func:`run_side_by_side`, and :func:`heuristic_table`, the
  comparison with no learned contender (one episode per trace at the episode seed, no env);
  :mod:`agents.evaluation.direct`, the heuristics' one simulator path, run through a
  :data:`palgym.sweep.Runner` (:mod:`agents.evaluation.parallel`: ``--workers`` / ``--ray``);
- :mod:`agents.evaluation.summary`: :class:`Comparison`, paired ratios with bootstrap intervals
  (:mod:`palgym.bench.stats`); :mod:`agents.evaluation.best`: the best heuristic chosen on
  one split and measured on another (:mod:`agents.evaluation.best_output`: its text, CSV and
  JSON; :mod:`agents.evaluation.best_contender`: ``best`` as a side-by-side contender);
- :mod:`agents.evaluation.report`: the one report path (text, CSV, JSON) of every result, the
  heuristic table's :class:`palgym.report.Evaluation` included; :mod:`agents.evaluation.plots`:
  the one :func:`write_plots`;
- :mod:`agents.evaluation.args`, :mod:`agents.evaluation.cli`: ``evaluate.py``'s parser and
  logic (``evaluate.py`` itself is a shim); :mod:`agents.evaluation.enjoy`: an agent replayed
  with rendering (``--render``); :mod:`agents.evaluation.belief_pairs`: contenders deciding on
  other beliefs, paired on the same episodes.

Names load on first use (PEP 562): the heuristic table needs neither gymnasium's env nor the
``train`` extra.
"""

from __future__ import annotations

from agents.lazy import lazy_exports

_LAZY = {
    ".contenders": (
        "Contender", "heuristic_contender", "learned_contender", "planner_contender",
        "learning_curve_files",
    ),
    ".comparison": (
        "run_contenders", "check_identical_episodes", "SideBySide", "heuristic_table",
        "run_side_by_side",
    ),
    ".summary": ("Comparison", "summarise"),
    "palgym.bench.stats": ("bootstrap_geomean", "paired_ratios"),
    ".best": ("BestHeuristic", "run_best"),
    ".report": ("Outputs", "format_result", "write_result"),
    ".plots": ("write_plots",),
    ".traces": ("resolve_traces",),
    ".parallel": ("make_runner",),
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
