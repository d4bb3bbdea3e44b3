"""Policy-guided rollout search over rules on the engine: a selector that, each time it is
asked, simulates every rule of its field ahead on copies of the engine and picks the cheapest.

At each ask of :func:`palgym.rule_selection.drive_selector` (the first round and every round
with an event), every tried rule r is evaluated by a *rollout* on a copy of the engine: r
decides until the next ask, then the *base* selector (a
:class:`agents.selection.selector.LinearSelector`, a constant one, any
:data:`palgym.rule_selection.Selector`) decides each later ask, for ``H`` further asks (or to
the episode's end with ``H=None``). The rollout's cost (s, :func:`agents.planning.search.
state_cost`) is the total time in system of the measured jobs: each completed job's JCT, plus
``now - submit`` for each unfinished one, plus, when the rollout stopped at its horizon, an
estimate of the time they still spend in the system:

- ``estimate="ideal"`` (default, :data:`DEFAULT_ESTIMATE`): each unfinished measured job's
  remaining ideal run time (iterations left x T_it), no queueing;
- ``estimate="queue"``: the unfinished measured jobs (running, queued, and the arrivals still
  to come) list-scheduled on the cluster's GPU count in shortest-remaining-time order, each
  running its remaining ideal run time (:func:`agents.planning.search.queue_estimate`), which
  charges a job left waiting at the horizon for its wait;
- a *value* (:data:`Value`): any callable ``value(sim, n) -> seconds``, e.g. one learned from
  rollouts to the end (``benchmarks/value_search.py``), estimating the time the measured jobs
  ``0..n-1`` still spend in the system from the engine at the horizon.

A rollout also stops at its horizon after ``rounds`` rounds (when given), events or not: that
bounds the rounds a decision simulates, hence its time (a rollout's round costs about the
same whatever happens in it). A ``budget`` bounds the rounds of all a decision's rollouts
together, shared equally or, with ``halving=True``, by successive halving
(:mod:`agents.selection.rollout`), so a decision's time is bounded however many rules
disagree.

The default was chosen on palgym-bench-v1's validation traces (scheduling-clairvoyant, base
``srtf/pal+backfill`` over :data:`palgym.rule_sets.ORDER_PLACEMENT_RULES`, H = 10 and 30):
the geometric mean of the search's avg JCT over the base's was 0.92-0.93 with ``ideal`` and
0.98 with ``queue``.

What the search knows: a rollout simulates the episode itself, so it sees the true durations,
the arrivals still to come and, in the dynamic world, the truth's future draws (run factors,
throttling), as :mod:`agents.planning.search` does. It is a planner with a
model of the future, to compare with hindsight bounds and other planners; an online scheduler
knows neither.

Known jobs only (``arrivals="known"``): each rollout's engine copy admits nothing more
(:meth:`palgym.sim.engine.Simulator.close_arrivals`), plays the jobs submitted by the ask
until every one has completed (or to its horizon, the estimate then added), and
its cost is the time in system of those jobs only. Where durations are clairvoyant and the
belief is the oracle of a static truth, that is all a
scheduler knows at the ask (the queue, the running jobs, their durations and the GPUs'
speeds), so the search is an online scheduler: model-predictive control with a model that
expects no more arrivals (receding horizon: E. F. Camacho and C. Bordons, *Model Predictive
Control*, 2007). Elsewhere it is refused (:func:`agents.selection.known_jobs.check_known`).
Its choices up to any time do not depend on the jobs submitted later (tested by changing
them). The improvement property
below then holds for the jobs known at each ask, not for the episode: later arrivals are
outside every rollout's cost, so over a whole episode the search can lose to its base.

The search plays the rule of least cost. Ties go to the base's own choice (another rule must
be cheaper by a relative 1e-12), so a field in which only the base's choice is tried, or in
which every rule decides as the base's choice does, plays the base's episode bit for bit; and
with ``H=None`` (exact costs) the search is never worse than its base on that objective (the
policy improvement property of rollout: D. P. Bertsekas, J. N. Tsitsiklis and C. Wu, "Rollout
algorithms for combinatorial optimization", Journal of Heuristics 3, 1997). The property needs
a base that decides from its arguments alone (a :class:`LinearSelector` does); a selector with
a ``start`` hook is refused as a base.

Pre-filter (``prefilter=True``): a rule whose target GPUs right now equal those of a rule
already evaluated at this ask (the base's choice first) is skipped; most asks have rules that
agree. The skipped rule may have diverged later, so the filter can only miss an improvement;
the rule played is always one whose rollout was run, and the property above holds.

Engine copies: :mod:`agents.selection.engine_copies`. The real run is not disturbed (tested: a
run with the search equals a replay of its recorded choices, under the oracle and the online
belief). """

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from agents.planning.search import ESTIMATES, state_cost
from agents.selection.engine_copies import copy_context
from agents.selection.known_jobs import ARRIVALS, KNOWN_DONE, check_known
from agents.selection.rollout import (
    HORIZON,
    STUCK,
    TIE_TOLERANCE,
    Rollout,
    RolloutSelector,
    RolloutStop,
    equal_share,
    halving_rounds,
    least,
    same_target,
)
from agents.selection.search_stats import SearchStats
from palgym.errors import ConfigError, InvalidActionError, PalgymError
from palgym.policies.base import PlacementPolicy, QueueOrder
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.rule_selection import (
    SelectedEpisode,
    Selector,
    SelectorContext,
    check_rules,
    drive_selector,
    run_selected_episode,
)
from palgym.sim.engine import Simulator
from palgym.sim.types import FloatArray, IntArray
from palgym.sim.views import SimView
from palgym.simulate import Episode

