"""Evaluate learned agents and heuristics side by side on identical episodes (the logic of
``evaluate.py --agent``).

Every contender acts through the palgym env on the same episode list: for each trace ``i``
and seed ``s``, ``env.reset(seed=s, options={"trace": i})`` on the whole trace. The episode
(trace, profile, cluster, config and the episode seed drawn from ``s``) does not depend on the
contender, and :func:`run_contenders` checks it: every contender must report the same
``episode_hash`` on every episode, or a :class:`~palgym.errors.ConfigError` names the one that
differs (e.g. a model trained under another preset).

Env kwargs of a contender: a learned agent's come from its run configuration
(``config.yml`` ``env_kwargs``, without ``trace`` / ``window``); a heuristic's are the episode
kwargs (:data:`EPISODE_KWARGS`) of the first learned agent (or the env defaults) plus the
``sticky`` / ``class_reorder`` it needs. Command-line overrides (preset, cluster, ...) apply
to all. Heuristics run through the env reproduce :func:`palgym.run_episode` bit for bit, so by
default (``heuristics_via="simulator"``) they run on the simulator directly on the env's
episodes (:mod:`agents.heuristic_runs`, many times faster); ``"env"`` steps them through the
env as agents.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from agents.base import Agent, HeuristicAgent
from agents.heuristic_runs import can_run_direct, run_heuristics_direct
from agents.ids import canonical_env_id, gym_id
from agents.rollout import EpisodeOutcome, rollout
from palgym.errors import ConfigError
from palgym.sim.workload import Trace
from palgym.sweep import Runner

logger = logging.getLogger(__name__)

EPISODE_KWARGS: tuple[str, ...] = (
    "preset", "cluster", "queue_order", "locality_penalty", "round_duration_s", "max_rounds",
    "profile", "variability_data", "window", "belief",
)
"""Env kwargs that shape the episodes (shared by every contender)."""
HEURISTICS_VIA: tuple[str, ...] = ("simulator", "env")
EPISODE_SOURCE_KWARGS: tuple[str, ...] = ("trace", "window")
"""Env kwargs of a training run that evaluation replaces (the traces are the evaluation's)."""


@dataclass(frozen=True)
class Contender:
    """One policy of a comparison.

    Attributes:
        label: its name in tables (a heuristic's name, or the ``--agent`` argument).
        kind: ``"heuristic"`` or ``"learned"``.
        agent: the agent.
        env_kwargs: kwargs of its env (without ``trace``).
        model_path: the model zip (learned only).
        algo: its algorithm (learned only).
        model_size_bytes: size of the zip (learned only).
        training_traces: trace ids of the training split(s) recorded in its ``config.yml``.
    """

    label: str
    kind: str
    agent: Agent
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    model_path: str | None = None
    algo: str | None = None
    model_size_bytes: int | None = None
    training_traces: tuple[str, ...] = ()


HEURISTIC_MAX_TIERS = 16
"""``max_tiers`` of a heuristic's env unless the command sets it: a heuristic reads no
observation, so its env is made wide enough for any profile (the silhouette rule gives at most
6 slowdown tiers per class, the artifact's outliers rule 2 + the class's 3-sigma outliers),
whatever ``max_tiers`` the learned agents were trained with."""


def heuristic_contender(name: str, base_kwargs: Mapping[str, Any]) -> Contender:
    """A placement heuristic with the env kwargs it needs (``max_tiers``
    :data:`HEURISTIC_MAX_TIERS` unless ``base_kwargs`` sets it).

    Raises:
        ConfigError: for an unknown placement name.
    """
    agent = HeuristicAgent(name)
    kwargs = {"max_tiers": HEURISTIC_MAX_TIERS, **dict(base_kwargs), **agent.env_kwargs}
    return Contender(name, "heuristic", agent, kwargs)


def learned_api() -> tuple[Any, Any, Any]:
    """``(load_agent, model_config, resolve_model_path)`` of :mod:`agents.learned`.

    Raises:
        ConfigError: naming the ``train`` extra when its packages are missing.
    """
    try:
        from agents.learned import load_agent, model_config, resolve_model_path
    except ImportError as exc:
        raise ConfigError(f"learned agents need the training extra ({exc}): "
                          "pip install -e '.[train]'") from None
    return load_agent, model_config, resolve_model_path


def learned_contender(
    spec: str,
    env_id: str,
    overrides: Mapping[str, Any],
    device: str = "cpu",
) -> Contender:
    """Load ``--agent`` ``spec`` (a zip, a run folder or ``pretrained[:NAME]``).

    Args:
        spec: the model spec; also the contender's label.
        env_id: the evaluation env id; the model's ``config.yml`` must name the same (if any).
        overrides: episode kwargs from the command line, applied over the model's.
        device: torch device.

    Returns:
        The contender (env kwargs: the run's ``env_kwargs`` without trace / window, then
        ``overrides``).

    Raises:
        ConfigError: for a missing or unrecognised model, or one trained on another env id.
    """
    load_agent, model_config, resolve_model_path = learned_api()
    path = resolve_model_path(spec, env_id)
    config = model_config(path)
    if not config:
        logger.warning(
            "no run config (config.yml or %s.yml) beside %s: evaluating it with %s's default "
            "env arguments plus the command line's, and the traces it was trained on are "
            "unknown (no training-overlap check)", path.stem, path, env_id)
    trained_on = config.get("env_id")
    if trained_on is not None and canonical_env_id(str(trained_on)) != canonical_env_id(env_id):
        raise ConfigError(f"{path} was trained on {trained_on}, not on {env_id} (--env)")
    kwargs = {k: v for k, v in dict(config.get("env_kwargs") or {}).items()
              if k not in EPISODE_SOURCE_KWARGS}
    agent = load_agent(path, device=device, name=spec)
    trained = tuple(label for described in dict(config.get("trace_sets") or {}).values()
                    for label in dict(described.get("splits") or {}).get("train", []))
    return Contender(spec, "learned", agent, {**kwargs, **dict(overrides)}, str(path),
                     agent.algo, path.stat().st_size, trained)


def training_overlap(contenders: Sequence[Contender], traces: Sequence[Trace]) -> list[str]:
    """Warnings for learned contenders evaluated on a trace id they trained on."""
    names = {t.name for t in traces}
    return [f"{c.label} trained on {sorted(names & set(c.training_traces))}: these results "
            "are not a held-out evaluation"
            for c in contenders if names & set(c.training_traces)]


def base_episode_kwargs(contenders: Sequence[Contender], overrides: Mapping[str, Any]
                        ) -> dict[str, Any]:
    """The episode kwargs heuristics use: the first learned agent's, then ``overrides``."""
    for contender in contenders:
        if contender.kind == "learned":
            first = {k: v for k, v in contender.env_kwargs.items() if k in EPISODE_KWARGS}
            return {**first, **dict(overrides)}
    return dict(overrides)


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
    heuristics_via: str = "simulator",
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
        runner: runs the direct heuristics' episodes (see :mod:`agents.parallel`).

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
    for kwargs, labels in _direct_groups(direct):
        results.update(run_heuristics_direct(env_id, kwargs, labels, traces, seeds, on_episode,
                                             runner))
    for contender in contenders:
        if contender.label in results:
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


def _direct_groups(contenders: Sequence[Contender]) -> list[tuple[dict[str, Any], list[str]]]:
    """Heuristics grouped by their episode kwargs (``sticky`` / ``class_reorder`` dropped: the
    simulator runs each policy with its own), in first-seen order."""
    groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for contender in contenders:
        kwargs = {k: v for k, v in contender.env_kwargs.items()
                  if k not in ("sticky", "class_reorder")}
        key = repr(sorted(kwargs.items()))
        groups.setdefault(key, (kwargs, []))[1].append(contender.label)
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


RUN_FOLDER_MODELS = frozenset({"model.zip", "best_model.zip"})


def learning_curve_files(contender: Contender) -> tuple[Path, Path] | None:
    """``(evaluations.npz, references.yml)`` of a learned contender, or None.

    A run folder's model (``model.zip`` / ``best_model.zip``) uses the folder's
    ``evaluations.npz`` and ``references.yml``; any other zip ``NAME.zip`` (e.g. in
    ``agents/pretrained/``) uses ``NAME-evaluations.npz`` and ``NAME-references.yml`` beside
    it. The references file may be missing.
    """
    if contender.model_path is None:
        return None
    model = Path(contender.model_path)
    if model.name in RUN_FOLDER_MODELS:
        files = (model.parent / "evaluations.npz", model.parent / "references.yml")
    else:
        files = (model.with_name(f"{model.stem}-evaluations.npz"),
                 model.with_name(f"{model.stem}-references.yml"))
    return files if files[0].is_file() else None
