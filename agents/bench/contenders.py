"""The contenders of one bench unit: the specs of a split built into
:mod:`agents.evaluation.contenders` on the split's env kwargs (a model on the task's world,
a planner, a heuristic under the task's queue-order regime), and the env kwargs each member
adds to the split's, recorded in the results file's header (:func:`member_kwargs`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from palgym.bench.results import AGENT_KWARGS
from palgym.bench.suites import Task
from palgym.errors import ConfigError
from palgym.policies.contender_spec import parse_heuristic

DROPPED_KWARGS: tuple[str, ...] = ("reward", "reward_scale", "baseline_policy", "strict",
                                   "backend", "render_mode")
"""A model's recorded env kwargs the benchmark leaves at the env's defaults (they change
neither the episode nor an action's effect)."""
WORLD_DEFAULTS: tuple[str, ...] = (
    "preset", "cluster", "queue_order", "locality_penalty", "round_duration_s", "max_rounds",
    "profile", "variability_data", "window", "belief", "duration_knowledge", "estimate_sigma")
"""The env kwargs a task fixes for every contender (its own value, else the env's default)."""


def _defaults(split_kwargs: dict[str, Any], where: str) -> dict[str, Any]:
    """Every env kwarg: the split's value, else the env's default."""
    from agents.env_args import env_config

    config = env_config(split_kwargs, where)
    return {f: getattr(config, f) for f in config.__dataclass_fields__}


def _world(task: Task, split_kwargs: dict[str, Any]) -> dict[str, Any]:
    """Every :data:`WORLD_DEFAULTS` kwarg: the split's value, else the env's default (under
    the free regime the queue order is left to the contender)."""
    values = _defaults(split_kwargs, f"task {task.name}")
    world = {k: values[k] for k in WORLD_DEFAULTS}
    if task.queue_order_regime == "free":
        del world["queue_order"]
    return world


def build_contenders(task: Task, split_kwargs: dict[str, Any], specs: Sequence[str], kind: str,
                     device: str = "cpu", trust_model: bool = False) -> list[Any]:
    """The contenders of ``specs`` on one split (see the module docstring).

    Raises:
        ConfigError: for a bad name or model, one trained on another env id or layout, a
            queue order the fixed regime refuses, or a model's env kwarg that changes the
            task's world.
    """
    from agents.evaluation.contenders import (
        HEURISTIC_MAX_TIERS,
        heuristic_contender,
        learned_contender,
        planner_contender,
    )
    from agents.evaluation.names import importable_from_cwd

    contenders = []
    for spec in specs:
        if kind == "learned":
            world = _world(task, split_kwargs)
            found = learned_contender(spec, task.env_id, world, device, trust_model=trust_model)
            kwargs = {k: v for k, v in found.env_kwargs.items() if k not in DROPPED_KWARGS}
            kwargs.setdefault("queue_order", task.queue_order)
            contenders.append(replace(found, env_kwargs=kwargs))
        elif kind == "planner":  # like a heuristic, it reads no observation: any tier count
            contenders.append(planner_contender(
                spec, {"max_tiers": HEURISTIC_MAX_TIERS, **split_kwargs}))
        else:
            if ":" in spec:
                importable_from_cwd()
            name = parse_heuristic(spec, f"task {task.name} heuristic")
            if (task.queue_order_regime == "fixed" and name.queue_order is not None
                    and name.queue_order != task.queue_order):
                raise ConfigError(f"{spec!r}: task {task.name} runs every contender under "
                                  f"queue order {task.queue_order!r} (regime fixed)")
            contenders.append(heuristic_contender(name.placement_name, split_kwargs,
                                                  queue_order=name.queue_order))
    return contenders


def member_kwargs(task: Task, split_kwargs: dict[str, Any], contender: Any) -> dict[str, Any]:
    """The env kwargs ``contender`` adds to the split's (:data:`AGENT_KWARGS`).

    Raises:
        ConfigError: for a kwarg outside :data:`AGENT_KWARGS` that differs from the task's.
    """
    shared = _defaults(split_kwargs, f"task {task.name}")
    own: dict[str, Any] = {}
    for key, value in contender.env_kwargs.items():
        if key in DROPPED_KWARGS:  # e.g. a planner's strict env: no valid action differs
            continue
        if key in AGENT_KWARGS and shared[key] != value:
            own[key] = value
        elif key not in AGENT_KWARGS and shared[key] != value:
            raise ConfigError(f"{contender.label}: env kwarg {key}={value!r} differs from task "
                              f"{task.name}'s {shared[key]!r}")
    if "queue_order" in own and task.queue_order_regime == "fixed":
        raise ConfigError(f"{contender.label}: queue order {own['queue_order']!r}, but task "
                          f"{task.name} fixes {task.queue_order!r}")
    if "queue_order" in own:  # a user's class: the MODULE:CLASS a replay imports, not its name
        from palgym.policies.loader import origins_of

        own["queue_order"] = next(iter(origins_of((), (own["queue_order"],))),
                                  own["queue_order"])
    return own


__all__ = ["DROPPED_KWARGS", "WORLD_DEFAULTS", "build_contenders", "member_kwargs"]
