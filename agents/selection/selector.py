"""A learned rule selector: a linear policy over the engine's rule-selection state, trained by
the cross-entropy method on whole training traces.

:class:`LinearSelector` scores every rule h of its field as ``W[h, :F] . x + W[h, F]`` on the
state features x (:data:`palgym.rule_selection.STATE_FEATURES`, F of them) and picks the
highest (ties: the lowest index), at each round where something happened
(:func:`palgym.rule_selection.run_selected_episode`). Rules may differ in queue order
(``srtf/pal+backfill``, ``fifo/pal+easy``). An optional :class:`StarvationFloor` (declared,
chosen on validation) overrides the scores once a job has queued too long.

:func:`train_cem` fits W to whole-episode outcomes, the objective being the mean over training
episodes of ``ln(avg JCT / avg JCT of the base rule)``, each over its completed jobs, plus
:data:`UNFINISHED_PENALTY` for an episode that leaves a job unfinished (which the average over
completed jobs alone would reward). The cross-entropy method (Rubinstein & Kroese, *The
Cross-Entropy Method*, 2004; for policies: Szita & Lorincz, Neural Computation 18, 2006)
samples a population of W from a diagonal Gaussian, keeps the elite fraction of least
objective and refits the Gaussian to it (plus a noise floor that keeps it searching). The
search starts at the base rule (its bias 1, all else 0), so its first mean is the base
heuristic. A whole-episode objective needs no credit assignment over the thousands of rounds
in which a starved job waits, which is where rounds-level RL (``palgym/PALSelector-v0``) found
no signal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from palgym.errors import ConfigError
from palgym.io.atomic import atomic_write_text
from palgym.io.selector_json import read_selector_json
from palgym.rule_selection import STATE_FEATURES, check_rules
from palgym.sim.types import FloatArray
from palgym.sim.views import SimView

FORMAT = "palgym-rule-selector/2"
"""The ``format`` of a saved selector (:meth:`LinearSelector.save`); ``/2`` adds the optional
``floor``. Files of ``palgym-rule-selector/1`` (no floor) are still read."""
READABLE_FORMATS = ("palgym-rule-selector/1", FORMAT)
UNFINISHED_PENALTY = 1.0
"""Added to an episode's log ratio when it leaves a measured job unfinished (a ratio of e)."""


@dataclass(frozen=True)
class StarvationFloor:
    """An aging floor: once the longest-queued job has queued more than ``hours`` (now -
    submit - attained service, :data:`palgym.rule_selection.STATE_FEATURES`'s first feature),
    the selector picks ``rules[rule]`` whatever its scores say.

    With an order that serves the longest-waiting job first and reserves GPUs for it (FIFO
    with EASY backfilling: Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995), no job waits
    much beyond ``hours`` plus the time to drain a reservation, so a selector with a floor
    cannot starve a job for good; the learned scores choose among all rules below it. The
    floor is declared (chosen on validation), not learned.

    Attributes:
        hours: the threshold, > 0 (hours queued).
        rule: the index of the floor's rule in the selector's field.
    """

    hours: float
    rule: int

    def __post_init__(self) -> None:
        """Raises ConfigError for hours that are not a finite number > 0, or a rule that is
        not an integer index (a rule *name* belongs in the file, not here)."""
        if isinstance(self.hours, bool) or not isinstance(self.hours, int | float) \
                or not (math.isfinite(self.hours) and self.hours > 0):
            raise ConfigError(f"floor: hours must be a finite number > 0, got {self.hours!r}")
        if isinstance(self.rule, bool) or not isinstance(self.rule, int | np.integer):
            raise ConfigError(f"floor: rule must be the rule's index in the selector's field, "
                              f"got {self.rule!r}")

    def describe(self, rules: Sequence[str]) -> str:
        """``"8 h -> fifo/pal+easy"``: the floor with its rule by name."""
        return f"{self.hours:g} h -> {rules[self.rule]}"

    @property
    def threshold(self) -> float:
        """``ln(1 + hours)``: the first state feature's value at the threshold."""
        return math.log1p(self.hours)


