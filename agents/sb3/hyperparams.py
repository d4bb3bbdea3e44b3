"""Hyperparameters of the learned agents: YAML files keyed by env id, CLI overrides.

One file per algorithm in ``agents/hyperparams/<algo>.yml`` (the rl-baselines3-zoo convention):
its top-level keys are env ids plus ``default``; an env's own entry overrides ``default`` key by
key. Values are keyword arguments of the SB3 model class, except the special keys
:data:`SPECIAL_KEYS` (``policy``, ``n_timesteps``, ``n_envs``) that the trainer consumes.

``policy_kwargs`` is a dict or a string evaluated *safely* (no ``eval``): literals, ``dict(...)``,
lists / tuples / dicts, and the names ``nn.<Activation>`` (also ``th.nn.`` / ``torch.nn.``) and
``th.optim.<Optimizer>``. ``learning_rate`` and ``clip_range`` accept ``"lin_<value>"`` for a
linear decay from ``value`` to 0 (zoo convention).

Source: rl-baselines3-zoo (``hyperparams/*.yml``, ``utils/utils.py``: ``linear_schedule``,
``StoreDict``).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import yaml

from agents.ids import canonical_env_id
from palgym.errors import ConfigError

ALGO_NAMES: tuple[str, ...] = ("maskable_ppo", "ppo", "dqn")
SPECIAL_KEYS: tuple[str, ...] = ("policy", "n_timesteps", "n_envs")
INT_KEYS = frozenset({
    "n_steps", "batch_size", "n_epochs", "buffer_size", "learning_starts", "train_freq",
    "gradient_steps", "target_update_interval", "n_timesteps", "n_envs",
})
ACTIVATIONS = frozenset({"ReLU", "Tanh", "ELU", "LeakyReLU", "GELU", "SiLU", "Sigmoid"})
OPTIMIZERS = frozenset({"Adam", "AdamW", "RMSprop", "SGD"})
SCHEDULE_KEYS = frozenset({"learning_rate", "clip_range"})
INT_MINIMUM: dict[str, int] = {
    "n_steps": 1, "batch_size": 1, "n_epochs": 1, "buffer_size": 1, "learning_starts": 0,
    "train_freq": 1, "gradient_steps": -1, "target_update_interval": 1, "n_timesteps": 1,
    "n_envs": 1,
}
"""The smallest value of each integer hyperparameter (SB3: ``gradient_steps`` -1 means as many
as env steps). PPO's ``batch_size`` must be >= 2 (:data:`PPO_MIN_BATCH`)."""
PPO_MIN_BATCH = 2
"""PPO normalises advantages over a mini-batch: SB3 asserts ``batch_size > 1``."""
FLOAT_RANGES: dict[str, tuple[float, float, bool]] = {
    "gamma": (0.0, 1.0, False), "gae_lambda": (0.0, 1.0, False),
    "learning_rate": (0.0, float("inf"), True), "clip_range": (0.0, float("inf"), True),
    "clip_range_vf": (0.0, float("inf"), True), "target_kl": (0.0, float("inf"), True),
    "ent_coef": (0.0, float("inf"), False), "vf_coef": (0.0, float("inf"), False),
    "max_grad_norm": (0.0, float("inf"), True), "tau": (0.0, 1.0, True),
    "exploration_fraction": (0.0, 1.0, False), "exploration_initial_eps": (0.0, 1.0, False),
    "exploration_final_eps": (0.0, 1.0, False),
}
"""``key: (low, high, low excluded)`` of the numeric hyperparameters (SB3's documented ranges:
a discount or an epsilon in [0, 1], rates, clip ranges and norms > 0, coefficients >= 0)."""
NULLABLE_KEYS = frozenset({"clip_range_vf", "target_kl"})
"""Keys whose None (YAML ``null``) means off."""
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


FAST_HYPERPARAMS: dict[str, Any] = {
    "n_envs": 64, "n_steps": 64, "batch_size": 1024, "n_epochs": 5,
    "policy_kwargs": "dict(scorer_arch=[64, 64], net_arch=dict(pi=[], vf=[64, 64]), "
                     "activation_fn=nn.Tanh, skip_infeasible=True)",
}
"""``train.py --fast`` (maskable_ppo): 64 envs stepped by palgym's batched env, 4,096 env steps
per update in minibatches of 1,024, 5 epochs, the candidate scorer on the feasible candidates
only (docs/TRAINING.md "Fast settings": about 10x fewer CPU seconds per env step than one env
with ``n_steps`` 512 on 2 cores, about 3x fewer than the YAML's batched default, with 16x fewer
gradient steps per env step). Laid over the YAML's entries, under ``--hyperparams``."""


