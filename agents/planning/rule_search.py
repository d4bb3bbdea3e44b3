"""Rollout search over heuristic rules, round by round: search at the level of the selector.

At the first decision of every round, each rule of a field (placement names with their backfill
suffix, e.g. ``pal``, ``pal+backfill``, ``pal+easy``, all under the env's queue order) is
evaluated on a copy of the env: the copy plays the rule for the whole round, then the *base*
rule decides every later decision (exactly to the episode's end, or for H rounds plus the
queue estimate of the rest; :class:`agents.planning.search.BaseRollout`). The rule of least
total time in system then makes every decision of the round. Ties go to the base (another rule
must be strictly cheaper), so a field of the base alone is the base heuristic, and with exact
values (``H=end``) the search is never worse than its base on that objective: playing the
base for a round is one of the macro-actions compared, and the cost of a macro-action is the
cost of following the base after it (the policy improvement property of rollout, Bertsekas,
Tsitsiklis and Wu, J. Heuristics 3, 1997).

This is the search counterpart of ``palgym/PALSelector-v0`` (:mod:`palgym.envs.selector`):
the same field and the same round granularity, the choice made by rollouts instead of a
learned policy. It runs in ``PALScheduling-v0`` with the base's queue order (``base`` may
name one: ``srtf/pal+backfill``); every rule shares that order, as in the selector env.

Contender spec (``planner:rules=...``, see :func:`agents.evaluation.contenders.planner_contender`):
comma-separated ``key=value`` among ``base`` (``[ORDER/]PLACEMENT[+SUFFIX]``, default
``pal``), ``rules`` (``|``-separated placement names, the base's placement among them or
added first), ``H`` (rounds >= 1 or ``end``, default ``end``) and ``estimate`` (``queue``,
default, or ``ideal``), parsed by :func:`palgym.io.spec_text.parse_key_values`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from agents.base import EnvAgent, Query, heuristic_env_kwargs
from agents.planning.search import ESTIMATES, BaseRollout, clone_env, state_cost
from agents.planning.stats import PlannerEpisodeStats, episode_stats
from palgym.errors import ConfigError
from palgym.io.spec_text import parse_key_values
from palgym.policies import QUEUE_ORDER_NAMES

_TIE_TOLERANCE = 1e-12
"""Relative margin another rule must beat the base rule's cost by (float sums)."""
RULE_SEPARATOR = "|"
"""Separates the rules in a spec (commas separate the spec's keys)."""


@dataclass(frozen=True)
class RuleSearchSpec:
    """The search's options (see the module docstring).

    Attributes:
        base: the base rule's placement (with its backfill suffix).
        order: the queue order of the env and every rule (None: the env's).
        rules: the field, the base first.
        H: rounds simulated after the decision's round (None: to the episode's end).
        estimate: the rest's estimate after H rounds.
    """

    base: str = "pal"
    order: str | None = None
    rules: tuple[str, ...] = ("pal",)
    H: int | None = None  # noqa: N815 - the option's name on the command line
    estimate: str = "queue"

    @classmethod
    def parse(cls, text: str) -> RuleSearchSpec:
        """``"base=srtf/pal+backfill,rules=pal|pal+easy,H=20"`` -> spec.

        Raises:
            ConfigError: naming the bad key or value (an unknown queue order, placement or
                estimate, a rule given twice, H < 1).
        """
        values = parse_key_values(text, ("base", "rules", "H", "estimate"), "rule search spec",
                                  prefix="planner:")
        order, _, base = values.get("base", "pal").rpartition("/")
        if order and order not in QUEUE_ORDER_NAMES:
            raise ConfigError(f"rule search spec {text!r}: unknown queue order {order!r}; "
                              f"one of {list(QUEUE_ORDER_NAMES)}")
        rules = _rules(text, base, values.get("rules", base))
        horizon = _horizon(text, values.get("H", "end"))
        estimate = values.get("estimate", "queue")
        if estimate not in ESTIMATES:
            raise ConfigError(f"rule search spec {text!r}: estimate must be one of "
                              f"{list(ESTIMATES)}, got {estimate!r}")
        return cls(base, order or None, rules, horizon, estimate)

    @property
    def label(self) -> str:
        """Canonical contender label, e.g. ``planner:base=srtf/pal+backfill,rules=...,H=20``."""
        base = f"{self.order}/{self.base}" if self.order else self.base
        horizon = "end" if self.H is None else f"{self.H},estimate={self.estimate}"
        return f"planner:base={base},rules={RULE_SEPARATOR.join(self.rules)},H={horizon}"