class LinearSelector:
    """Pick the rule of highest linear score (module docstring), optionally under a
    :class:`StarvationFloor`.

    Args:
        rules: the field, ``ORDER/PLACEMENT[+SUFFIX]`` names (H of them).
        weights: float64 (H, F + 1): per rule, a weight per state feature and a bias.
        floor: None, or the aging floor (its rule an index into ``rules``).

    Raises:
        ConfigError: for a malformed field, weights of another shape or not finite, or a
            floor whose hours are not > 0 or whose rule is not in 0..H-1.
    """

    def __init__(self, rules: Sequence[str], weights: FloatArray,
                 floor: StarvationFloor | None = None) -> None:
        self.rules = check_rules(rules)
        if floor is not None and not 0 <= floor.rule < len(self.rules):
            raise ConfigError(f"floor: the rule index must be in 0..{len(self.rules) - 1}, "
                              f"got {floor.rule}")
        self.floor = floor
        array = np.array(weights, dtype=np.float64)
        shape = (len(self.rules), len(STATE_FEATURES) + 1)
        if array.shape != shape:
            raise ConfigError(f"selector weights: expected shape {shape} (rules x features + "
                              f"bias), got {array.shape}")
        if not np.isfinite(array).all():
            raise ConfigError("selector weights: every weight must be finite")
        self.weights = array

    @classmethod
    def constant(cls, rules: Sequence[str], rule: int = 0) -> LinearSelector:
        """The selector that always picks ``rules[rule]`` (bias 1, all else 0)."""
        weights = np.zeros((len(tuple(rules)), len(STATE_FEATURES) + 1))
        weights[rule, -1] = 1.0
        return cls(rules, weights)

    @classmethod
    def guard(cls, rules: Sequence[str], hours: float, alternative: int) -> LinearSelector:
        """A hand-set starvation guard (a reference, not learned): ``rules[0]`` unless the
        longest-queued job has queued more than ``hours``, then ``rules[alternative]``: the
        constant selector of ``rules[0]`` under the floor ``(hours, alternative)``.

        Raises:
            ConfigError: for ``hours`` not > 0 or ``alternative`` not in 1..H-1.
        """
        names = tuple(rules)
        if not 0 < alternative < len(names) or not hours > 0:
            raise ConfigError(f"guard: need hours > 0 and an alternative rule in 1.."
                              f"{len(names) - 1}, got {hours} and {alternative}")
        return cls.constant(names).with_floor(StarvationFloor(hours, alternative))

    def with_floor(self, floor: StarvationFloor | None) -> LinearSelector:
        """This selector's rules and weights under ``floor`` (None: no floor)."""
        return LinearSelector(self.rules, self.weights, floor)

    def scores(self, features: FloatArray) -> FloatArray:
        """float64 (H,): each rule's score on ``features`` (float64 (F,))."""
        scores: FloatArray = self.weights[:, :-1] @ features + self.weights[:, -1]
        return scores

    def __call__(self, features: FloatArray, view: SimView | None = None) -> int:
        """The floor's rule once the longest-queued job has queued more than its hours, else
        the rule index of highest score (:data:`palgym.rule_selection.Selector`)."""
        floor = self.floor
        if floor is not None and features[0] > floor.threshold:
            return floor.rule
        return int(np.argmax(self.scores(features)))

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of :meth:`save` (``floor``: null or ``{"hours", "rule"}``, the
        rule by name)."""
        floor = None if self.floor is None else {"hours": self.floor.hours,
                                                 "rule": self.rules[self.floor.rule]}
        return {"format": FORMAT, "rules": list(self.rules), "features": list(STATE_FEATURES),
                "weights": self.weights.tolist(), "floor": floor}

    def save(self, path: str | Path, **meta: Any) -> Path:
        """Write the selector (and ``meta``, e.g. how it was trained) as JSON, atomically."""
        return atomic_write_text(path, json.dumps({**self.to_dict(), **meta}, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> LinearSelector:
        """Read a selector written by :meth:`save`.

        Raises:
            ConfigError: naming the file and the field, for a file that is not a selector of
                :data:`FORMAT`, features other than :data:`STATE_FEATURES`, or bad weights
                (:func:`palgym.io.selector_json.read_selector_json`: strict JSON, weights
                JSON numbers of magnitude <= 1e12).
        """
        where = str(path)
        try:
            data = read_selector_json(path)  # strict JSON, bounded, numbers as numbers
        except OSError as error:
            raise ConfigError(f"{where}: not a readable JSON selector ({error})") from None
        return cls.from_dict(data, where)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> LinearSelector:
        """The selector of a document as :meth:`to_dict` writes it (``where``: what the
        errors name, e.g. the file, or the file and field it is nested in).

        Raises:
            ConfigError: as :meth:`load` does.
        """
        if not isinstance(data, dict) or data.get("format") not in READABLE_FORMATS:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"{where}: field format: expected one of {READABLE_FORMATS}, "
                              f"found {found!r}")
        if data.get("features") != list(STATE_FEATURES):
            raise ConfigError(f"{where}: field features: expected {list(STATE_FEATURES)}, "
                              f"found {data.get('features')!r}")
        rules, weights = data.get("rules"), data.get("weights")
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise ConfigError(f"{where}: field rules: expected a list of rule names")
        try:
            selector = cls(rules, np.array(weights, dtype=np.float64))
        except (TypeError, ValueError, ConfigError) as error:
            raise ConfigError(f"{where}: field weights: {error}") from None
        floor = data.get("floor")
        if floor is None:
            return selector
        if data["format"] != FORMAT:
            raise ConfigError(f"{where}: field floor: format {data['format']} has no floor; "
                              f"a file with a floor is {FORMAT}")
        if (not isinstance(floor, dict)
                or set(floor) != {"hours", "rule"} or floor["rule"] not in rules
                or isinstance(floor["hours"], bool)
                or not isinstance(floor["hours"], int | float)):
            raise ConfigError(f"{where}: field floor: expected null or {{\"hours\": > 0, "
                              f"\"rule\": one of the rules}} (format {FORMAT}), found {floor!r}")
        try:
            return selector.with_floor(StarvationFloor(float(floor["hours"]),
                                                       rules.index(floor["rule"])))
        except ConfigError as error:
            reason = str(error).removeprefix("floor: ")
            raise ConfigError(f"{where}: field floor: {reason}") from None


Objective = Callable[[Sequence[LinearSelector]], FloatArray]
"""Maps selectors to their objectives (float64 (n,), lower is better)."""


@dataclass
class CemHistory:
    """What :func:`train_cem` saw, per iteration.

    Attributes:
        mean_objective: the objective of the distribution's mean before the iteration.
        best_objective: the least objective of the iteration's population.
        sigma: the mean standard deviation of the sampled weights.
    """

    mean_objective: list[float] = field(default_factory=list)
    best_objective: list[float] = field(default_factory=list)
    sigma: list[float] = field(default_factory=list)


def train_cem(rules: Sequence[str], objective: Objective, *, iterations: int = 12,
              population: int = 24, elite_frac: float = 0.25, init_sigma: float = 1.0,
              noise_floor: float = 0.05, seed: int = 0, floor: StarvationFloor | None = None,
              on_iteration: Callable[[int, LinearSelector, CemHistory], None] | None = None
              ) -> tuple[list[LinearSelector], CemHistory]:
    """Fit a :class:`LinearSelector` by the cross-entropy method (module docstring).

    Args:
        rules: the field; ``rules[0]`` is the base the search starts from.
        objective: lower is better (e.g. :func:`log_ratio_objective`).
        iterations, population: CEM iterations and samples per iteration.
        elite_frac: share of the population refitted to (at least 2 samples).
        init_sigma: the first standard deviation of every weight.
        noise_floor: added to every refitted standard deviation (Szita & Lorincz's constant
            noise).
        seed: ``numpy.random.default_rng(seed)`` draws the populations.
        floor: the aging floor every sampled selector runs under (declared, not learned).
        on_iteration: called after each iteration with its index, the new mean and the
            history (e.g. progress, a validation check).

    Returns:
        The selector of the distribution's mean after each iteration (``iterations`` of them;
        a caller picks one, e.g. on validation), and the history.

    Raises:
        ConfigError: for iterations or population < 1, or elite_frac outside (0, 1].
    """
    if iterations < 1 or population < 2:
        raise ConfigError("CEM needs iterations >= 1 and a population >= 2")
    if not 0.0 < elite_frac <= 1.0:
        raise ConfigError(f"elite_frac must be in (0, 1], got {elite_frac}")
    base = LinearSelector.constant(rules)
    mean, sigma = base.weights.copy(), np.full(base.weights.shape, float(init_sigma))
    rng = np.random.default_rng(seed)
    num_elite = max(2, int(math.ceil(elite_frac * population)))
    history, means = CemHistory(), []
    for iteration in range(iterations):
        samples = mean + sigma * rng.standard_normal((population, *mean.shape))
        candidates = [LinearSelector(rules, s, floor) for s in samples]
        values = objective([LinearSelector(rules, mean, floor), *candidates])
        order = np.argsort(values[1:], kind="stable")[:num_elite]
        elite = samples[order]
        history.mean_objective.append(float(values[0]))
        history.best_objective.append(float(values[1:].min()))
        history.sigma.append(float(sigma.mean()))
        mean = elite.mean(axis=0)
        sigma = elite.std(axis=0) + noise_floor
        means.append(LinearSelector(rules, mean, floor))
        if on_iteration is not None:
            on_iteration(iteration, means[-1], history)
    return means, history


def log_ratio(avg_jct_s: float, base_avg_jct_s: float, unfinished: int) -> float:
    """``ln(avg_jct_s / base_avg_jct_s)`` plus :data:`UNFINISHED_PENALTY` if ``unfinished``."""
    return math.log(avg_jct_s / base_avg_jct_s) + (UNFINISHED_PENALTY if unfinished else 0.0)