def fast_hyperparams(algo: str) -> dict[str, Any]:
    """:data:`FAST_HYPERPARAMS` for ``algo``.

    Raises:
        ConfigError: for an algorithm other than ``maskable_ppo`` (the settings are its own).
    """
    if algo != "maskable_ppo":
        raise ConfigError(f"--fast is a maskable_ppo recipe, not one for {algo}")
    return dict(FAST_HYPERPARAMS)


def load_hyperparams(algo: str, env_id: str) -> dict[str, Any]:
    """Merged hyperparameters of ``algo`` for ``env_id`` (``default`` then the env's entry).

    Args:
        algo: one of :data:`ALGO_NAMES`.
        env_id: Gymnasium id, with or without a ``module:`` prefix.

    Returns:
        A new dict of hyperparameters (numbers coerced, see :func:`coerce_value`).

    Raises:
        ConfigError: for an unknown algorithm, or a file with neither ``default`` nor the env id.
    """
    if algo not in ALGO_NAMES:
        raise ConfigError(f"algo must be one of {list(ALGO_NAMES)}, got {algo!r}")
    text = resources.files("agents").joinpath("hyperparams", f"{algo}.yml").read_text("utf-8")
    table = yaml.safe_load(text) or {}
    env_key = canonical_env_id(env_id)
    if "default" not in table and env_key not in table:
        raise ConfigError(f"hyperparams/{algo}.yml has no entry for {env_key!r} and no default")
    merged: dict[str, Any] = {}
    for key in ("default", env_key):
        merged.update(table.get(key) or {})
    return {key: coerce_value(key, value) for key, value in merged.items()}


