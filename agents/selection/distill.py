"""Distil the rollout search into a linear rule selector: one step of expert iteration.

Expert iteration (T. Anthony, Z. Tian and D. Barber, "Thinking Fast and Slow with Deep
Learning and Tree Search", NeurIPS 2017): a slow planner labels the states it visits with its
choices, and a fast policy is fitted to those labels. Here the planner is
:class:`agents.selection.search.RolloutSearch` around a base selector (a trained
:class:`agents.selection.selector.LinearSelector`), run on the training episodes, and the fast
policy is a :class:`~agents.selection.selector.LinearSelector` over the same field:

- :func:`collect_labels`: at every ask where the search evaluated two or more rules (after its
  pre-filter; at the other asks every rule left agrees, so the ask says nothing about which
  is better), the state features (:data:`palgym.rule_selection.STATE_FEATURES`) and the rule
  the search played;
- :func:`fit_selector`: multinomial logistic regression (scikit-learn's
  ``LogisticRegression``, L2 penalty of inverse strength C) on the standardised features;
  its decision function, mapped back to the raw features, is the selector's score, so the
  selector picks the class of highest predicted probability. A rule the search never played
  gets a bias of -1e9 (never picked). The regulariser C is chosen on the validation episodes
  by the training objective (:func:`agents.selection.runs.selector_objective`).

The search sees the episode's future (it simulates it) unless ``arrivals="known"`` (its
rollouts then play the jobs known at the ask only: an online teacher, whose choices a
scheduler could make); the distilled selector reads only the state features, so it is an
online scheduler like the base either way. Command:
``python -m agents.selection distill`` (agents/pretrained/README.md, "The rule
selector").
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.selection.runs import LabelledEpisode
from agents.selection.search import RolloutSearch
from agents.selection.selector import LinearSelector
from palgym.errors import ConfigError
from palgym.rule_selection import STATE_FEATURES, SelectorContext, run_selected_episode
from palgym.sim.types import FloatArray
from palgym.sim.views import SimView

NEVER = -1e9
"""The bias of a rule the search never played."""


@dataclass
class Labels:
    """The search's labels (:func:`collect_labels`).

    Attributes:
        features: float64 (n, F): the state at each labelled ask.
        choices: int64 (n,): the rule the search played there.
        changed: int64 (n,): 1 where that differs from the base's choice.
        episode: int64 (n,): the index of the episode the ask is from.
    """

    features: FloatArray
    choices: np.ndarray
    changed: np.ndarray
    episode: np.ndarray


class _Recorder:
    """Wraps a search: keeps the features at every ask it is asked."""

    def __init__(self, search: RolloutSearch) -> None:
        self.search = search
        self.features: list[FloatArray] = []

    def start(self, context: SelectorContext) -> None:
        self.search.start(context)

    def __call__(self, features: FloatArray, view: SimView) -> int:
        self.features.append(np.array(features, dtype=np.float64))
        return self.search(features, view)


_JOB: list[tuple[list[LabelledEpisode], LinearSelector, int | None, str]] = []


def _label_one(index: int) -> tuple[FloatArray, np.ndarray, np.ndarray]:
    """The labelled asks of episode ``index`` (features, choices, changed)."""
    episodes, base, horizon, arrivals = _JOB[0]
    labelled = episodes[index]
    recorder = _Recorder(RolloutSearch(base.rules, base, horizon, arrivals=arrivals))
    run_selected_episode(labelled.episode, base.rules, recorder, labelled.durations)
    stats = recorder.search.stats
    keep = np.array([len(costs) > 1 for costs in stats.costs], dtype=np.bool_)
    features = np.array(recorder.features, dtype=np.float64).reshape(-1, len(STATE_FEATURES))
    choices = np.array(stats.choices, dtype=np.int64)
    changed = (choices != np.array(stats.base_choices, dtype=np.int64)).astype(np.int64)
    return features[keep], choices[keep], changed[keep]


def collect_labels(episodes: Sequence[LabelledEpisode], base: LinearSelector,
                   H: int | None = 10, workers: int = 1,  # noqa: N803
                   arrivals: str = "all") -> Labels:
    """Run the search around ``base`` on every episode and keep its labelled asks (module
    docstring), in episode order; ``workers`` forked processes; ``arrivals`` as
    :class:`agents.selection.search.RolloutSearch` takes it (``known``: an online teacher).

    Raises:
        ConfigError: as :class:`agents.selection.search.RolloutSearch` does.
    """
    _JOB[:] = [(list(episodes), base, H, arrivals)]
    indices = list(range(len(episodes)))
    if workers <= 1:
        parts = [_label_one(i) for i in indices]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_label_one, indices, chunksize=1)
    features = [p[0] for p in parts]
    return Labels(np.concatenate(features) if features else np.zeros((0, len(STATE_FEATURES))),
                  np.concatenate([p[1] for p in parts]).astype(np.int64),
                  np.concatenate([p[2] for p in parts]).astype(np.int64),
                  np.concatenate([np.full(len(p[1]), i, np.int64)
                                  for i, p in enumerate(parts)]).astype(np.int64))


def fit_selector(rules: Sequence[str], labels: Labels, C: float) -> LinearSelector:  # noqa: N803
    """The linear selector of a multinomial logistic regression of the labels (module
    docstring); with a single rule labelled, that rule's constant selector.

    Raises:
        ConfigError: for no labels, a label outside the field, or C not > 0.
    """
    from sklearn.linear_model import LogisticRegression

    names = tuple(rules)
    y = labels.choices
    if len(y) == 0:
        raise ConfigError("distill: no labelled asks (the search never had two rules to weigh)")
    if y.min() < 0 or y.max() >= len(names):
        raise ConfigError(f"distill: labels must be rule indices in 0..{len(names) - 1}")
    if not C > 0:
        raise ConfigError(f"distill: C must be > 0, got {C}")
    classes = np.unique(y)
    if len(classes) == 1:
        return LinearSelector.constant(names, int(classes[0]))
    mean = labels.features.mean(axis=0)
    scale = labels.features.std(axis=0)
    scale[scale == 0.0] = 1.0
    model = LogisticRegression(C=C, max_iter=5000)
    model.fit((labels.features - mean) / scale, y)
    coef = np.array(model.coef_, dtype=np.float64)
    intercept = np.array(model.intercept_, dtype=np.float64)
    if len(classes) == 2:  # one logit: class 1 iff w.x + b > 0, i.e. scores (0, w.x + b)
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.array([0.0, intercept[0]])
    weights = np.zeros((len(names), len(STATE_FEATURES) + 1))
    weights[:, -1] = NEVER
    for row, rule in enumerate(model.classes_):
        raw = coef[row] / scale
        weights[int(rule), :-1] = raw
        weights[int(rule), -1] = intercept[row] - float(raw @ mean)
    return LinearSelector(names, weights)




def distill(base_path: str, train_eps: Sequence[LabelledEpisode],
            valid_eps: Sequence[LabelledEpisode], *, H: int | None, grid: Sequence[float],  # noqa: N803
            workers: int, output: str, command: str,
            meta: dict[str, Any] | None = None, arrivals: str = "all") -> LinearSelector:
    """``python -m agents.selection distill``: label the training episodes with the
    search around the selector at ``base_path``, fit one selector per C of ``grid``, keep the
    one of least validation objective (against the field's first rule, as ``train``) and
    write it to ``output`` (JSON, atomically) with how it was made (and ``meta``, e.g. the
    suite and task). The distilled selector keeps the base's floor, if any; a tie between two
    C goes to the first in ``grid``.

    Raises:
        ConfigError: as :func:`fit_selector` and :meth:`LinearSelector.load` do, or for an
            empty grid.
    """
    import time

    from agents.selection.runs import rule_runs, selector_objective
    from palgym.bench.suites import file_sha256

    if not grid or not all(math.isfinite(c) and c > 0 for c in grid):
        raise ConfigError(f"distill: --C needs one or more finite numbers > 0, got {list(grid)}")
    start = time.perf_counter()
    base = LinearSelector.load(base_path)
    labels = collect_labels(train_eps, base, H, workers, arrivals)
    print(f"{len(labels.choices)} labelled asks on {len(train_eps)} training episodes "
          f"({int(labels.changed.sum())} where the search overrode the base), "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    reference = rule_runs(base.rules[:1], valid_eps, workers)[0, :, 0]
    objective = selector_objective(valid_eps, reference, workers)
    fitted = [fit_selector(base.rules, labels, c).with_floor(base.floor) for c in grid]
    values = objective([*fitted, base])
    chosen = int(np.argmin(values[:-1]))
    for c, value in zip(grid, values, strict=False):
        print(f"C = {c:g}: validation objective {value:+.4f} (lower is better)")
    print(f"the base: validation objective {values[-1]:+.4f} (lower is better)")
    record = {"trained": {**(meta or {}),
        "method": "expert iteration: the rollout search's choices fitted by multinomial "
                  "logistic regression (agents.selection.distill)",
        "base": Path(base_path).name, "base_sha256": file_sha256(Path(base_path)), "H": H,
        "arrivals": arrivals,
        "C_grid": list(grid), "C": grid[chosen], "validation_objective": values[:-1].tolist(),
        "base_validation_objective": float(values[-1]),
        "labelled_asks": int(len(labels.choices)), "overridden_asks": int(labels.changed.sum()),
        "rules_labelled": np.bincount(labels.choices, minlength=len(base.rules)).tolist(),
        "train_traces": [e.label for e in train_eps],
        "validation_traces": [e.label for e in valid_eps], "command": command,
        "wall_s": round(time.perf_counter() - start, 1)}}
    path = fitted[chosen].save(output, **record)
    print(f"wrote {path}: C = {grid[chosen]:g} (validation objective {values[chosen]:+.4f}; "
          "lower is better)")
    return fitted[chosen]


__all__ = ["NEVER", "Labels", "collect_labels", "distill", "fit_selector"]
