"""The pickled entries of a saved SB3 model's ``data``, supplied without unpickling them.

SB3 stores each model attribute JSON cannot hold as ``{":type:": "<class ...>", ":serialized:":
<base64 cloudpickle>, <its attributes JSON can hold, or their str()>}``. :data:`SUPPLIERS` maps
each entry palgym knows to a function building its value from those readable attributes,
checked against what palgym trains, and from the run configuration; never from the pickle
(:mod:`agents.sb3.model_zip` hands the values to SB3's ``load`` as ``custom_objects``):

- ``policy_class``: the class named by its ``__module__`` and its methods' names
  (``<function NAME.__init__ at ...>``), if that is one of :data:`POLICY_CLASSES` for the
  algorithm (palgym's ``CandidateScoringPolicy``; SB3's ``MultiInputPolicy`` classes);
- ``rollout_buffer_class`` / ``replay_buffer_class``: likewise, one of :data:`BUFFER_CLASSES`;
- ``policy_kwargs``: its readable items: JSON values as they are; ``<class '...'>`` strings of
  the activations and optimizers :mod:`agents.sb3.hyperparams` accepts, as those classes;
- ``observation_space``: a ``Dict`` of ``Box`` es with scalar bounds rebuilt from its readable
  ``spaces`` (which must print exactly as rebuilt); ``action_space``: ``Discrete(n, start)``;
- ``learning_rate``, ``clip_range``, ``clip_range_vf``: SB3's ``ConstantSchedule`` /
  ``LinearSchedule`` rebuilt from their readable form; else (e.g. a ``lin_`` schedule of
  :mod:`agents.sb3.hyperparams`, a closure) from the run configuration's hyperparameters as
  training built them; else, when the model is loaded to act only, the algorithm's default
  (schedules are read only by training); ``train_freq`` (DQN): the configuration's value or
  the algorithm's default; ``lr_schedule`` and ``exploration_schedule``: rebuilt from
  ``learning_rate`` and the exploration settings, as SB3's ``_setup_model`` rebuilds them;
- ``_last_obs``, ``_last_original_obs``, ``_last_episode_starts``, ``ep_info_buffer``,
  ``ep_success_buffer``: None (the interrupted rollout, which a resumed run restarts from an
  env reset as SB3 does whenever ``load`` is given an env, and the 100-episode logging
  window, which a resumed run starts afresh).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.sb3.factory import algo_class
from agents.sb3.hyperparams import ACTIVATIONS, OPTIMIZERS, model_kwargs

PICKLED = ":serialized:"
TYPE = ":type:"
POLICY_CLASSES: dict[str, tuple[str, ...]] = {
    "maskable_ppo": ("agents.sb3.policies.CandidateScoringPolicy",
                     "agents.policies.CandidateScoringPolicy",
                     "sb3_contrib.common.maskable.policies.MaskableMultiInputActorCriticPolicy"),
    "ppo": ("stable_baselines3.common.policies.MultiInputActorCriticPolicy",),
    "dqn": ("stable_baselines3.dqn.policies.MultiInputPolicy",),
}
"""Policy classes (``module.Class``) palgym loads, per algorithm (its envs' Dict spaces)."""
BUFFER_CLASSES: dict[str, tuple[str, ...]] = {
    "maskable_ppo": ("sb3_contrib.common.maskable.buffers.MaskableDictRolloutBuffer",),
    "ppo": ("stable_baselines3.common.buffers.DictRolloutBuffer",),
    "dqn": ("stable_baselines3.common.buffers.DictReplayBuffer",),
}
"""Rollout / replay buffer classes palgym loads, per algorithm."""
_METHOD = re.compile(r"<function (?P<cls>[A-Za-z_]\w*)\.[A-Za-z_]\w* at 0x[0-9a-fA-F]+>")
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)"
_CONSTANT = re.compile(rf"ConstantSchedule\(val=({_NUMBER})\)")
_LINEAR = re.compile(
    rf"LinearSchedule\(start=({_NUMBER}), end=({_NUMBER}), end_fraction=({_NUMBER})\)")
