"""Agents of the palgym envs: heuristics, learned models, planners and rule selectors, one
protocol. The package is cut by concern, one idea per sub-package:

- here, what every agent shares: :mod:`agents.base` (the :class:`Agent` protocol: SB3's
  ``predict`` + ``action_masks`` + ``bind(env)``; :class:`HeuristicAgent`),
  :mod:`agents.rollout` (:func:`rollout`, the one evaluation loop of every agent),
  :mod:`agents.env_args` (the env's arguments as one typed :class:`EnvConfig`),
  :mod:`agents.ids` (env ids, run names), :mod:`agents.data_dir` (paths in the public data);
- :mod:`agents.sb3`: learned agents on stable-baselines3 / sb3-contrib (models, training,
  hyperparameters, imitation, Optuna, run folders, model zips);
- :mod:`agents.planning`: planners that simulate ahead on copies of the env (the rollout
  planner, the search over rules);
- :mod:`agents.selection`: the learned rule selector (model, training, rollout search,
  distillation, report, ``python -m agents.selection``);
- :mod:`agents.evaluation`: contenders on identical episodes -> one comparison -> one report;
  the logic of ``evaluate.py``;
- :mod:`agents.rllib`: the envs in RLlib's masked-action convention.

Only the protocol and the heuristic agents load eagerly; the rest (torch, stable-baselines3,
sb3-contrib: the ``train`` extra) load on first use.
"""

from __future__ import annotations

from agents.base import Agent, HeuristicAgent, heuristic_env_kwargs
from agents.lazy import lazy_exports

_LAZY = {
    ".sb3.learned": ("LearnedAgent", "load_agent", "detect_algo"),
    ".sb3.model_zip": ("load_model",),
    ".sb3.factory": ("make_model", "algo_class"),
    ".sb3.hyperparams": ("ALGO_NAMES", "load_hyperparams", "parse_key_values"),
    ".sb3.train_settings": ("TrainSettings",),
    ".sb3.training": ("TrainResult", "train"),
    ".rollout": ("EpisodeOutcome", "rollout", "rollout_sequence", "heuristic_outcomes"),
    "palgym.bench.stats": ("bootstrap_geomean", "paired_ratios"),
    ".evaluation.comparison": ("SideBySide", "run_side_by_side"),
}

__getattr__, _names = lazy_exports(__name__, _LAZY)
__all__ = ["Agent", "HeuristicAgent", "heuristic_env_kwargs", *_names]
