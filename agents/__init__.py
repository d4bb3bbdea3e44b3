"""Agents of the palgym envs: heuristics and learned SB3 / sb3-contrib models, one protocol.

- :mod:`agents.base`: the :class:`Agent` protocol (SB3's ``predict`` + ``action_masks`` +
  ``bind(env)``) and :class:`HeuristicAgent`;
- :mod:`agents.learned`: :class:`LearnedAgent`, :func:`load_agent`;
- :mod:`agents.model_zip`: :func:`load_model`, a saved model loaded without unpickling (a model
  zip can run code: SB3's unpickling only with ``trust_model``);
- :mod:`agents.factory`: :func:`make_model` (``maskable_ppo``, ``ppo``, ``dqn``);
- :mod:`agents.hyperparams`: YAML hyperparameters keyed by env id, ``key:value`` overrides;
- :mod:`agents.training`: :func:`train` into a run folder (the logic of ``train.py``);
- :mod:`agents.train_settings`: :class:`TrainSettings` and their resolution into ``config.yml``;
- :mod:`agents.rollout`: :func:`rollout`, the one evaluation loop of every agent;
- :mod:`agents.evaluation`: contenders on identical episodes -> one comparison -> one report
  (tables, CSV / JSON, plots), the trace resolver and the evaluation's defaults; the logic of
  ``evaluate.py``.

Only the protocol and the heuristic agents load eagerly; the rest (torch, stable-baselines3,
sb3-contrib: the ``train`` extra) load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from agents.base import Agent, HeuristicAgent, heuristic_env_kwargs

_LAZY = {
    "LearnedAgent": "agents.learned",
    "load_agent": "agents.learned",
    "detect_algo": "agents.learned",
    "load_model": "agents.model_zip",
    "make_model": "agents.factory",
    "algo_class": "agents.factory",
    "ALGO_NAMES": "agents.hyperparams",
    "load_hyperparams": "agents.hyperparams",
    "parse_key_values": "agents.hyperparams",
    "TrainSettings": "agents.train_settings",
    "TrainResult": "agents.training",
    "train": "agents.training",
    "EpisodeOutcome": "agents.rollout",
    "rollout": "agents.rollout",
    "rollout_sequence": "agents.rollout",
    "heuristic_outcomes": "agents.rollout",
    "bootstrap_geomean": "agents.evaluation.stats",
    "paired_ratios": "agents.evaluation.stats",
    "SideBySide": "agents.evaluation.comparison",
    "run_side_by_side": "agents.evaluation.comparison",
}


def __getattr__(name: str) -> Any:
    """Import the heavy parts on first use (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agents' has no attribute {name!r}")


__all__ = ["Agent", "HeuristicAgent", "heuristic_env_kwargs", *sorted(_LAZY)]