def parse_key_values(items: Sequence[str] | None, argument: str = "") -> dict[str, Any]:
    """Parse CLI ``key:value`` items; each value is read with ``yaml.safe_load``.

    Args:
        items: e.g. ``["n_steps:32", "policy_kwargs:dict(net_arch=[64])", "gamma:0.99"]``.
        argument: the flag they came from (e.g. ``"--env-kwargs"``), named in errors.

    Returns:
        ``{key: value}`` in order; later items win.

    Raises:
        ConfigError: for an item without ``:`` or with an empty key.
    """
    parsed: dict[str, Any] = {}
    for item in items or ():
        key, sep, raw = item.partition(":")
        if not sep or not key.strip():
            where = f"{argument}: " if argument else ""
            raise ConfigError(f"{where}expected key:value, got {item!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw  # e.g. an unbalanced string: keep it verbatim
        parsed[key.strip()] = coerce_value(key.strip(), value)
    return parsed


def coerce_value(key: str, value: Any) -> Any:
    """Turn numeric strings YAML 1.1 leaves as text (``3e-4``) into numbers.

    Keys of :data:`INT_KEYS` holding an integral float (``1e5``) become ints.
    """
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        text = value.strip()
        value = int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    if key in INT_KEYS and isinstance(value, float) and value.is_integer():
        value = int(value)
    return value


def check_values(algo: str, hyperparams: Mapping[str, Any]) -> None:
    """Check the values of the known numeric hyperparameters (:data:`INT_MINIMUM`,
    :data:`FLOAT_RANGES`); other keys are the model class's to check.

    Raises:
        ConfigError: ``"hyperparameter KEY must be ..., got VALUE"`` for the first bad value
            (a non-number, a fraction where an integer is needed, or a value out of range).
    """
    for key, value in hyperparams.items():
        problem = value_problem(algo, key, value)
        if problem:
            raise ConfigError(f"hyperparameter {key} must be {problem}, got {value!r}")


def value_problem(algo: str, key: str, value: Any) -> str | None:
    """What ``value`` of ``key`` must be, if it is not (None when it is fine)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key in INT_MINIMUM:
        if key == "train_freq" and isinstance(value, (list, tuple)):
            return None  # DQN's (frequency, unit) pair: SB3 checks it
        low = PPO_MIN_BATCH if key == "batch_size" and "ppo" in algo else INT_MINIMUM[key]
        ok = number and isinstance(value, int) and value >= low
        return None if ok else f"an integer >= {low}"
    if key not in FLOAT_RANGES or (value is None and key in NULLABLE_KEYS):
        return None
    if key in SCHEDULE_KEYS and isinstance(value, str):
        return None  # 'lin_<value>': model_kwargs checks it
    low, high, open_low = FLOAT_RANGES[key]
    inside = number and (value > low if open_low else value >= low) and value <= high
    if inside and math.isfinite(value):
        return None
    bounds = f"> {low:g}" if open_low else f">= {low:g}"
    text = f"a number {bounds}" if high == float("inf") else (
        f"a number in ({low:g}, {high:g}]" if open_low else f"a number in [{low:g}, {high:g}]")
    if key in SCHEDULE_KEYS:
        text += " or 'lin_<number>'"
    return text + (" or null" if key in NULLABLE_KEYS else "")


def model_kwargs(hyperparams: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for the SB3 model: special keys removed, strings resolved.

    Args:
        hyperparams: merged hyperparameters (see :func:`load_hyperparams`).

    Returns:
        The kwargs (``policy_kwargs`` a dict, ``lin_`` schedules as callables).

    Raises:
        ConfigError: for a malformed ``policy_kwargs`` or schedule string.
    """
    kwargs = {k: v for k, v in hyperparams.items() if k not in SPECIAL_KEYS}
    if "policy_kwargs" in kwargs:
        kwargs["policy_kwargs"] = resolve_policy_kwargs(kwargs["policy_kwargs"])
    for key in SCHEDULE_KEYS & kwargs.keys():
        if isinstance(kwargs[key], str):
            kwargs[key] = linear_schedule_from(key, kwargs[key])
    return kwargs


def linear_schedule_from(key: str, text: str) -> Callable[[float], float]:
    """``"lin_<value>"`` -> ``progress_remaining * value`` (1 at the start, 0 at the end).

    Raises:
        ConfigError: if ``text`` is not ``lin_<number>``.
    """
    prefix, _, number = text.partition("_")
    if prefix != "lin" or not _NUMBER.match(number):
        raise ConfigError(f"{key} must be a number or 'lin_<number>', got {text!r}")
    initial = float(number)

    def schedule(progress_remaining: float) -> float:
        return progress_remaining * initial

    return schedule


def resolve_policy_kwargs(value: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A ``policy_kwargs`` string or dict as a dict with torch classes resolved.

    Raises:
        ConfigError: for syntax outside the safe subset or an unknown class name.
    """
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            tree = ast.parse(value.strip(), mode="eval")
        except SyntaxError as exc:
            raise ConfigError(f"policy_kwargs {value!r} is not an expression: {exc}") from None
        value = _safe_eval(tree.body, value)
    if not isinstance(value, Mapping):
        raise ConfigError(f"policy_kwargs must be a dict, got {value!r}")
    resolved = dict(value)
    for key in ("activation_fn", "optimizer_class"):
        if isinstance(resolved.get(key), str):
            resolved[key] = torch_class(resolved[key])
    return resolved


def _safe_eval(node: ast.AST, source: str) -> Any:
    """Evaluate literals, containers, ``dict(k=v)`` and torch class names; nothing else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_safe_eval(elt, source) for elt in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_safe_eval(k, source): _safe_eval(v, source)
                for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_safe_eval(node.operand, source)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "dict" and not node.args
            and all(kw.arg is not None for kw in node.keywords)):
        return {kw.arg: _safe_eval(kw.value, source) for kw in node.keywords}
    if isinstance(node, ast.Attribute):
        return torch_class(ast.unparse(node))
    raise ConfigError(
        f"policy_kwargs {source!r}: {ast.unparse(node)!r} is not allowed (literals, dict(...), "
        "nn.<Activation> and th.optim.<Optimizer> only)"
    )


def torch_class(name: str) -> type:
    """Resolve ``nn.ReLU`` / ``th.nn.ReLU`` / ``torch.nn.ReLU`` / ``th.optim.Adam`` (or bare).

    Raises:
        ConfigError: for a name outside :data:`ACTIVATIONS` and :data:`OPTIMIZERS`.
    """
    parts = name.split(".")
    leaf = parts[-1]
    prefix = ".".join(p for p in parts[:-1] if p not in ("th", "torch"))
    import torch

    if leaf in ACTIVATIONS and prefix in ("", "nn"):
        return getattr(torch.nn, leaf)  # type: ignore[no-any-return]
    if leaf in OPTIMIZERS and prefix in ("", "optim"):
        return getattr(torch.optim, leaf)  # type: ignore[no-any-return]
    raise ConfigError(
        f"unknown torch class {name!r}: activations {sorted(ACTIVATIONS)} (nn.X), "
        f"optimizers {sorted(OPTIMIZERS)} (th.optim.X)"
    )