_BOX = re.compile(rf"'(?P<key>\w+)': Box\((?P<low>{_NUMBER}), (?P<high>{_NUMBER}), "
                  r"\((?P<shape>[\d, ]*)\), (?P<dtype>float32|float64)\)")
_SCHEDULE_TYPES = ("<class 'stable_baselines3.common.utils.FloatSchedule'>",
                   "<class 'stable_baselines3.common.utils.ConstantSchedule'>",
                   "<class 'stable_baselines3.common.utils.LinearSchedule'>")


class UnsuppliedError(Exception):
    """Why one pickled entry cannot be supplied (the loader collects these into one error)."""


@dataclass(frozen=True)
class EntryContext:
    """What a supplier may read: the algorithm, the zip's ``data`` (readable parts only), the
    run configuration's ``hyperparams`` (None: none) and whether the model will be trained."""

    algo: str
    data: Mapping[str, Any]
    hyperparams: Mapping[str, Any] | None
    for_training: bool


def _import(qualified: str) -> Any:
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _class_of(entry: Mapping[str, Any], allowed: tuple[str, ...]) -> Any:
    """The class a pickled class entry names (readable module + method names), if allowed."""
    module = entry.get("__module__")
    names = {m["cls"] for v in entry.values()
             if isinstance(v, str) and (m := _METHOD.fullmatch(v)) is not None}
    if not isinstance(module, str) or len(names) != 1:
        raise UnsuppliedError("its class cannot be told from its readable attributes")
    qualified = f"{module}.{names.pop()}"
    if qualified not in allowed:
        raise UnsuppliedError(f"{qualified} is not one of {', '.join(allowed)}")
    return _import(qualified)