DEFAULT_ESTIMATE = "ideal"
"""The rest's estimate at the horizon unless told (module docstring)."""
Value = Callable[[Simulator, int], float]
"""A rest's estimate: ``value(sim, n)``, the time (s) the measured jobs ``0..n-1`` still spend
in the system from the engine ``sim`` at a rollout's horizon (``n``: the jobs the cost counts,
all measured ones or, with ``arrivals="known"``, those known at the ask)."""


class RolloutSearch:
    """Policy-guided rollout search as a selector (module docstring); run it with
    :func:`palgym.rule_selection.run_selected_episode` (or :func:`run_search_episode`, which
    also returns its :class:`SearchStats`).

    Args:
        rules: the field, ``ORDER/PLACEMENT[+SUFFIX]`` names: the episode's rules, in order.
        base: the base selector (:data:`palgym.rule_selection.Selector`), deciding from its
            arguments alone.
        H: asks decided by the base after the rollout's first (>= 0), or None (to the end).
        tried: the rules evaluated at each ask (names of ``rules``; None: all); the base's
            choice is always evaluated.
        estimate: the rest's estimate at the horizon (``ideal``, default, ``queue``, or a
            :data:`Value`).
        prefilter: skip a rule whose target GPUs now equal an evaluated rule's.
        arrivals: what a rollout admits (:data:`ARRIVALS`): ``all`` (default, the episode's
            future: a planner that sees it) or ``known`` (nothing: a rollout plays the jobs
            submitted by the ask until every one has completed, or to its horizon; module
            docstring, "Known jobs only").
        rounds: the most rounds a rollout plays (>= 1) before it stops at its horizon, or
            None (no bound): bounds a decision's time.
        budget: the most rounds a decision's rollouts play together (>= 2, shared equally
            among the rules it evaluates: ``budget // k`` each of ``k``, at least 1), or None.
        halving: with a ``budget`` and three rules or more to evaluate, share it by
            successive halving instead (module docstring).

    Attributes:
        stats: the current (or last) episode's :class:`SearchStats`.

    Raises:
        ConfigError: naming the value, for a malformed field, H < 0 or not an integer, a tried
            rule outside the field, an unknown estimate, a base with a ``start`` hook, an
            unknown ``arrivals``, ``known`` with the ``queue`` estimate, ``rounds`` < 1 or
            ``budget`` < 2; at ``start``, an
            episode :func:`check_known` refuses.
    """

    def __init__(self, rules: Sequence[str], base: Selector, H: int | None = 10,  # noqa: N803
                 tried: Sequence[str] | None = None, estimate: str | Value = DEFAULT_ESTIMATE,
                 prefilter: bool = True, arrivals: str = "all", rounds: int | None = None,
                 budget: int | None = None, halving: bool = False) -> None:
        self.rules = check_rules(rules)
        if arrivals not in ARRIVALS:
            raise ConfigError(f"arrivals must be one of {list(ARRIVALS)}, got {arrivals!r}")
        if arrivals == "known" and estimate == "queue":
            raise ConfigError("arrivals='known': the queue estimate schedules the arrivals "
                              "still to come; use estimate='ideal'")
        self.arrivals = arrivals
        if H is not None and (isinstance(H, bool) or not isinstance(H, int | np.integer)
                              or H < 0):
            raise ConfigError(f"H must be an integer >= 0 (asks after the first) or None, "
                              f"got {H!r}")
        if not callable(estimate) and estimate not in ESTIMATES:
            raise ConfigError(f"estimate must be one of {list(ESTIMATES)} or a value "
                              f"(sim, n) -> seconds, got {estimate!r}")
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(
                rounds, int | np.integer) or rounds < 1):
            raise ConfigError(f"rounds must be an integer >= 1 or None, got {rounds!r}")
        if budget is not None and (isinstance(budget, bool) or not isinstance(
                budget, int | np.integer) or budget < 2):
            raise ConfigError(f"budget must be an integer >= 2 (rounds per decision, shared "
                              f"by its rollouts) or None, got {budget!r}")
        self.rounds, self.budget, self.halving = rounds, budget, bool(halving)
        if hasattr(base, "start"):
            raise ConfigError(f"the base selector {base!r} has a start hook: a base must "
                              "decide from (features, view) alone")
        names = self.rules if tried is None else tuple(tried)
        unknown = [name for name in names if name not in self.rules]
        if unknown or not names:
            raise ConfigError(f"tried rules {list(names)}: each must be one of the field "
                              f"{list(self.rules)} ({unknown} is not)" if unknown else
                              "tried rules: give at least one rule of the field")
        self.tried = tuple(self.rules.index(name) for name in dict.fromkeys(names))
        self.base, self.H, self.estimate, self.prefilter = base, H, estimate, prefilter
        self.stats = SearchStats()
        self._context: SelectorContext | None = None
        self._orders: tuple[QueueOrder, ...] = ()
        self._placements: tuple[PlacementPolicy, ...] = ()

    def start(self, context: SelectorContext) -> None:
        """Bind to an episode (called by :func:`palgym.rule_selection.drive_selector` before
        its first round); resets :attr:`stats`.

        Raises:
            ConfigError: if the episode's rules are not as many as the field's.
        """
        if len(context.orders) != len(self.rules):
            raise ConfigError(f"the search's field has {len(self.rules)} rules, the episode "
                              f"{len(context.orders)}: give the search the episode's rules")
        if self.arrivals == "known":
            check_known(context)
        self._context = context
        self._orders, self._placements = copy.deepcopy((context.orders, context.placements))
        self.stats = SearchStats()

    def _rules_now(self) -> tuple[tuple[QueueOrder, ...], Sequence[PlacementPolicy]]:
        """Copies of the rules as they decide now, the real ones undisturbed: made once at
        the start, or, under a changing belief, of the belief's current placements."""
        context = self._context
        assert context is not None
        if context.belief is None:
            return self._orders, self._placements
        return self._orders, copy.deepcopy(context.belief.placements)

    def base_choice(self, features: FloatArray, view: SimView) -> int:
        """The base's rule index on (features, view).

        Raises:
            InvalidActionError: naming the value, if it is not a rule index of the field.
        """
        chosen = self.base(features, view)
        if isinstance(chosen, bool) or not isinstance(chosen, int | np.integer) \
                or not 0 <= int(chosen) < len(self.rules):
            raise InvalidActionError(f"the base selector returned {chosen!r}, not a rule index "
                                     f"in 0..{len(self.rules) - 1}")
        return int(chosen)

    def __call__(self, features: FloatArray, view: SimView) -> int:
        """The rule to play now (:data:`palgym.rule_selection.Selector`).

        Raises:
            PalgymError: if the search was not started on the engine ``view`` is of.
            InvalidActionError: if the base returns no rule index of the field.
        """
        context = self._context
        if context is None or view is not context.sim.view():
            raise PalgymError("the rollout search is not bound to this engine: run it with "
                              "run_selected_episode / drive_selector, which call its start()")
        started = time.perf_counter()
        stats = self.stats
        base = self.base_choice(features, view)
        candidates = self._candidates(base, view)
        chosen, costs = base, list[float]()
        if len(candidates) > 1:
            stats.searched += 1
            eligible = list(range(len(candidates)))
            if self.halving and self.budget is not None and len(candidates) > 2:
                costs, eligible = self._halving(candidates, self.budget)
            else:
                rounds = equal_share(self.budget, len(candidates), self.rounds)
                costs = [self._play(self._begin(rule), rounds) for rule in candidates]
            chosen = candidates[eligible[least([costs[i] for i in eligible])]]
        stats.asks += 1
        stats.costs.append(tuple(zip(candidates if costs else (), costs, strict=True)))
        stats.changed += chosen != base
        stats.choices.append(chosen)
        stats.base_choices.append(base)
        stats.decision_s.append(time.perf_counter() - started)
        return chosen

    def _candidates(self, base: int, view: SimView) -> list[int]:
        """The rules to evaluate: the base's choice, then the tried rules (field order), less
        those the pre-filter skips."""
        rules = [base, *(rule for rule in self.tried if rule != base)]
        if not self.prefilter or len(rules) == 1:
            return rules
        context = self._context
        assert context is not None
        kept: list[int] = []
        targets: list[IntArray | None] = []
        orders, placements = self._rules_now()
        for rule in rules:
            placement, order = placements[rule], orders[rule]
            sampler = copy.deepcopy(context.sampler)
            target = placement.place(view, order.order(view), sampler)
            if not any(same_target(target, other) for other in targets):
                kept.append(rule)
                targets.append(target)
        return kept

    def _halving(self, candidates: list[int], budget: int) -> tuple[list[float], list[int]]:
        """Successive halving of ``budget`` rounds over the candidates
        (:func:`agents.selection.rollout.halving_rounds`): each plays the first rounds; the two
        of least cost there (ties: the earlier) play on from where they stopped. Returns each
        candidate's last cost (the finalists' after the second stage) and the finalists'
        indices, in candidate order (the rule played is one of them)."""
        first, total = halving_rounds(budget, len(candidates), self.rounds)
        runs = [self._begin(rule) for rule in candidates]
        costs = [self._play(run, first) for run in runs]
        finalists = sorted(range(len(costs)), key=lambda i: (costs[i], i))[:2]
        for index in finalists:
            if total > first and runs[index].resumable(self.H):
                costs[index] = self._play(runs[index], total)
        return costs, sorted(finalists)

    def _begin(self, rule: int) -> Rollout:
        """A rollout of ``rule`` on fresh copies of the episode's engine."""
        context = self._context
        assert context is not None
        self.stats.rollouts += 1
        sim, stall, sampler, belief = copy_context(context)
        known = sim.close_arrivals() if self.arrivals == "known" else None
        return Rollout(sim, stall, sampler, belief, known,
                       RolloutSelector(rule, self.base_choice), sim.round_index)

    def _play(self, run: Rollout, rounds: int | None) -> float:
        """Play ``run`` on to ``rounds`` rounds after its first (None: no bound) and return
        its cost (s; inf if it gets stuck): the playing of ``rule`` until the next ask, then
        the base (module docstring)."""
        context = self._context
        assert context is not None
        stats, sim, belief = self.stats, run.sim, run.belief
        placements = self._placements if belief is None else belief.placements
        started = sim.round_index
        stop = RolloutStop(run.stall, run.selector, self.H, run.known is not None, rounds,
                           run.first_round)
        try:
            run.reason, *_ = drive_selector(sim, self._orders, placements, run.selector,
                                            run.sampler, context.durations,
                                            stop,  # type: ignore[arg-type]
                                            None if belief is None else belief.on_event)
        except PalgymError as error:
            if type(error) is not PalgymError:  # drive_selector's "could never end"
                raise
            stats.stuck += 1
            run.reason = STUCK
            return math.inf
        finally:
            stats.sim_rounds += sim.round_index - started
        known = run.known
        if run.reason != HORIZON:
            return state_cost(sim, None, jobs=known)
        if callable(self.estimate):
            count = sim.jobs.num_measured if known is None else known
            return state_cost(sim, None, jobs=known) + float(self.estimate(sim, count))
        return state_cost(sim, self.estimate, jobs=known)


