"""Loading a saved SB3 / sb3-contrib model zip without running code from it.

A model zip (SB3's format) holds ``data``, a JSON object of the model's attributes, beside the
network weights (``policy.pth``, ``policy.optimizer.pth``, ``pytorch_variables.pth``, which SB3
reads with ``torch.load(weights_only=True)``: tensors and plain containers only). An attribute
that JSON cannot hold is stored cloudpickled, and unpickling runs whatever the pickle names, so
**a model zip is code**; SB3's ``load`` unpickles every such entry except those its
``custom_objects`` supplies.

:func:`load_model` supplies every pickled entry itself (:func:`safe_objects`; how each is
built: :mod:`agents.sb3.model_entries`), so nothing is unpickled, or refuses the zip
(:class:`UntrustedModelError`, naming each entry and why) unless the caller trusts it
(``trust_model=True``: SB3's own ``load``, which unpickles). The zip is read once; SB3 loads
the same bytes.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.model_limits import read_bounded_zip
from agents.sb3.factory import algo_class
from agents.sb3.model_entries import (
    PICKLED,
    POLICY_CLASSES,
    SUPPLIERS,
    EntryContext,
    UnsuppliedError,
)
from palgym.errors import ConfigError
from palgym.io.strict_json import MAX_DEPTH, check_depth

TRUST_HINT = ("a model zip can run code: pass --trust-model to load it with "
              "stable-baselines3's unpickling, only if you trust the file")
ALGO_OF_POLICY_MODULE: dict[str, str] = {
    "agents.sb3.policies": "maskable_ppo",
    "agents.policies": "maskable_ppo",  # models saved before agents/sb3/ (the pretrained zips)
    "sb3_contrib.common.maskable.policies": "maskable_ppo",
    "stable_baselines3.dqn.policies": "dqn",
}
"""Readable ``__module__`` of a saved policy class -> algorithm (PPO: see :func:`algo_of`)."""


class UntrustedModelError(ConfigError):
    """A model zip holds pickled entries palgym cannot supply without unpickling them."""


@dataclass(frozen=True)
class ModelZip:
    """A model zip as read, nothing unpickled.

    Attributes:
        path: where it was read from (for messages).
        raw: its bytes (what SB3 loads).
        data: its ``data`` JSON object; pickled entries stay ``{":serialized:": ...}`` dicts.
    """

    path: Path
    raw: bytes
    data: dict[str, Any]

    @property
    def pickled(self) -> tuple[str, ...]:
        """The keys of ``data`` whose values are cloudpickled, in file order."""
        return tuple(k for k, v in self.data.items() if isinstance(v, dict) and PICKLED in v)


def read_model_zip(path: str | Path, env: Any = None) -> ModelZip:
    """Read a model zip's bytes and its ``data`` JSON (as SB3 reads it), unpickling nothing;
    each entry within its ceiling (:mod:`agents.model_limits`; ``env``: the env the model
    will act in, whose observation size bounds ``data``).

    Raises:
        ConfigError: if the file is not a zip with a JSON object ``data``, or an entry passes
            its ceiling.
        OSError: if it cannot be read.
    """
    raw = read_bounded_zip(path, env)
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            text = archive.read("data").decode()
            check_depth(text, MAX_DEPTH, path)
            data = json.loads(text)
    except (zipfile.BadZipFile, KeyError, ValueError, RuntimeError, NotImplementedError) as exc:
        raise ConfigError(f"{path} is not a stable-baselines3 model zip: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a stable-baselines3 model zip: 'data' is not an object")
    return ModelZip(Path(path), raw, data)


def policy_module(data: Mapping[str, Any]) -> str:
    """The readable ``__module__`` of the saved policy class ('' when there is none)."""
    entry = data.get("policy_class")
    return str(entry.get("__module__", "")) if isinstance(entry, dict) else ""


def algo_of(data: Mapping[str, Any]) -> str | None:
    """The algorithm of a saved model from the readable module of its policy class (PPO: SB3's
    common policies with a ``clip_range``), or None if that does not tell."""
    module = policy_module(data)
    if module in ALGO_OF_POLICY_MODULE:
        return ALGO_OF_POLICY_MODULE[module]
    if module == "stable_baselines3.common.policies" and "clip_range" in data:
        return "ppo"
    return None


def safe_objects(model: ModelZip, algo: str, *, hyperparams: Mapping[str, Any] | None = None,
                 for_training: bool = False) -> dict[str, Any]:
    """SB3 ``custom_objects`` replacing every pickled entry of ``model`` (nothing unpickled).

    Args:
        model: the zip as read (:func:`read_model_zip`).
        algo: its algorithm (``maskable_ppo``, ``ppo``, ``dqn``).
        hyperparams: the run configuration's ``hyperparams`` (None: no configuration).
        for_training: the model will be trained on (schedules must then be exact).

    Returns:
        ``{entry: value}`` for every key of :attr:`ModelZip.pickled`.

    Raises:
        UntrustedModelError: naming every entry that cannot be supplied, and why.
        ConfigError: for an unknown algorithm or malformed configured hyperparameters.
    """
    if algo not in POLICY_CLASSES:
        raise ConfigError(f"algo must be one of {list(POLICY_CLASSES)}, got {algo!r}")
    ctx = EntryContext(algo, model.data, hyperparams, for_training)
    objects: dict[str, Any] = {}
    refused: list[str] = []
    for key in model.pickled:
        try:
            if key not in SUPPLIERS:
                raise UnsuppliedError("palgym does not know this entry")
            objects[key] = SUPPLIERS[key](key, model.data[key], ctx)
        except UnsuppliedError as why:
            refused.append(f"{key} ({why})")
    if refused:
        raise UntrustedModelError(
            f"{model.path}: not loaded: pickled entries palgym cannot supply without unpickling "
            f"them: {'; '.join(refused)}; {TRUST_HINT}")
    return objects


def load_model(
    path: str | Path,
    algo: str,
    *,
    model_class: Any = None,
    env: Any = None,
    device: str = "cpu",
    trust_model: bool = False,
    hyperparams: Mapping[str, Any] | None = None,
    for_training: bool = False,
) -> Any:
    """Load a model zip; without ``trust_model`` nothing in it is unpickled.

    Args:
        path: the ``.zip``.
        algo: its algorithm (chooses the allowed classes and, by default, the model class).
        model_class: the SB3 class to load with (default :func:`agents.sb3.factory.algo_class`).
        env: the env to attach (SB3 checks its spaces against the model's), or None.
        device: torch device.
        trust_model: load with SB3's own unpickling (runs any code the zip holds).
        hyperparams: the run configuration's ``hyperparams`` (:func:`safe_objects`).
        for_training: the model will be trained on (:func:`safe_objects`).

    Returns:
        The model.

    Raises:
        UntrustedModelError: without ``trust_model``, for pickled entries palgym cannot
            supply (:func:`safe_objects`).
        ConfigError: for a file that is not a model zip, or one that does not load as ``algo``
            (weights that do not fit the policy, spaces that do not fit ``env``).
    """
    model = read_model_zip(path, env)
    objects = None if trust_model else safe_objects(model, algo, hyperparams=hyperparams,
                                                    for_training=for_training)
    cls = model_class if model_class is not None else algo_class(algo)
    try:
        return cls.load(io.BytesIO(model.raw), env=env, device=device, custom_objects=objects)
    except (RuntimeError, ValueError, KeyError, TypeError, AssertionError, EOFError,
            pickle.UnpicklingError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{path}: does not load as a {algo} model: {first}") from None
