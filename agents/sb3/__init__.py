"""Learned agents on stable-baselines3 / sb3-contrib: models, their training, their files.

- the model: :mod:`~agents.sb3.factory` (:func:`make_model`: ``maskable_ppo``, ``ppo``,
  ``dqn``), :mod:`~agents.sb3.policies` (the candidate-scoring actor-critic),
  :mod:`~agents.sb3.hyperparams` (YAML hyperparameters keyed by env id, ``key:value``
  overrides);
- training: :mod:`~agents.sb3.training` (:func:`train` into a run folder, the logic of
  ``train.py``), :mod:`~agents.sb3.train_settings` (:class:`TrainSettings` -> ``config.yml``),
  :mod:`~agents.sb3.train_traces`, :mod:`~agents.sb3.envs` (Monitor-wrapped, vectorised,
  seeded envs; :mod:`~agents.sb3.native_vec_env` over palgym's batched env),
  :mod:`~agents.sb3.callbacks`, :mod:`~agents.sb3.throughput`, :mod:`~agents.sb3.curriculum`,
  :mod:`~agents.sb3.imitation` (behaviour cloning warm start),
  :mod:`~agents.sb3.input_driven` (input-driven baselines), :mod:`~agents.sb3.optimize`
  (Optuna);
- files: :mod:`~agents.sb3.runs` (run folders), :mod:`~agents.sb3.model_zip` and
  :mod:`~agents.sb3.model_entries` (a model zip loaded without unpickling),
  :mod:`~agents.sb3.layouts` (the env layout a model was trained on),
  :mod:`~agents.sb3.learned` (:class:`LearnedAgent`, :func:`load_agent`: a saved model behind
  the agent protocol).

Names load on first use: torch and stable-baselines3 (the ``train`` extra) load with them.
"""

from __future__ import annotations

from agents.lazy import lazy_getattr

_LAZY = {
    "ALGO_NAMES": "agents.sb3.hyperparams",
    "load_hyperparams": "agents.sb3.hyperparams",
    "parse_key_values": "agents.sb3.hyperparams",
    "algo_class": "agents.sb3.factory",
    "make_model": "agents.sb3.factory",
    "CandidateScoringPolicy": "agents.sb3.policies",
    "TrainSettings": "agents.sb3.train_settings",
    "TrainResult": "agents.sb3.training",
    "train": "agents.sb3.training",
    "make_vec_env": "agents.sb3.envs",
    "optimize": "agents.sb3.optimize",
    "LearnedAgent": "agents.sb3.learned",
    "load_agent": "agents.sb3.learned",
    "detect_algo": "agents.sb3.learned",
    "pretrained_names": "agents.sb3.learned",
    "load_model": "agents.sb3.model_zip",
    "check_layout": "agents.sb3.layouts",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = sorted(_LAZY)
