"""A rollout planner: policy improvement over a base heuristic, a headroom reference.

At every decision the planner evaluates the base heuristic's action and up to K other valid
actions, each on a copy of the env finished by the base heuristic (exactly to the episode's
end, or for H rounds plus a cheap estimate of the rest; :mod:`agents.planning.search`), and
takes the action of least total time in system. Ties go to the base action (an alternative
must be strictly cheaper), so with K = 0 the planner is its base heuristic; with exact values
it is never worse than its base (the policy improvement property of rollout, Bertsekas,
Tsitsiklis and Wu, J. Heuristics 3, 1997). ``depth=2`` repeats the idea once: the best
``shortlist`` actions of the first pass are evaluated again by following the depth-1 planner
for ``steps`` decisions (then the base), a rollout of the rollout policy.

The other actions, in order, until K distinct ones (an action is distinct when it places
another job, or the same job on another GPU set; "end round" and RESERVE are distinct from
placements and from each other), taken round-robin from three lists: (1) every other window
slot's job with the base heuristic's GPU set for it (reordering, backfilling), (2) "end
round" (deferral, scheduling task) and RESERVE (EASY's reservation for a blocked head job,
work-conserving env: docs/ENV.md "Work-conserving scheduling"), each when valid, (3) the base
job's other candidates in candidate order (when the base action places a job).

Fallbacks are counted per episode, never hidden: decisions with a single valid action and
decisions whose valid actions are all equivalent to the base action take the base action
without a rollout. Nothing is kept across episodes (no value cache: no leak of one episode's
outcome into another's decisions).

Contender spec (``evaluate.py --planner SPEC``): comma-separated ``key=value`` among
``base`` (placement, default ``pal``), ``K`` (>= 0, default 6), ``H`` (rounds >= 1, or
``end``, default ``end``), ``estimate`` (after H rounds: ``queue``, default, or ``ideal``),
``depth`` (1 or 2), ``shortlist`` (>= 1, default 2), ``steps`` (>= 1, default 5);
``default`` or an empty spec take every default (:func:`palgym.io.spec_text.parse_key_values`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.base import EnvAgent, Query, heuristic_env_kwargs
from agents.planning.rule_search import RuleSearchAgent, RuleSearchSpec
from agents.planning.search import ESTIMATES, BaseRollout, clone_env
from agents.planning.stats import PlannerEpisodeStats, episode_stats
from palgym.envs.heuristics import heuristic_candidate
from palgym.errors import ConfigError
from palgym.io.spec_text import parse_key_values
from palgym.policies import placement_name
from palgym.policies.backfill import split_name
from palgym.policies.registry import placement_entry
from palgym.report_output import format_columns

_TIE_TOLERANCE = 1e-12
"""Relative margin an alternative must beat the base action's cost by (float sums)."""


@dataclass(frozen=True)
class PlannerSpec:
    """The planner's options (see the module docstring)."""

    base: str = "pal"
    K: int = 6  # noqa: N815 - the option's name on the command line
    H: int | None = None  # noqa: N815
    depth: int = 1
    shortlist: int = 2
    steps: int = 5
    estimate: str = "queue"

    @classmethod
    def parse(cls, text: str) -> PlannerSpec:
        """``"base=pal,K=6,H=20"`` -> spec.

        Raises:
            ConfigError: naming the bad key or value.
        """
        given = parse_key_values(text, list(cls.__dataclass_fields__), "planner spec",
                                 prefix="planner:")
        values: dict[str, Any] = {
            key: value if key in ("base", "estimate") else _integer(text, key, value)
            for key, value in given.items()}
        spec = cls(**values)
        heuristic_env_kwargs(spec.base)  # raises for an unknown placement
        low = {"K": 0, "H": 1, "depth": 1, "shortlist": 1, "steps": 1}
        for key, minimum in low.items():
            value = getattr(spec, key)
            if value is not None and value < minimum:
                raise ConfigError(f"planner spec {text!r}: {key} must be >= {minimum}, "
                                  f"got {value}")
        if spec.estimate not in ESTIMATES:
            raise ConfigError(f"planner spec {text!r}: estimate must be one of "
                              f"{list(ESTIMATES)}, got {spec.estimate!r}")
        if spec.depth > 2:
            raise ConfigError(f"planner spec {text!r}: depth must be 1 or 2, got {spec.depth}")
        return spec

    @property
    def label(self) -> str:
        """Canonical contender label, e.g. ``planner:base=pal,K=6,H=end``."""
        horizon = "end" if self.H is None else f"{self.H},estimate={self.estimate}"
        deeper = (f",depth=2,shortlist={self.shortlist},steps={self.steps}"
                  if self.depth == 2 else "")
        return f"planner:base={self.base},K={self.K},H={horizon}{deeper}"


