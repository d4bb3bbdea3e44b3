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

from agents.lazy import lazy_exports

_LAZY = {
    ".hyperparams": ("ALGO_NAMES", "load_hyperparams", "parse_key_values"),
    ".factory": ("algo_class", "make_model"),
    ".policies": ("CandidateScoringPolicy",),
    ".train_settings": ("TrainSettings",),
    ".training": ("TrainResult", "train"),
    ".envs": ("make_vec_env",),
    ".optimize": ("optimize",),
    ".learned": ("LearnedAgent", "load_agent", "detect_algo", "pretrained_names"),
    ".model_zip": ("load_model",),
    ".layouts": ("check_layout",),
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
