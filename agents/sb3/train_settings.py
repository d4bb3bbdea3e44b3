"""A training run's settings and their resolution into ``config.yml`` (:mod:`agents.sb3.training`
runs them; ``train.py`` parses its flags into :class:`TrainSettings`).

:func:`resolve_config` merges the hyperparameter file's entries (``default``, then the env's),
``--fast`` and the overrides, checks them, and picks the training envs
(:func:`default_n_envs`) and the vector env that steps them
(:func:`agents.sb3.envs.vec_env_kind`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.env_args import env_config
from agents.ids import check_env_id, gym_id
from agents.sb3.curriculum import check_curriculum
from agents.sb3.envs import vec_env_kind
from agents.sb3.factory import DEFAULT_ALGO, validate_hyperparams
from agents.sb3.hyperparams import fast_hyperparams, load_hyperparams
from agents.sb3.input_driven import check_input_driven
from agents.sb3.layouts import LAYOUT_KEY, training_layout
from agents.sb3.runs import read_yaml, resume_dir
from agents.sb3.train_traces import TraceArg, env_kwargs_of, trace_set_hashes
from palgym.errors import ConfigError

DEFAULT_ENV_ID = "palgym/PALPlacement-v0"
EVAL_SEED_OFFSET = 10_000


@dataclass(frozen=True)
class TrainSettings:
    """Everything a training run is made of (train.py's flags, one to one).

    ``n_timesteps`` / ``n_envs`` default to the hyperparameter file's (:func:`default_n_envs`:
    ``n_envs`` is the run's recorded one on ``resume`` and 1 with ``input_driven``). With
    ``resume``, ``n_timesteps`` more steps are trained, in run folder ``run_id`` (None: the
    latest).
    ``eval_freq`` and ``save_freq`` count total timesteps (all envs); ``eval_freq <= 0``
    disables evaluation, ``save_freq <= 0`` checkpoints. ``hyperparams`` and ``env_kwargs``
    are overrides (``key: value``).
    ``imitate`` names a heuristic to clone before RL (fresh ``maskable_ppo`` runs; the other
    ``imitate_*`` settings: :func:`agents.sb3.imitation.clone_heuristic`).
    ``input_driven`` > 0: K episodes of one input per rollout with the K-mean baseline
    (:mod:`agents.sb3.input_driven`; maskable_ppo, one env).
    ``curriculum``: the floor of the window curriculum of the training envs
    (:mod:`agents.sb3.curriculum`; None: uniform windows).
    ``num_threads`` sets torch's threads (``<= 0``: torch's default); 1 is the default because
    these small MLPs train several times faster single-threaded (4x measured on 2 busy cores).
    ``fast``: lay :data:`agents.sb3.hyperparams.FAST_HYPERPARAMS` over the YAML's hyperparameters
    (``hyperparams`` and ``n_envs`` still override it).
    ``trust_model``: a resume loads ``model.zip`` with SB3's unpickling (runs any code the zip
    holds); by default nothing is unpickled (:func:`agents.sb3.model_zip.load_model`).
    ``references``: None, the env's defaults (:func:`default_references`).
    """

    env_id: str = DEFAULT_ENV_ID
    algo: str = DEFAULT_ALGO
    n_timesteps: int | None = None
    seed: int = 0
    trace: TraceArg | None = None
    window: int | None = None
    eval_trace: TraceArg | None = None
    trace_set: tuple[str, ...] = ()
    split: str = "train"
    eval_split: str = "validation"
    log_folder: str = "runs"
    run_id: int | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    n_envs: int | None = None
    eval_freq: int = 10_000
    eval_episodes: int = 5
    eval_seed: int | None = None
    save_freq: int = -1
    hyperparams: Mapping[str, Any] = field(default_factory=dict)
    resume: bool = False
    progress_bar: bool = False
    references: tuple[str, ...] | None = None
    device: str = "cpu"
    num_threads: int = 1
    vec_env: str = "auto"
    fast: bool = False
    verbose: int = 1
    imitate: str | None = None
    imitate_decisions: int = 30_000
    imitate_epochs: int = 10
    imitate_explore: float = 0.3
    input_driven: int = 0
    curriculum: float | None = None
    trust_model: bool = False


def resolve_config(settings: TrainSettings) -> dict[str, Any]:
    """The content of ``config.yml``: hyperparameters resolved for this env and run.

    Raises:
        ConfigError: for an env id that is not palgym's, an env kwarg the env does not take,
            an unknown algorithm or hyperparameter, a hyperparameter value out of range, or no
            positive integer ``n_timesteps``.
    """
    check_env_id(settings.env_id, "--env")
    env_config(settings.env_kwargs, "--env-kwargs", gym_id(settings.env_id))
    hyperparams = {**load_hyperparams(settings.algo, settings.env_id),
                   **(fast_hyperparams(settings.algo) if settings.fast else {}),
                   **settings.hyperparams}
    n_timesteps = (settings.n_timesteps if settings.n_timesteps is not None
                   else hyperparams.get("n_timesteps"))
    if n_timesteps is None:
        raise ConfigError("give n_timesteps (-n) or set it in the hyperparameter file")
    if isinstance(n_timesteps, bool) or not isinstance(n_timesteps, int) or n_timesteps < 1:
        raise ConfigError(f"n_timesteps (-n) must be a positive integer, got {n_timesteps!r}")
    validate_hyperparams(settings.algo, hyperparams)
    n_envs = int(settings.n_envs or default_n_envs(settings, hyperparams))
    check_input_driven(settings.input_driven, settings.algo, n_envs, settings.vec_env)
    if settings.imitate:
        from agents.sb3.imitation import check_imitation
        check_imitation(settings.algo, settings.env_id)
    check_curriculum(settings.curriculum, dict(settings.env_kwargs))
    for key in ("n_timesteps", "n_envs"):
        hyperparams.pop(key, None)
    env_kwargs = env_kwargs_of(settings)
    return {
        "algo": settings.algo, "env_id": settings.env_id, "n_timesteps": int(n_timesteps),
        "n_envs": n_envs,
        "vec_env": vec_env_kind(settings.env_id, n_envs, settings.vec_env, settings.curriculum),
        "hyperparams": hyperparams, "env_kwargs": env_kwargs,
        LAYOUT_KEY: training_layout(settings.env_id, env_kwargs),
        "eval_env_kwargs": env_kwargs_of(settings, evaluation=True),
        "evaluation": {"episodes": settings.eval_episodes, "seed": eval_seed_of(settings)},
        "trace_sets": trace_set_hashes(settings),
        **({"input_driven": settings.input_driven} if settings.input_driven else {}),
        **({"curriculum": settings.curriculum} if settings.curriculum is not None else {}),
    }


def default_n_envs(settings: TrainSettings, hyperparams: Mapping[str, Any]) -> int:
    """The training envs when ``settings.n_envs`` is None: a resume's recorded ``n_envs``
    (its ``config.yml``: a run keeps the rollout it was trained with), 1 for input-driven
    baselines (:mod:`agents.sb3.input_driven` steps one env), else the hyperparameters' ``n_envs``
    (1 when they name none)."""
    if settings.resume:
        try:
            run_dir = resume_dir(settings.log_folder, settings.env_id, settings.algo,
                                 settings.run_id)
        except ConfigError:
            run_dir = None  # run_dir_of names the problem
        path = None if run_dir is None else run_dir / "config.yml"
        recorded = read_yaml(path).get("n_envs") if path is not None and path.is_file() else None
        if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 1:
            return recorded
    if settings.input_driven:
        return 1
    return int(hyperparams.get("n_envs", 1))


def eval_seed_of(settings: TrainSettings) -> int:
    """The evaluation env's seed: ``eval_seed`` or ``seed + 10000``."""
    return settings.eval_seed if settings.eval_seed is not None else (
        settings.seed + EVAL_SEED_OFFSET)