def _integer(text: str, key: str, value: str) -> int | None:
    if key == "H" and value in ("end", "none", "inf"):
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"planner spec {text!r}: {key} must be an integer, got "
                          f"{value!r}") from None


def choose(base_action: int, base_cost: float, costs: Sequence[tuple[int, float]]
           ) -> tuple[int, bool]:
    """The cheapest action, ties to the base; and whether any alternative tied the base.

    Args:
        base_action: the base heuristic's action.
        base_cost: its rollout cost (s).
        costs: ``(action, cost)`` of the alternatives, in evaluation order.

    Returns:
        ``(action, tie)``: an alternative only if strictly cheaper than the base (by the
        relative :data:`_TIE_TOLERANCE`), the first of the cheapest alternatives.
    """
    best, best_cost = base_action, base_cost
    margin = _TIE_TOLERANCE * max(abs(base_cost), 1.0)
    tie = any(abs(cost - base_cost) <= margin for _, cost in costs)
    for action, cost in costs:
        if cost < best_cost - margin:
            best, best_cost = action, cost
    return best, tie


def alternatives(env: Any, base: str, base_action: int, limit: int) -> list[int]:
    """Up to ``limit`` valid actions distinct from ``base_action`` (module docstring order).

    Args:
        env: the unwrapped env at a decision.
        base: the base placement's name.
        base_action: its action now.
        limit: K.
    """
    mask = env.action_masks()
    codec = env.codec
    decision = env.decision
    candidates = decision.candidates
    if limit == 0 or candidates is None:
        return []
    jobs = env.rounds.sim.jobs
    # backfilling picks the job, not its GPU set; a placement without a candidate kind chooses
    # for the first slot's job only (palgym.envs.policy_agent): no other slot's alternative
    kind = placement_entry(split_name(placement_name(base))[0]).candidate
    by_slot, same_job = [], []
    for slot in range(1, len(candidates.jobs) if kind is not None else 1):
        job = int(candidates.jobs[slot])
        klass = int(jobs.perf_class[job])
        choice = heuristic_candidate(
            kind, candidates.feasible[candidates.shape_of_slot[slot]], int(jobs.num_gpus[job]),
            env.episode_context.factors.tiers[klass].size, env.episode_context.pal_orders[klass],
            env.cluster.gpus_per_node, codec)
        if choice is not None:
            by_slot.append(codec.encode(slot, choice))
    end = [action for action in (codec.END_ROUND, codec.RESERVE)
           if action >= 0 and mask[action]]  # RESERVE: -1 outside a work-conserving env
    if base_action not in (codec.END_ROUND, codec.RESERVE):
        slot, _ = codec.decode(base_action)
        same_job = [codec.encode(slot, m) for m in range(codec.num_candidates)]
    seen = {_effect(env, base_action)}
    chosen: list[int] = []
    for group in _round_robin([by_slot, end, same_job]):
        effect = _effect(env, group)
        if mask[group] and effect not in seen:
            seen.add(effect)
            chosen.append(group)
            if len(chosen) == limit:
                break
    return chosen


def _round_robin(lists: Sequence[Sequence[int]]) -> list[int]:
    out: list[int] = []
    for index in range(max(len(items) for items in lists)):
        out.extend(items[index] for items in lists if index < len(items))
    return out


def _effect(env: Any, action: int) -> tuple[Any, ...]:
    """What an action does: ("end",), ("reserve",), (job, "random") or (job, GPU ids)."""
    codec = env.codec
    if action == codec.END_ROUND:
        return ("end",)
    if action == codec.RESERVE:
        return ("reserve",)
    slot, candidate = codec.decode(action)
    candidates = env.decision.candidates
    job = int(candidates.jobs[slot])
    if candidate == codec.RANDOM:
        return (job, "random")
    return (job, tuple(int(g) for g in candidates.gpus(slot, candidate)))