@dataclass(frozen=True)
class SearchEpisode:
    """Outcome of :func:`run_search_episode`.

    Attributes:
        selected: the episode (:class:`palgym.rule_selection.SelectedEpisode`).
        stats: the search's :class:`SearchStats` (rollouts, decision times, choices).
        wall_s: wall seconds of the whole episode.
    """

    selected: SelectedEpisode
    stats: SearchStats
    wall_s: float


def run_search_episode(episode: Episode, rules: Sequence[str], base: Selector, *,
                       H: int | None = 10, tried: Sequence[str] | None = None,  # noqa: N803
                       estimate: str | Value = DEFAULT_ESTIMATE, prefilter: bool = True,
                       durations: Durations = CLAIRVOYANT, arrivals: str = "all",
                       rounds: int | None = None, budget: int | None = None,
                       halving: bool = False) -> SearchEpisode:
    """Simulate ``episode`` with a :class:`RolloutSearch` over ``rules`` around ``base``
    (:func:`palgym.rule_selection.run_selected_episode`).

    Args:
        episode: from :func:`palgym.simulate.make_episode` (any belief).
        rules, base, H, tried, estimate, prefilter, arrivals, rounds, budget, halving: as
            :class:`RolloutSearch` takes them.
        durations: what the queue orders, EASY backfilling and the features know of job
            durations (the rollouts simulate the true ones).

    Returns:
        The episode, the search's statistics and the episode's wall time.

    Raises:
        ConfigError: as :class:`RolloutSearch` and ``run_selected_episode`` do.
        InvalidActionError: if the base returns no rule index of the field (naming it).
    """
    search = RolloutSearch(rules, base, H, tried, estimate, prefilter, arrivals, rounds, budget,
                           halving)
    started = time.perf_counter()
    selected = run_selected_episode(episode, rules, search, durations)
    return SearchEpisode(selected, search.stats, time.perf_counter() - started)


__all__ = ["ARRIVALS", "DEFAULT_ESTIMATE", "ESTIMATES", "HORIZON", "KNOWN_DONE",
           "TIE_TOLERANCE", "RolloutSearch", "Value", "check_known",
           "SearchEpisode", "SearchStats", "run_search_episode"]
