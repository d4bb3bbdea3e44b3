"""The learned rule selector as a palgym-bench entry (``--agent selector:PATH`` or
``selector:pretrained:NAME``): the file a spec names, loaded as a
:class:`agents.selection.selector.LinearSelector`; :mod:`palgym.bench.selector_entry` runs it and
writes the rows (docs/BENCH.md, "A rule selector").
"""

from __future__ import annotations

import time
from pathlib import Path

from agents.selection.selector import LinearSelector
from agents.selection.value_entry import ValueSearch, is_value_search, value_search_from_dict
from palgym.bench.entries import Plan
from palgym.bench.selector_entry import LoadedSelector, run_selector_entry, selector_path
from palgym.bench.suites import file_sha256
from palgym.errors import ConfigError
from palgym.policies.contender_spec import ContenderSpec

PRETRAINED_SELECTORS = Path(__file__).resolve().parents[1] / "pretrained" / "rule-selector"
"""Where ``selector:pretrained:NAME`` finds ``NAME.json``."""


def load_selector(spec: ContenderSpec | str) -> LoadedSelector:
    """The selector a ``selector:`` spec names (:func:`palgym.bench.selector_entry.selector_path`):
    a rule selector (:meth:`LinearSelector.load`) or, for a file of format
    ``palgym-value-search/1``, a learned value plus a cut search
    (:func:`agents.selection.value_entry.load_value_search`).

    Raises:
        ConfigError: naming the spec or the file, for a missing file, a pretrained NAME that
            is a path, or a file that is not a selector.
    """
    from palgym.io.selector_json import read_selector_file, selector_document

    path = selector_path(spec, PRETRAINED_SELECTORS)
    try:
        data = read_selector_file(path)
    except OSError as error:
        raise ConfigError(f"{path}: not a readable JSON selector ({error})") from None
    selector: LinearSelector | ValueSearch
    if is_value_search(data):
        selector = value_search_from_dict(data, str(path))
    else:
        selector = LinearSelector.from_dict(selector_document(data, path), str(path))
    return LoadedSelector(path, file_sha256(path), selector.rules, selector)


def run_entry(plan: Plan, started: float | None = None) -> tuple[Path, int, float]:
    """Load the plan's selector and run it (:func:`palgym.bench.selector_entry.
    run_selector_entry`; ``started``: the run's ``time.perf_counter()``, default now), as
    ``python -m palgym.bench run`` does (:func:`agents.bench.runner.run_entry`)."""
    begin = time.perf_counter() if started is None else started
    return run_selector_entry(plan, load_selector(plan.spec or plan.request.agent), begin)
