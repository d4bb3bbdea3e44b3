"""The learned rule selector: which rule (queue order / placement) to run, decided on the
engine's rule-selection state (:mod:`palgym.rule_selection`).

- :mod:`~agents.selection.selector`: :class:`LinearSelector` (a linear policy over the
  selection state, file format ``palgym-rule-selector/2``) and :func:`train_cem` (the
  cross-entropy method on whole training traces);
- :mod:`~agents.selection.runs`: episodes, cached rule runs and the objective of training;
- :mod:`~agents.selection.search`: :class:`RolloutSearch`, a selector that simulates every rule
  ahead on copies of the engine (:mod:`~agents.selection.engine_copies`) and picks the
  cheapest; :mod:`~agents.selection.distill`: that search distilled into a linear selector;
- :mod:`~agents.selection.report`: the evaluation's table and results JSON;
- :mod:`~agents.selection.entry`: a selector file as a palgym-bench entry
  (``selector:PATH``, ``selector:pretrained:NAME``);
- :mod:`~agents.selection.cli`: ``python -m agents.selection train|evaluate|distill|floor``.

Names load on first use.
"""

from __future__ import annotations

from agents.lazy import lazy_exports

_LAZY = {
    ".selector": ("LinearSelector", "StarvationFloor", "train_cem", "log_ratio"),
    ".runs": ("LabelledEpisode", "split_episodes", "run_many"),
    ".search": ("RolloutSearch", "run_search_episode"),
    ".engine_copies": ("copy_engine",),
    ".distill": ("distill",),
    ".entry": ("load_selector", "run_entry"),
    ".cli": ("main",),
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
