"""A learned value plus a cut search as one saved selector: :class:`ValueSearch` (a
:class:`agents.selection.search.RolloutSearch` over the known jobs, each rollout cut after
``H`` asks or ``rounds`` rounds, a decision's rollouts sharing ``budget`` rounds, the rest
priced by a :class:`agents.selection.value.LinearValue`) and its JSON file
(:data:`FORMAT`), which ``--agent selector:PATH`` and ``selector:pretrained:NAME`` read like a
rule selector's (:mod:`agents.selection.entry`).

The file holds everything the search decides from: the field (``rules``), the base (a
``palgym-rule-selector/2`` document over the same rules: the constant member under its aging
floor), the value's weights by feature name (:data:`agents.selection.value.FEATURES`) with the
rule whose queue order its features rank the queued jobs by, and the cut. ``training`` records
how the value was fitted (``benchmarks/value_search.py --save``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.selection.search import RolloutSearch
from agents.selection.selector import LinearSelector
from agents.selection.value import FEATURES, LinearValue, check_weights
from palgym.errors import ConfigError
from palgym.io.atomic import atomic_write_text
from palgym.io.selector_json import read_selector_file, selector_document
from palgym.rule_selection import SelectorContext
from palgym.sim.engine import Simulator

FORMAT_FAMILY = "palgym-value-search/"
FORMAT = FORMAT_FAMILY + "1"
"""The ``format`` of a saved value search (:func:`save_value_search`)."""
CUT_KEYS = ("H", "rounds", "budget", "halving")
"""The keys of the file's ``cut`` object (the first three an integer, or null for no bound;
``halving`` a boolean)."""


class ValueSearch(RolloutSearch):
    """The known-jobs rollout search with a learned linear value at its cut.

    Args:
        rules: the field (``ORDER/PLACEMENT[+SUFFIX]`` names).
        base: the base selector (a :class:`LinearSelector` over ``rules``).
        weights: float (len(FEATURES),), the value's weights (s per feature unit).
        order_rule: the index in ``rules`` of the rule whose queue order the value's features
            rank the queued jobs by (the base's member).
        H, rounds, budget, halving: the cut (:class:`RolloutSearch`).

    Raises:
        ConfigError: as :class:`RolloutSearch` and :class:`LinearValue` do, or for an
            ``order_rule`` outside the field.
    """

    def __init__(self, rules: Sequence[str], base: LinearSelector, weights: np.ndarray,
                 order_rule: int, H: int | None, rounds: int | None,  # noqa: N803
                 budget: int | None, halving: bool = False) -> None:
        super().__init__(rules, base, H, estimate=self._value, arrivals="known",
                         rounds=rounds, budget=budget, halving=halving)
        if isinstance(order_rule, bool) or not 0 <= order_rule < len(self.rules):
            raise ConfigError(f"order_rule must be a rule index in 0..{len(self.rules) - 1}, "
                              f"got {order_rule!r}")
        self.weights, self.order_rule = check_weights(weights), int(order_rule)
        self.selector_base = base
        self._linear: LinearValue | None = None

    def start(self, context: SelectorContext) -> None:
        """Bind to an episode (:meth:`RolloutSearch.start`); the value ranks by the copy of
        the episode's ``order_rule`` queue order."""
        super().start(context)
        self._linear = LinearValue(self.weights, self._orders[self.order_rule])

    def _value(self, sim: Simulator, n: int) -> float:
        assert self._linear is not None
        return self._linear(sim, n)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of :func:`save_value_search` (without ``training``)."""
        return {"format": FORMAT, "rules": list(self.rules),
                "base": self.selector_base.to_dict(),
                "value": {"weights": {name: float(w) for name, w in
                                      zip(FEATURES, self.weights, strict=True)},
                          "order_rule": self.rules[self.order_rule]},
                "cut": {"H": self.H, "rounds": self.rounds, "budget": self.budget,
                        "halving": self.halving}}


def save_value_search(path: str | Path, search: ValueSearch, training: dict[str, Any]) -> Path:
    """Write ``search`` as JSON (:data:`FORMAT`), with ``training`` (how the value was
    fitted), atomically; returns the path."""
    doc = {**search.to_dict(), "training": training}
    return atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def is_value_search(data: Any) -> bool:
    """Whether a loaded JSON document claims a value-search format (:data:`FORMAT` or another
    version of it, which :func:`value_search_from_dict` then refuses by name)."""
    return isinstance(data, dict) and str(data.get("format", "")).startswith(FORMAT_FAMILY)


CUT_BOUNDS = {"H": 0, "rounds": 1, "budget": 2}
"""The least value of each integer bound of the file's ``cut`` (null: no bound)."""
TOP_KEYS = ("format", "rules", "base", "value", "cut", "training")
"""The keys a :data:`FORMAT` document may have (``training`` optional)."""


def value_search_from_dict(data: Any, where: str) -> ValueSearch:
    """The search of a :data:`FORMAT` document (``where``: the file, for the errors).

    Raises:
        ConfigError: naming ``where`` and the field, for another format, an unknown key,
            rules that are not a field, a base that is not a rule selector over the same
            rules, value weights that are not one finite number per feature (naming the
            feature), an ``order_rule`` outside the rules, or a cut bound that is not an
            integer in range or null, or a ``halving`` that is not a boolean; the base's
            errors as :func:`palgym.io.selector_json.selector_document` and
            :meth:`LinearSelector.from_dict` give them.
    """
    from palgym.rule_selection import check_rules

    found = data.get("format") if isinstance(data, dict) else type(data).__name__
    if not isinstance(data, dict) or found != FORMAT:
        raise ConfigError(f"{where}: field format: expected {FORMAT!r}, found {found!r}")
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}: a value search has "
                          f"{', '.join(TOP_KEYS)}")
    rules = data.get("rules")
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise ConfigError(f"{where}: field rules: expected a list of rule names")
    try:
        check_rules(rules)
    except ConfigError as error:
        raise ConfigError(f"{where}: field rules: {error}") from None
    base = LinearSelector.from_dict(selector_document(data.get("base"), where, "base."),
                                    f"{where}: field base")
    if list(base.rules) != rules:
        raise ConfigError(f"{where}: field base: its rules {list(base.rules)} differ from the "
                          f"search's {rules}")
    value = data.get("value")
    if not isinstance(value, dict) or set(value) != {"weights", "order_rule"}:
        raise ConfigError(f"{where}: field value: expected an object with keys weights, "
                          "order_rule")
    weights = _weights(value["weights"], where)
    if value["order_rule"] not in rules:
        raise ConfigError(f"{where}: field value.order_rule: one of the rules, found "
                          f"{value['order_rule']!r}")
    cut = _cut(data.get("cut"), where)
    return ValueSearch(rules, base, weights, rules.index(value["order_rule"]), cut["H"],
                       cut["rounds"], cut["budget"], cut["halving"])