class PlannerAgent(EnvAgent):
    """The rollout planner as an agent of the env (:class:`agents.base.Agent`).

    Args:
        spec: the planner's options.

    Attributes:
        episodes: per episode run so far, its :class:`PlannerEpisodeStats` (in run order).
    """

    def __init__(self, spec: PlannerSpec) -> None:
        self.spec = spec
        self.name = spec.label
        self.env_kwargs: dict[str, Any] = {**heuristic_env_kwargs(spec.base), "strict": True}
        self.episodes: list[PlannerEpisodeStats] = []

    def act(self, env: Any, query: Query) -> int:
        """The planner's action in ``env`` (observation and masks are read from it)."""
        stats, _ = episode_stats(self.episodes, env, query.episode_start)
        started = time.perf_counter()
        action = self.decide(env, stats, self.spec.depth)
        stats.planning_s += time.perf_counter() - started
        return action

    def decide(self, env: Any, stats: PlannerEpisodeStats, depth: int) -> int:
        """The action at ``env``'s decision, searching ``depth`` levels; counts into stats."""
        spec = self.spec
        base_action = int(env.heuristic_action(spec.base, check=False))
        stats.decisions += 1
        if int(env.action_masks().sum()) == 1:
            stats.one_valid += 1
            return base_action
        others = alternatives(env, spec.base, base_action, spec.K)
        if not others:
            stats.no_alternative += 1
            return base_action
        stats.evaluated += 1
        search = BaseRollout(spec.base, spec.H, stats.counters, spec.estimate)
        end_round = search.end_round(env)
        costs = [(a, search.value(env, a, end_round)) for a in [base_action, *others]]
        if depth == 2:
            costs = self._deepen(env, search, costs, end_round, stats)
        action, tie = choose(base_action, costs[0][1], costs[1:])
        stats.ties += tie
        stats.changed += action != base_action
        return action

    def _deepen(self, env: Any, search: BaseRollout, costs: list[tuple[int, float]],
                end_round: int | None, stats: PlannerEpisodeStats) -> list[tuple[int, float]]:
        """Depth 2: the base action and the best shortlisted alternatives, re-evaluated by
        following the depth-1 planner for ``steps`` decisions and then the base."""
        ranked = sorted(costs[1:], key=lambda pair: pair[1])[: max(self.spec.shortlist - 1, 0)]
        deeper = []
        for action, _ in [costs[0], *ranked]:
            clone = clone_env(env)
            ended = search.step(clone, action)
            for _ in range(self.spec.steps):
                if ended:
                    break
                inner = PlannerEpisodeStats(stats.episode_hash, stats.trace,
                                            counters=stats.counters)
                ended = search.step(clone, self.decide(clone, inner, 1))
            deeper.append((action, search.finish(clone, end_round) if not ended
                           else search.finish(clone, None)))
        return deeper


def planner_agent(text: str) -> PlannerAgent | RuleSearchAgent:
    """The planner a spec names: the round-by-round search over rules when the spec has
    ``rules=`` (:mod:`agents.planning.rule_search`), else the rollout planner
    (:class:`PlannerAgent`). Its ``name`` is the contender's label, its ``env_kwargs`` what it
    adds to the env's.

    Raises:
        ConfigError: for a bad spec.
    """
    if "rules=" in text:
        return RuleSearchAgent(RuleSearchSpec.parse(text))
    return PlannerAgent(PlannerSpec.parse(text))


def format_planner_costs(contenders: Sequence[Any], outcomes: Mapping[str, Sequence[Any]]
                         ) -> str:
    """Per planner contender and episode: fallbacks, search work and wall seconds ("" if
    no planner ran). Episodes whose stats are missing (e.g. run in another process) are
    listed as such."""
    header = ["trace", "decisions", "one-valid", "no-alternative", "evaluated", "changed",
              "ties", "rollouts", "env steps", "sim rounds", "planning (s)"]
    lines = []
    for contender in contenders:
        if contender.kind != "planner":
            continue
        runs = list(contender.agent.episodes)
        mine = outcomes[contender.label]
        rows = []
        for index, outcome in enumerate(mine):
            row = runs[index] if len(runs) == len(mine) else None
            if row is None or row.episode_hash != outcome.episode_hash:
                rows.append([outcome.trace, "not recorded", *[""] * (len(header) - 2)])
                continue
            c = row.counters
            rows.append([outcome.trace, *(str(v) for v in (
                row.decisions, row.one_valid, row.no_alternative, row.evaluated, row.changed,
                row.ties, c.rollouts, c.env_steps, c.sim_rounds)), f"{row.planning_s:.1f}"])
        lines += [f"{contender.label}: fallbacks (one-valid, no-alternative: the base action "
                  "without search) and cost per episode", *format_columns(header, rows)]
    return "\n".join(lines)