def _policy_class(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    return _class_of(entry, POLICY_CLASSES[ctx.algo])


def _buffer_class(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    return _class_of(entry, BUFFER_CLASSES[ctx.algo])


def torch_classes() -> dict[str, type]:
    """``"<class 'torch.nn.modules.activation.Tanh'>"`` -> class, for the activations and
    optimizers :mod:`agents.sb3.hyperparams` accepts."""
    import torch

    classes = [getattr(torch.nn, n) for n in ACTIVATIONS]
    classes += [getattr(torch.optim, n) for n in OPTIMIZERS]
    return {str(c): c for c in classes}


def _policy_kwargs(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> dict[str, Any]:
    if entry.get(TYPE) != "<class 'dict'>":
        raise UnsuppliedError(f"a {entry.get(TYPE)}, not a dict")
    known = torch_classes()
    kwargs: dict[str, Any] = {}
    for name, value in entry.items():
        if name in (TYPE, PICKLED):
            continue
        if isinstance(value, str):  # the str() of a value JSON cannot hold
            if value not in known:
                raise UnsuppliedError(f"{name}={value!r} is not an activation or optimizer class "
                                  "palgym knows")
            value = known[value]
        kwargs[name] = value
    return kwargs


def _observation_space(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    from gymnasium import spaces

    text = entry.get("spaces")
    if entry.get(TYPE) != "<class 'gymnasium.spaces.dict.Dict'>" or not isinstance(text, str):
        raise UnsuppliedError(f"a {entry.get(TYPE)}, not a Dict of Boxes")
    try:
        space = spaces.Dict({
            m["key"]: spaces.Box(float(m["low"]), float(m["high"]),
                                 tuple(int(s) for s in m["shape"].split(",") if s.strip()),
                                 np.dtype(m["dtype"]))
            for m in _BOX.finditer(text)})
    except (ValueError, AssertionError) as exc:
        raise UnsuppliedError(f"its spaces do not build: {exc}") from None
    if str(space.spaces) != text:
        raise UnsuppliedError("not a Dict of Boxes with scalar bounds in key order")
    return space


def _action_space(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    from gymnasium import spaces

    n, start = entry.get("n"), entry.get("start")
    if (entry.get(TYPE) != "<class 'gymnasium.spaces.discrete.Discrete'>"
            or not isinstance(n, str) or not isinstance(start, str)
            or not re.fullmatch(r"\d+", n) or not re.fullmatch(r"-?\d+", start)
            or entry.get("dtype") != "int64"):
        raise UnsuppliedError(f"a {entry.get(TYPE)}, not a Discrete space")
    try:
        return spaces.Discrete(int(n), start=int(start))
    except (ValueError, AssertionError) as exc:
        raise UnsuppliedError(f"Discrete({n}, start={start}) does not build: {exc}") from None


def _readable_schedule(entry: Mapping[str, Any]) -> Any:
    """SB3's schedule rebuilt from its readable form, or None."""
    from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule

    kind = entry.get(TYPE)
    if kind == _SCHEDULE_TYPES[0]:
        text = str(entry.get("value_schedule", ""))
        if (m := _CONSTANT.fullmatch(text)) is not None:
            return FloatSchedule(ConstantSchedule(float(m[1])))
        if (m := _LINEAR.fullmatch(text)) is not None:
            return FloatSchedule(LinearSchedule(float(m[1]), float(m[2]), float(m[3])))
        return None
    values = [entry.get(k) for k in (("val",) if kind == _SCHEDULE_TYPES[1]
                                     else ("start", "end", "end_fraction"))]
    if kind not in _SCHEDULE_TYPES[1:] or not all(isinstance(v, int | float) for v in values):
        return None
    numbers = [float(v) for v in values]  # type: ignore[arg-type]
    return (ConstantSchedule if kind == _SCHEDULE_TYPES[1] else LinearSchedule)(*numbers)


def _configured(key: str, ctx: EntryContext) -> Any:
    """``key`` as training built it: the run configuration's value, else the algorithm's
    default; only the default without a configuration, and only to act (not to train)."""
    if ctx.hyperparams is None and ctx.for_training:
        raise UnsuppliedError("not readable, and no run configuration to rebuild it from")
    kwargs = model_kwargs(ctx.hyperparams or {})
    if key in kwargs:
        return kwargs[key]
    default = inspect.signature(algo_class(ctx.algo).__init__).parameters.get(key)
    if default is None or default.default is inspect.Parameter.empty:
        raise UnsuppliedError(f"{ctx.algo} has no default {key}")
    return default.default


def _schedule(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    readable = _readable_schedule(entry)
    return readable if readable is not None else _configured(key, ctx)


def _setting(key: str, ctx: EntryContext) -> Any:
    """A model setting: its plain value in ``data``, or the value supplied for it."""
    entry = ctx.data.get(key)
    if isinstance(entry, dict) and PICKLED in entry:
        return SUPPLIERS[key](key, entry, ctx)
    return entry if key in ctx.data else _configured(key, ctx)


def _lr_schedule(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    from stable_baselines3.common.utils import FloatSchedule

    return FloatSchedule(_setting("learning_rate", ctx))


def _exploration_schedule(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    from stable_baselines3.common.utils import LinearSchedule

    keys = ("exploration_initial_eps", "exploration_final_eps", "exploration_fraction")
    values = [ctx.data.get(k) for k in keys]
    if not all(isinstance(v, int | float) for v in values):
        raise UnsuppliedError(f"no readable {', '.join(keys)}")
    return LinearSchedule(*(float(v) for v in values))  # type: ignore[arg-type]


def _configured_entry(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> Any:
    return _configured(key, ctx)


def _none(key: str, entry: Mapping[str, Any], ctx: EntryContext) -> None:
    return None


SUPPLIERS: dict[str, Callable[[str, Mapping[str, Any], EntryContext], Any]] = {
    "policy_class": _policy_class,
    "policy_kwargs": _policy_kwargs,
    "observation_space": _observation_space,
    "action_space": _action_space,
    "rollout_buffer_class": _buffer_class,
    "replay_buffer_class": _buffer_class,
    "learning_rate": _schedule,
    "clip_range": _schedule,
    "clip_range_vf": _schedule,
    "lr_schedule": _lr_schedule,
    "exploration_schedule": _exploration_schedule,
    "train_freq": _configured_entry,
    "_last_obs": _none,
    "_last_original_obs": _none,
    "_last_episode_starts": _none,
    "ep_info_buffer": _none,
    "ep_success_buffer": _none,
}
"""How each pickled entry is supplied (see the module docstring); any other is refused."""
