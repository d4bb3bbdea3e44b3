"""One comparison: contenders on identical episodes, paired into a
:class:`~agents.evaluation.summary.Comparison`.

Every contender acts on the same episode list: for each trace ``i`` and seed ``s``,
``env.reset(seed=s, options={"trace": i})`` (the whole trace, or with ``window`` a window the
env draws from ``s``, equally for everyone). The episode (trace, profile, cluster, config and
the episode seed drawn from ``s``) does not depend on the contender, and
:func:`run_contenders` checks it: every contender must report the same ``episode_hash`` on
every episode, or a :class:`~palgym.errors.ConfigError` names the one that differs (e.g. a
model trained under another preset).

The heuristic table is the case with no learned contender (:func:`heuristic_table`): every
``ORDER/PLACEMENT`` heuristic contender on one episode per trace built at the episode seed
without the env (:func:`agents.evaluation.direct.seed_episodes`), through the same simulator
path, gathered into a :class:`palgym.report.Evaluation`.

Heuristics run through the env reproduce :func:`palgym.run_episode` bit for bit, so by
default (``heuristics_via="simulator"``) they run on the simulator directly on the env's
episodes (:mod:`agents.evaluation.direct`, many times faster, serially or through a
:data:`palgym.sweep.Runner`: ``--workers`` / ``--ray``); ``"env"`` steps them through the env
as agents. Learned agents and planners always step the env, in this process.

:class:`SideBySide` is what the command line asks for; :func:`run_side_by_side` builds its
contenders (learned agents, planners, then the heuristics with the reference and baselines
added), runs them and pairs them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agents.env_args import HEURISTIC_KWARGS
from agents.evaluation.contenders import (
    Contender,
    base_episode_kwargs,
    heuristic_contender,
    learned_contender,
    planner_contender,
    training_overlap,
)
from agents.evaluation.defaults import (
    BOOTSTRAP_UNITS,
    DEFAULT_BASELINE,
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_CONFIDENCE,
    DEFAULT_DEVICE,
    DEFAULT_REFERENCE,
    DEFAULT_RESAMPLES,
    HEURISTICS_VIA,
)
from agents.evaluation.direct import (
    can_run_direct,
    run_heuristics,
    run_heuristics_direct,
    seed_episodes,
)
from agents.evaluation.names import parse_heuristic
from agents.evaluation.summary import Comparison, summarise
from agents.ids import gym_id
from agents.rollout import EpisodeOutcome, rollout
from palgym.errors import ConfigError
from palgym.policies import QUEUE_ORDER_NAMES
from palgym.report import Evaluation, EvaluationSetup, policies_to_run, reference_baselines
from palgym.sim.workload import Trace
from palgym.simulate import EpisodeResult
from palgym.sweep import Runner

logger = logging.getLogger(__name__)


def _make_env(env_id: str, contender: Contender, traces: Sequence[Trace]) -> gym.Env[Any, Any]:
    env = gym.make(gym_id(env_id), **contender.env_kwargs, trace=list(traces))
    model = getattr(contender.agent, "model", None)
    if model is not None and model.observation_space != env.observation_space:
        env.close()
        raise ConfigError(
            f"{contender.model_path}: the model's observation space does not match the env's "
            f"({env_id} with {contender.env_kwargs}); evaluate with the env kwargs it was "
            "trained with")
    return env


def run_contenders(
    env_id: str,
    contenders: Sequence[Contender],
    traces: Sequence[Trace],
    seeds: Sequence[int],
    *,
    deterministic: bool = True,
    on_episode: Callable[[EpisodeOutcome], None] | None = None,
    heuristics_via: str = HEURISTICS_VIA[0],
    runner: Runner | None = None,
) -> dict[str, list[EpisodeOutcome]]:
    """Run every contender on every (trace, seed) episode, trace-major.

    Args:
        env_id: Gymnasium id.
        contenders: the policies (unique labels).
        traces: evaluation traces (unique names), run whole unless the env kwargs set
            ``window`` (then the env draws the window from the seed, equally for everyone).
        seeds: reset seeds; episode ``(i, s)`` is ``reset(seed=s, options={"trace": i})``.
        deterministic: greedy actions for learned agents.
        on_episode: called after each episode (e.g. a progress bar).
        heuristics_via: ``"simulator"`` (direct, when the reward is ``jct``) or ``"env"``.
        runner: runs the direct heuristics' episodes (:mod:`agents.evaluation.parallel`).

    Returns:
        ``{label: outcomes}`` in the order (trace, seed), keys in ``contenders`` order.

    Raises:
        ConfigError: for duplicate labels or trace names, no seed, an unknown
            ``heuristics_via``, or contenders that do not run identical episodes.
    """
    _check_unique("policy", [c.label for c in contenders])
    _check_unique("trace", [t.name for t in traces])
    if not seeds:
        raise ConfigError("give at least one seed")
    if heuristics_via not in HEURISTICS_VIA:
        raise ConfigError(f"heuristics_via must be one of {list(HEURISTICS_VIA)}")
    direct = [c for c in contenders if c.kind == "heuristic"
              and heuristics_via == "simulator" and can_run_direct(c.env_kwargs)]
    results: dict[str, list[EpisodeOutcome]] = {}
    for kwargs, group in _direct_groups(direct):
        results.update(run_heuristics_direct(env_id, kwargs, group, traces, seeds, on_episode,
                                             runner))
    for contender in contenders:
        if contender.label in results:
            continue
        if contender.kind == "selector":  # on the engine's rule selection
            from agents.evaluation.selectors import run_selector_contender

            results[contender.label] = run_selector_contender(env_id, contender, traces, seeds,
                                                              on_episode)
            continue
        env = _make_env(env_id, contender, traces)
        try:
            outcomes = []
            for index in range(len(traces)):
                for seed in seeds:
                    outcome = rollout(contender.agent, env, seed=int(seed),
                                      options={"trace": index}, deterministic=deterministic)
                    outcomes.append(outcome)
                    if on_episode is not None:
                        on_episode(outcome)
        finally:
            env.close()
        results[contender.label] = outcomes
        logger.info("%s: %d episodes", contender.label, len(outcomes))
    ordered = {c.label: results[c.label] for c in contenders}
    check_identical_episodes(ordered)
    return ordered


def _direct_groups(contenders: Sequence[Contender]
                   ) -> list[tuple[dict[str, Any], list[Contender]]]:
    """Heuristics grouped by their episode kwargs (``sticky`` / ``class_reorder`` dropped: the
    simulator runs each policy with its own; a queue order of its own makes a group), in
    first-seen order."""
    groups: dict[str, tuple[dict[str, Any], list[Contender]]] = {}
    for contender in contenders:
        kwargs = {k: v for k, v in contender.env_kwargs.items() if k not in HEURISTIC_KWARGS}
        key = repr(sorted(kwargs.items()))
        groups.setdefault(key, (kwargs, []))[1].append(contender)
    return list(groups.values())


def check_identical_episodes(results: Mapping[str, Sequence[EpisodeOutcome]]) -> None:
    """Every contender saw the same episodes (hashes equal position by position).

    Raises:
        ConfigError: naming the first contender and episode that differ.
    """
    labels = list(results)
    first = [o.episode_hash for o in results[labels[0]]]
    for label in labels[1:]:
        for position, outcome in enumerate(results[label]):
            if outcome.episode_hash != first[position]:
                raise ConfigError(
                    f"{label!r} ran a different episode than {labels[0]!r} on {outcome.trace} "
                    f"(episode {position}: hash {outcome.episode_hash} vs {first[position]}): "
                    "its env kwargs (preset, cluster, profile, ...) differ; pass them on the "
                    "command line so that every policy shares them")


def _check_unique(what: str, names: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(f"{what} {name!r} is given twice")
        seen.add(name)


@dataclass(frozen=True)
class SideBySide:
    """What to compare, on what.

    Attributes:
        env_id: the env all contenders act in.
        agents: model specs (zip, run folder or ``pretrained[:NAME]``), in table order.
        heuristics: heuristic names ``[ORDER/]PLACEMENT[+SUFFIX]`` (:mod:`agents.evaluation.names`;
            the reference and baselines are added if missing).
        traces: evaluation traces (unique names).
        trace_source: where they came from (for the report).
        seeds: reset seeds; every (trace, seed) is one episode.
        overrides: episode env kwargs from the command line (preset, cluster, ...).
        reference / baseline: the two policies every policy is paired with.
        confidence / resamples / bootstrap_seed / bootstrap_unit: the bootstrap interval's
            settings (unit ``episode`` or ``trace``).
        device: torch device of learned agents.
        heuristics_via: ``simulator`` (default, fast) or ``env`` (heuristics step the env).
        planners: rollout planner specs (:mod:`agents.planning.planner`), after the learned agents.
        trust_model: load the agents' zips with SB3's unpickling (runs any code they hold);
            by default nothing is unpickled (:func:`agents.sb3.model_zip.load_model`); import
            the modules a selector file's rules name.
        selectors: rule selector specs (``selector:PATH``, ``selector:pretrained:NAME``;
            :mod:`agents.evaluation.selectors`), after the learned agents.
    """

    env_id: str
    agents: tuple[str, ...]
    heuristics: tuple[str, ...]
    traces: tuple[Trace, ...]
    trace_source: str
    seeds: tuple[int, ...]
    overrides: dict[str, Any] = field(default_factory=dict)
    reference: str = DEFAULT_REFERENCE
    baseline: str = DEFAULT_BASELINE
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED
    bootstrap_unit: str = BOOTSTRAP_UNITS[0]
    device: str = DEFAULT_DEVICE
    heuristics_via: str = HEURISTICS_VIA[0]
    planners: tuple[str, ...] = ()
    trust_model: bool = False
    selectors: tuple[str, ...] = ()


def contenders_of(request: SideBySide) -> list[Contender]:
    """Learned agents first, then rule selectors, planners, and the heuristics (plus reference
    and baselines).

    Raises:
        ConfigError: for an unknown heuristic, or a model that cannot be loaded.
    """
    learned = [learned_contender(spec, request.env_id, request.overrides, request.device,
                                 trust_model=request.trust_model)
               for spec in request.agents]
    base = base_episode_kwargs(learned, request.overrides)
    selectors = []
    if request.selectors:
        from agents.evaluation.selectors import selector_contender

        selectors = [selector_contender(spec, base, request.trust_model)
                     for spec in dict.fromkeys(request.selectors)]
    planners = [planner_contender(spec, base) for spec in dict.fromkeys(request.planners)]
    return [*learned, *selectors, *planners, *heuristic_contenders(request, base)]


def heuristic_names(request: SideBySide) -> list[str]:
    """The heuristics of a side-by-side run: the requested ones (duplicates dropped), then the
    reported baselines, with the reference first if it is missing."""
    names = list(dict.fromkeys(request.heuristics))
    for extra in reference_baselines(request.baseline):
        if extra not in names:
            names.append(extra)
    if request.reference not in names:
        names.insert(0, request.reference)
    return names


def heuristic_contenders(request: SideBySide, base: Mapping[str, Any]) -> list[Contender]:
    """One contender per :func:`heuristic_names` name, parsed by
    :func:`agents.evaluation.names.parse_heuristic` (``ORDER/``: its own queue order).

    Raises:
        ConfigError: naming a bad heuristic name.
    """
    contenders = []
    for text in heuristic_names(request):
        name = parse_heuristic(text, "heuristic")
        contenders.append(heuristic_contender(name.placement_name, base,
                                              queue_order=name.queue_order))
    return contenders


def run_side_by_side(
    request: SideBySide, on_episode: Callable[[EpisodeOutcome], None] | None = None,
    runner: Runner | None = None,
) -> Comparison:
    """Run every contender on every (trace, seed) and pair them (see :mod:`agents.evaluation`).

    Raises:
        ConfigError: for bad names, models or env kwargs, or non-identical episodes.
    """
    contenders = contenders_of(request)
    for warning in training_overlap(contenders, request.traces):
        logger.warning(warning)
    outcomes = run_contenders(request.env_id, contenders, request.traces, request.seeds,
                              on_episode=on_episode, heuristics_via=request.heuristics_via,
                              runner=runner)
    return summarise(
        request.env_id, contenders, outcomes, {t.name: t.content_hash() for t in request.traces},
        request.trace_source, request.seeds, reference=request.reference,
        baseline=request.baseline, confidence=request.confidence, resamples=request.resamples,
        bootstrap_seed=request.bootstrap_seed, bootstrap_unit=request.bootstrap_unit,
    )


# --------------------------------------------------------------------------- the heuristic table
def heuristic_table(
    traces: Sequence[Trace],
    policies: Sequence[str],
    queue_orders: Sequence[str],
    setup: EvaluationSetup,
    baseline: str = DEFAULT_BASELINE,
    on_result: Callable[[EpisodeResult], None] | None = None,
    runner: Runner | None = None,
) -> Evaluation:
    """The comparison with no learned contender: every (queue order, placement) on one episode
    per trace, built at ``setup.seed`` without the env.

    Args:
        traces: traces with unique ids.
        policies: placement names; the reported baselines are added if missing.
        queue_orders: queue order names.
        setup: cluster, options, profile source, seed, durations and belief.
        baseline: placement the improvements are relative to.
        on_result: called after each run, in run order (e.g. to advance a progress bar).
        runner: runs the (trace, queue order, policy) runs (default: here, one after the
            other; :mod:`agents.evaluation.parallel`: a process pool or Ray; equal results).

    Returns:
        The evaluation: results trace-major, then queue order, then policy.

    Raises:
        PalgymError: for unknown names, an unusable profile or a run that can never end.
    """
    run_policies = policies_to_run(policies, baseline)
    _check_queue_orders(queue_orders)
    _check_unique("trace", [t.name for t in traces])
    contenders = [heuristic_contender(name, {}, queue_order=order)
                  for order in queue_orders for name in run_policies]
    episodes = seed_episodes(traces, setup)
    results = tuple(result for _, _, result in
                    run_heuristics(episodes, contenders, runner, on_result))
    return Evaluation(
        results=results, traces=tuple(t.name for t in traces), policies=run_policies,
        queue_orders=tuple(queue_orders), baseline=baseline,
        episode_hashes={t.name: e.episode.episode_hash() for t, e in zip(traces, episodes,
                                                                       strict=True)},
    )


def _check_queue_orders(queue_orders: Sequence[str]) -> None:
    unknown = [name for name in queue_orders if name not in QUEUE_ORDER_NAMES]
    if unknown or not queue_orders:
        raise ConfigError(
            f"unknown or no queue order(s) {unknown}; known: {', '.join(QUEUE_ORDER_NAMES)}")
