"""Learned agents: a saved SB3 / sb3-contrib model behind the agent protocol.

:func:`load_agent` takes a ``model.zip`` (or a run folder holding one) and finds its algorithm
from the run configuration next to it (:func:`model_config`: ``config.yml`` of the run folder,
or ``<stem>.yml`` beside the zip, as in ``agents/pretrained/``) or, failing that, from the zip
itself (the readable module of the saved policy class, then PPO's own attributes).

A model zip can run code when it is unpickled: :func:`load_agent` loads it through
:func:`agents.sb3.model_zip.load_model`, which unpickles nothing and refuses a zip whose pickled
entries palgym cannot supply, unless ``trust_model`` is set (``--trust-model``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agents.base import Agent, Query, State
from agents.data_dir import resolve_config
from agents.ids import canonical_env_id
from agents.run_markers import check_run_folder
from agents.sb3.factory import MASKED_ALGOS
from agents.sb3.hyperparams import ALGO_NAMES
from agents.sb3.layouts import check_env_layout
from agents.sb3.model_zip import TRUST_HINT, algo_of, load_model, policy_module, read_model_zip
from agents.sb3.runs import read_yaml
from palgym.errors import ConfigError

MODEL_FILE = "model.zip"
BEST_MODEL_FILE = "best_model.zip"
CONFIG_FILE = "config.yml"
PRETRAINED = "pretrained"
PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "pretrained"
"""Committed models: ``<env name>_<algo>.zip`` with the run's ``config.yml`` as
``<env name>_<algo>.yml`` (see ``agents/pretrained/README.md``)."""


class LearnedAgent(Agent):
    """A trained model as an agent (see :class:`agents.base.Agent`).

    Args:
        model: an SB3 / sb3-contrib model (``predict`` with SB3's signature).
        algo: its algorithm name; ``maskable_ppo`` models receive the action masks, ``ppo`` and
            ``dqn`` ignore them (the env's fallback replaces their invalid actions).
        name: label for result tables (default: the algorithm).
        run_config: its run configuration (:func:`model_config`); its ``env_layout`` is
            checked against every env the agent is bound to (:mod:`agents.sb3.layouts`).
    """

    def __init__(self, model: Any, algo: str, name: str | None = None,
                 run_config: dict[str, Any] | None = None) -> None:
        self.model = model
        self.algo = algo
        self.name = name or algo
        self.uses_masks = algo in MASKED_ALGOS
        self.run_config = run_config or {}

    def __repr__(self) -> str:
        return f"LearnedAgent({self.name!r}, algo={self.algo!r})"

    def bind(self, env: gym.Env[Any, Any]) -> LearnedAgent:
        """Nothing to attach (the model acts from observations); returns self.

        Raises:
            ConfigError: ``env``'s layout is not the one the model was trained on.
        """
        check_env_layout(self.name, self.run_config, env)
        return self

    def answer(self, query: Query) -> tuple[np.ndarray, State]:
        """The model's action (SB3 semantics); masks are passed to masked models only.

        Args:
            query: one observation (or a batch, as SB3 accepts); recurrent state (None for
                these feed-forward policies); SB3's episode-start flags; greedy if
                ``deterministic``; ``action_masks`` bool (K*M+1,) or (n_envs, K*M+1), used by
                ``maskable_ppo`` only.

        Returns:
            ``(action, state)`` as the model returns them.
        """
        observation, state, episode_start, deterministic, action_masks = query
        if self.uses_masks:
            return self.model.predict(  # type: ignore[no-any-return]
                observation, state, episode_start, deterministic, action_masks=action_masks
            )
        return self.model.predict(  # type: ignore[no-any-return]
            observation, state, episode_start, deterministic
        )


def model_path(path: str | Path) -> Path:
    """``path`` itself, or for a run folder its ``best_model.zip`` (the best evaluation
    checkpoint) when it exists, else its ``model.zip`` (the last model).

    Raises:
        ConfigError: if no model file exists there.
    """
    candidate = Path(path)
    if candidate.is_dir():
        best = candidate / BEST_MODEL_FILE
        candidate = best if best.is_file() else candidate / MODEL_FILE
    check_run_folder(candidate.parent, candidate)  # RUNNING / INTERRUPTED / FAILED markers
    if not candidate.is_file():
        raise ConfigError(f"no saved model at {str(path)!r} (expected a .zip or a run folder)")
    return candidate


def pretrained_names() -> list[str]:
    """The names of the committed models (``agents/pretrained/<name>.zip``), sorted."""
    return sorted(p.stem for p in PRETRAINED_DIR.glob("*.zip"))


def pretrained_path(spec: str, env_id: str, algo: str = "maskable_ppo") -> Path:
    """The committed model a ``pretrained`` spec names.

    ``pretrained`` -> ``agents/pretrained/<env name>_<algo>.zip`` (env name: the id without
    ``palgym/``, e.g. ``PALPlacement-v0_maskable_ppo.zip``); ``pretrained:NAME`` ->
    ``agents/pretrained/NAME.zip``, where NAME is a plain name, one of
    :func:`pretrained_names` (never a path: no separator, no ``..``, not absolute).

    Raises:
        ConfigError: for a NAME that is not a plain name, or a model that is not there,
            listing the available names (and the README with the training command).
    """
    _, colon, name = spec.partition(":")
    available = ", ".join(pretrained_names()) or "none"
    if colon and not name:
        raise ConfigError(f"{spec!r}: give a model name after 'pretrained:' "
                          f"(available: {available})")
    name = name or f"{canonical_env_id(env_id).split('/')[-1]}_{algo}"
    if Path(name).is_absolute() or any(part in name for part in ("/", "\\", "..", "\0")):
        raise ConfigError(f"{spec!r}: 'pretrained:NAME' takes the plain name of a model in "
                          f"{PRETRAINED_DIR}, not a path (available: {available})")
    path = PRETRAINED_DIR / f"{name}.zip"
    if name not in pretrained_names():
        raise ConfigError(
            f"no pretrained model {path} (available: {available}); "
            f"see {PRETRAINED_DIR / 'README.md'} for the training command")
    return path


def resolve_model_path(spec: str | Path, env_id: str) -> Path:
    """A model spec as a zip path: ``pretrained[:NAME]`` (:func:`pretrained_path`), a
    ``.zip`` or a run folder (:func:`model_path`).

    Raises:
        ConfigError: if no model is there.
    """
    text = str(spec)
    if text == PRETRAINED or text.startswith(PRETRAINED + ":"):
        return pretrained_path(text, env_id)
    return model_path(spec)


def config_path(path: str | Path) -> Path | None:
    """The run configuration of a saved model: ``<stem>.yml`` beside the zip, else the
    ``config.yml`` of its folder; None if there is neither."""
    zip_path = model_path(path)
    for candidate in (zip_path.with_suffix(".yml"), zip_path.parent / CONFIG_FILE):
        if candidate.is_file():
            return candidate
    return None


def model_config(path: str | Path) -> dict[str, Any]:
    """The run configuration (``config.yml`` content: algo, env_id, env_kwargs, ...) of a saved
    model, or ``{}`` when there is none; a path kwarg recorded as ``$PALGYM_DATA_DIR/...`` is
    joined to that variable's value (:func:`agents.data_dir.resolve_config`; left as it is
    while the variable is unset).

    Raises:
        ConfigError: if the file is not valid YAML (naming the file and the YAML problem, with
            its line and column) or not a mapping.
    """
    config = config_path(path)
    if config is None:
        return {}
    return resolve_config(read_yaml(config))


def detect_algo(path: str | Path, *, trust_model: bool = False) -> str:
    """The algorithm of a saved model: from its run configuration, else from the readable
    module of the zip's policy class (:func:`agents.sb3.model_zip.algo_of`; nothing unpickled).

    Args:
        path: the zip or its run folder.
        trust_model: for a policy class outside the known modules, unpickle the class (as
            SB3's ``load`` would) and classify it by its SB3 base class.

    Raises:
        ConfigError: if neither tells (not an SB3 zip, or an unsupported algorithm).
    """
    zip_path = model_path(path)
    algo = model_config(zip_path).get("algo")
    if algo in ALGO_NAMES:
        return str(algo)
    data = read_model_zip(zip_path).data
    algo = algo_of(data) or (_algo_of_policy_class(data) if trust_model else None)
    if algo is not None:
        return algo
    module = policy_module(data)
    hint = "" if trust_model else f" (the algorithm is told without unpickling; {TRUST_HINT})"
    raise ConfigError(f"{zip_path}: unsupported model (policy module {module!r}){hint}")


def _algo_of_policy_class(data: dict[str, Any]) -> str | None:
    """The algorithm of a saved policy class outside the known modules, for a trusted zip:
    the class is unpickled as ``Model.load`` would, then classified by its SB3 base class;
    None if it cannot be."""
    serialized = data.get("policy_class", {}).get(":serialized:")
    if not isinstance(serialized, str):
        return None
    try:
        import base64

        import cloudpickle

        policy_class = cloudpickle.loads(base64.b64decode(serialized.encode()))
    except Exception:  # noqa: BLE001 - any unpickling failure means "cannot tell"
        return None
    if not isinstance(policy_class, type):
        return None
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.dqn.policies import DQNPolicy

    if issubclass(policy_class, MaskableActorCriticPolicy):
        return "maskable_ppo"
    if issubclass(policy_class, DQNPolicy):
        return "dqn"
    if issubclass(policy_class, ActorCriticPolicy) and "clip_range" in data:
        return "ppo"
    return None


def load_agent(
    path: str | Path,
    algo: str | None = None,
    *,
    device: str = "cpu",
    name: str | None = None,
    trust_model: bool = False,
) -> LearnedAgent:
    """Load a saved model as a :class:`LearnedAgent`.

    Args:
        path: ``model.zip`` (or any SB3 zip) or a run folder holding ``model.zip``.
        algo: its algorithm; detected with :func:`detect_algo` when None.
        device: torch device to load onto.
        name: label for result tables (default: the zip's path).
        trust_model: unpickle the zip's pickled entries as SB3 does (runs any code the zip
            holds); by default nothing is unpickled (:func:`agents.sb3.model_zip.load_model`).

    Returns:
        The agent.

    Raises:
        ConfigError: for a missing or unrecognised model file, (without ``trust_model``)
            one whose pickled entries palgym cannot supply
            (:class:`agents.sb3.model_zip.UntrustedModelError`), and, when the agent is bound, an
            env of another layout than its run configuration's ``env_layout``.
    """
    zip_path = model_path(path)
    algo = algo or detect_algo(zip_path, trust_model=trust_model)
    config = model_config(zip_path)
    hyperparams = config.get("hyperparams")
    model = load_model(zip_path, algo, device=device, trust_model=trust_model,
                       hyperparams=hyperparams if isinstance(hyperparams, dict) else None)
    return LearnedAgent(model, algo, name=name or str(zip_path), run_config=config)