def _rules(text: str, base: str, value: str) -> tuple[str, ...]:
    """The field of ``rules=``'s value, the base first."""
    rules = [r.strip() for r in value.split(RULE_SEPARATOR)]
    if len(set(rules)) != len(rules) or not all(rules):
        raise ConfigError(f"rule search spec {text!r}: rules must be distinct, non-empty "
                          f"placement names, got {rules}")
    for rule in [base, *rules]:
        heuristic_env_kwargs(rule)  # raises for an unknown placement
    return (base, *(r for r in rules if r != base))


def _horizon(text: str, value: str) -> int | None:
    """``H``'s value: rounds >= 1, or None for ``end``."""
    if value in ("end", "none", "inf"):
        return None
    try:
        rounds = int(value)
    except ValueError:
        raise ConfigError(f"rule search spec {text!r}: H must be an integer or end, got "
                          f"{value!r}") from None
    if rounds < 1:
        raise ConfigError(f"rule search spec {text!r}: H must be >= 1, got {rounds}")
    return rounds


def play_round(env: Any, rule: str, search: BaseRollout) -> bool:
    """Play ``rule`` in the env copy until its round ends; True when the episode ended."""
    start = env.simulator.round_index
    while True:
        if search.step(env, int(env.heuristic_action(rule, check=False))):
            return True
        if env.simulator.round_index != start:
            return False


def choose_rule(costs: list[float]) -> tuple[int, bool]:
    """The index of the cheapest rule, ties to rule 0 (the base) and then to the earlier
    rule; and whether another rule tied the base (relative margin :data:`_TIE_TOLERANCE`)."""
    margin = _TIE_TOLERANCE * max(abs(costs[0]), 1.0)
    best = 0
    for index, cost in enumerate(costs[1:], start=1):
        if cost < costs[best] - margin:
            best = index
    return best, any(abs(c - costs[0]) <= margin for c in costs[1:])


class RuleSearchAgent(EnvAgent):
    """The round-by-round rule search as an agent of the env (:class:`agents.base.Agent`).

    Args:
        spec: the search's options.

    Attributes:
        env_kwargs: what the env needs (the base's ``sticky`` / ``class_reorder``, its queue
            order, a strict env: a rule's action is always valid).
        episodes: per episode run so far, its :class:`agents.planning.stats.PlannerEpisodeStats` (in
            run order), read per round: ``evaluated`` counts the rounds searched,
            ``one_valid`` those of a field of one rule, ``changed`` / ``ties`` the searched
            rounds played by another rule than the base / where another rule tied it.
    """

    def __init__(self, spec: RuleSearchSpec) -> None:
        self.spec = spec
        self.name = spec.label
        self.env_kwargs: dict[str, Any] = {**heuristic_env_kwargs(spec.base), "strict": True}
        if spec.order is not None:
            self.env_kwargs["queue_order"] = spec.order
        self.episodes: list[PlannerEpisodeStats] = []
        self._held: tuple[str, int] = (spec.base, -1)

    def act(self, env: Any, query: Query) -> int:
        """The held rule's action in ``env``, searching at a round's first decision."""
        stats, new = episode_stats(self.episodes, env, query.episode_start)
        if new:
            self._held = (self.spec.base, -1)
        started = time.perf_counter()
        round_index = int(env.simulator.round_index)
        if self._held[1] != round_index:
            self._held = (self.spec.rules[self.search(env, stats)], round_index)
        stats.decisions += 1
        action = int(env.heuristic_action(self._held[0], check=False))
        stats.planning_s += time.perf_counter() - started
        return action

    def search(self, env: Any, stats: PlannerEpisodeStats) -> int:
        """The index of the rule to play this round (one rollout per rule)."""
        spec = self.spec
        if len(spec.rules) == 1:
            stats.one_valid += 1
            return 0
        stats.evaluated += 1
        rollout = BaseRollout(spec.base, spec.H, stats.counters, spec.estimate)
        end_round = rollout.end_round(env)
        costs = []
        for rule in spec.rules:
            stats.counters.rollouts += 1
            clone = clone_env(env)
            ended = play_round(clone, rule, rollout)
            costs.append(state_cost(clone.simulator, None) if ended
                         else rollout.finish(clone, end_round))
        index, tie = choose_rule(costs)
        stats.changed += index != 0
        stats.ties += tie
        return index


__all__ = ["RuleSearchAgent", "RuleSearchSpec", "choose_rule", "play_round"]
