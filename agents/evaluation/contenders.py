"""The contenders of a comparison: every policy that acts on the comparison's episodes.

One abstraction, :class:`Contender`, for four kinds (:data:`CONTENDER_KINDS`), each read from
a contender spec (:func:`palgym.policies.contender_spec.parse_contender`, the one grammar):

- ``heuristic``: a placement (with its backfill suffix, e.g. ``pal+easy``) under the episode's
  queue order, or under its own (:func:`heuristic_contender` ``queue_order``: the
  ``ORDER/PLACEMENT`` combinations of ``--best-heuristic``);
- ``learned``: a saved SB3 / sb3-contrib model (:func:`learned_contender`);
- ``selector``: a rule selector file, run on the engine's rule selection
  (:mod:`agents.evaluation.selectors`);
- ``planner``: the rollout planner over a base heuristic, or the search over rules
  (:func:`planner_contender`, :mod:`agents.planning`).

Env kwargs of a contender: a learned agent's come from its run configuration (``config.yml``
``env_kwargs``, without ``trace`` / ``window``); a heuristic's and a planner's are the episode
kwargs (:data:`~agents.env_args.EPISODE_KWARGS`) of the first learned agent (or the
env defaults) plus the ``sticky`` / ``class_reorder`` it needs. Command-line overrides (preset,
cluster, ...) apply to all; every name is checked against the env's arguments
(:mod:`agents.env_args`). :mod:`agents.evaluation.comparison` runs them on identical
episodes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.base import Agent, HeuristicAgent
from agents.data_dir import require_resolved
from agents.env_args import (
    EPISODE_SOURCE_KWARGS,
    env_config,
    episode_kwargs,
    plain_value,
)
from agents.ids import canonical_env_id
from agents.sb3.layouts import check_layout
from palgym.errors import ConfigError
from palgym.policies.contender_spec import format_label
from palgym.sim.workload import Trace

logger = logging.getLogger(__name__)

CONTENDER_KINDS: tuple[str, ...] = ("learned", "selector", "planner", "heuristic")
"""The kinds of contender, in table order."""


@dataclass(frozen=True)
class Contender:
    """One policy of a comparison.

    Attributes:
        label: its name in tables (a heuristic's name or ``ORDER/PLACEMENT``, the ``--agent``
            argument, a planner's canonical spec).
        kind: one of :data:`CONTENDER_KINDS`.
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


def heuristic_contender(name: str, base_kwargs: Mapping[str, Any],
                        queue_order: str | None = None) -> Contender:
    """A placement heuristic with the env kwargs it needs (``max_tiers``
    :data:`HEURISTIC_MAX_TIERS` unless ``base_kwargs`` sets it).

    Args:
        name: placement name (with its backfill suffix, if any).
        base_kwargs: the episode kwargs.
        queue_order: the contender's own queue order (label ``ORDER/NAME``); None: the
            episode kwargs' (label ``NAME``).

    Raises:
        ConfigError: for an unknown placement name.
    """
    agent = HeuristicAgent(name)
    own = {} if queue_order is None else {"queue_order": queue_order}
    kwargs = {"max_tiers": HEURISTIC_MAX_TIERS, **dict(base_kwargs), **own, **agent.env_kwargs}
    label = format_label(queue_order, name)
    return Contender(label, "heuristic", agent, kwargs)


def planner_contender(text: str, base_kwargs: Mapping[str, Any]) -> Contender:
    """A contender of kind ``planner`` for spec ``text``
    (:func:`agents.planning.planner.planner_agent`), on ``base_kwargs`` plus the env kwargs
    the planner needs.

    Raises:
        ConfigError: for a bad spec.
    """
    from agents.planning.planner import planner_agent

    agent = planner_agent(text)
    return Contender(agent.name, "planner", agent, {**dict(base_kwargs), **agent.env_kwargs})


def learned_api() -> tuple[Any, Any, Any]:
    """``(load_agent, model_config, resolve_model_path)`` of :mod:`agents.sb3.learned`.

    Raises:
        ConfigError: naming the ``train`` extra when its packages are missing.
    """
    import importlib.util

    missing = [name for name in ("torch", "stable_baselines3", "sb3_contrib")
               if importlib.util.find_spec(name) is None]
    if missing:  # the model modules import them lazily: say so before any work
        raise ConfigError(f"learned agents need the training extra (missing: "
                          f"{', '.join(missing)}): pip install -e '.[train]'")
    try:
        from agents.sb3.learned import load_agent, model_config, resolve_model_path
    except ImportError as exc:
        raise ConfigError(f"learned agents need the training extra ({exc}): "
                          "pip install -e '.[train]'") from None
    return load_agent, model_config, resolve_model_path


def learned_contender(
    spec: str,
    env_id: str,
    overrides: Mapping[str, Any],
    device: str = "cpu",
    *,
    trust_model: bool = False,
) -> Contender:
    """Load ``--agent`` ``spec`` (a zip, a run folder or ``pretrained[:NAME]``).

    Args:
        spec: the model spec; also the contender's label.
        env_id: the evaluation env id; the model's ``config.yml`` must name the same (if any).
        overrides: episode kwargs from the command line, applied over the model's.
        device: torch device.
        trust_model: load the zip with SB3's unpickling (:func:`agents.sb3.learned.load_agent`).

    Returns:
        The contender (env kwargs: the run's ``env_kwargs`` without trace / window, then
        ``overrides``; each value ``overrides`` changes is logged as a warning,
        :func:`warn_overridden`).

    Raises:
        ConfigError: for a missing or unrecognised model, one trained on another env id or
            env layout (:func:`agents.sb3.layouts.check_layout`), an env kwarg the env does not
            take, or a path recorded relative to an unset ``PALGYM_DATA_DIR`` that the command
            line does not override.
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
    warn_overridden(spec, kwargs, overrides)
    where = f"{spec}: the env kwargs of its run config and of the command line"
    kwargs = require_resolved({**kwargs, **dict(overrides)}, where)
    env_config(kwargs, where, env_id)
    check_layout(path, config, env_id, kwargs)
    agent = load_agent(path, device=device, name=spec, trust_model=trust_model)
    trained = tuple(label for described in dict(config.get("trace_sets") or {}).values()
                    for label in dict(described.get("splits") or {}).get("train", []))
    return Contender(spec, "learned", agent, kwargs, str(path), agent.algo,
                     path.stat().st_size, trained)


def warn_overridden(spec: str, recorded: Mapping[str, Any], overrides: Mapping[str, Any]) -> None:
    """Log a warning for each env kwarg the command line (``overrides``) sets to another value
    than the model's run config (``recorded``), naming the key, both values and the one used
    (the command line's)."""
    for key in sorted(set(recorded) & set(overrides)):
        if recorded[key] != overrides[key]:
            given, own = plain_value(overrides[key]), plain_value(recorded[key])
            logger.warning("%s: env kwarg %s: the command line gives %s, the model's run config "
                           "%s; using the command line's %s", spec, key, given, own, given)


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
            return {**episode_kwargs(contender.env_kwargs), **dict(overrides)}
    return dict(overrides)


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
