"""The learned rule selector as a palgym-bench entry (``--agent selector:PATH`` or
``selector:pretrained:NAME``): the file a spec names, loaded as a
:class:`agents.selection.selector.LinearSelector`; :mod:`palgym.bench.selector_entry` runs it and
writes the rows (docs/BENCH.md, "A rule selector").
"""

from __future__ import annotations

import time
from pathlib import Path

from agents.selection.selector import LinearSelector
from palgym.bench.entries import Plan
from palgym.bench.selector_entry import LoadedSelector, run_selector_entry, selector_path
from palgym.bench.suites import file_sha256
from palgym.policies.contender_spec import ContenderSpec

PRETRAINED_SELECTORS = Path(__file__).resolve().parents[1] / "pretrained" / "rule-selector"
"""Where ``selector:pretrained:NAME`` finds ``NAME.json``."""


def load_selector(spec: ContenderSpec | str) -> LoadedSelector:
    """The selector a ``selector:`` spec names (:func:`palgym.bench.selector_entry.selector_path`,
    :meth:`LinearSelector.load`).

    Raises:
        ConfigError: naming the spec or the file, for a missing file, a pretrained NAME that
            is a path, or a file that is not a selector.
    """
    path = selector_path(spec, PRETRAINED_SELECTORS)
    selector = LinearSelector.load(path)
    return LoadedSelector(path, file_sha256(path), selector.rules, selector)


def run_entry(plan: Plan, started: float | None = None) -> tuple[Path, int, float]:
    """Load the plan's selector and run it (:func:`palgym.bench.selector_entry.
    run_selector_entry`; ``started``: the run's ``time.perf_counter()``, default now), as
    ``python -m palgym.bench run`` does (:func:`agents.bench.runner.run_entry`)."""
    begin = time.perf_counter() if started is None else started
    return run_selector_entry(plan, load_selector(plan.spec or plan.request.agent), begin)