def _weights(weights: Any, where: str) -> np.ndarray:
    """The ``value.weights`` object as float64 (len(FEATURES),), each checked by name."""
    if not isinstance(weights, dict):
        raise ConfigError(f"{where}: field value.weights: an object of one number per "
                          f"feature ({', '.join(FEATURES)})")
    missing = [n for n in FEATURES if n not in weights]
    extra = sorted(set(weights) - set(FEATURES))
    if missing or extra:
        raise ConfigError(f"{where}: field value.weights: missing {missing}, unknown {extra}: "
                          f"one number per feature ({', '.join(FEATURES)})")
    for name in FEATURES:
        w = weights[name]
        if isinstance(w, bool) or not isinstance(w, int | float) or not np.isfinite(w):
            raise ConfigError(f"{where}: field value.weights.{name}: a finite number, "
                              f"found {w!r}")
    return np.array([weights[n] for n in FEATURES], np.float64)


def _cut(cut: Any, where: str) -> dict[str, Any]:
    """The ``cut`` object, each bound checked by name (:data:`CUT_BOUNDS`)."""
    if not isinstance(cut, dict) or set(cut) != set(CUT_KEYS):
        raise ConfigError(f"{where}: field cut: expected an object with keys "
                          f"{', '.join(CUT_KEYS)}, found {cut!r}")
    for key, least in CUT_BOUNDS.items():
        bound = cut[key]
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)
                                  or bound < least):
            raise ConfigError(f"{where}: field cut.{key}: an integer >= {least} or null (no "
                              f"bound), found {bound!r}")
    if not isinstance(cut["halving"], bool):
        raise ConfigError(f"{where}: field cut.halving: true or false, found "
                          f"{cut['halving']!r}")
    return cut


def load_value_search(path: str | Path) -> ValueSearch:
    """Read a search written by :func:`save_value_search`.

    Raises:
        ConfigError: naming the file (and the field), for a file that is not readable strict
            JSON (:func:`palgym.io.selector_json.read_selector_file`) or not a valid
            :data:`FORMAT` document (:func:`value_search_from_dict`).
    """
    try:
        data = read_selector_file(path)
    except OSError as error:
        raise ConfigError(f"{path}: not a readable JSON value search ({error})") from None
    return value_search_from_dict(data, str(path))


__all__ = ["CUT_BOUNDS", "CUT_KEYS", "FORMAT", "FORMAT_FAMILY", "TOP_KEYS", "ValueSearch",
           "is_value_search", "load_value_search", "save_value_search",
           "value_search_from_dict"]
