"""Training callbacks: seeded (masked) evaluation, invalid-action logging, a tqdm progress bar.

The evaluation callbacks re-seed their one-env evaluation ``VecEnv`` before every evaluation,
so each point of the learning curve is measured on the *same* episodes (and on the same
episodes as the heuristic references of :func:`agents.rollout.heuristic_outcomes`). On resume
they reload the previous ``evaluations.npz`` and append to it.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback

from agents.sb3.envs import INFO_KEYWORDS
from palgym.progress import SweepProgress

logger = logging.getLogger(__name__)


class _SeededEval:
    """Mixin for EvalCallback subclasses: fixed episodes, resumable ``evaluations.npz``.

    Args:
        eval_seed: seed given to the evaluation env before every evaluation.
        references: ``{policy: mean return}`` on the same episodes, for the log line.
        restore: reload an existing ``evaluations.npz`` (resume) instead of overwriting it.
    """

    eval_env: Any
    eval_freq: int
    n_calls: int
    num_timesteps: int
    log_path: str | None
    last_mean_reward: float

    def __init__(
        self,
        *args: Any,
        eval_seed: int,
        references: Mapping[str, float] | None = None,
        restore: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.eval_seed = eval_seed
        self.references = dict(references or {})
        self.restore = restore

    def _init_callback(self) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Training and eval env are not of the same")
            super()._init_callback()  # type: ignore[misc]
        if self.restore:
            self._restore()

    def _restore(self) -> None:
        path = Path(f"{self.log_path}.npz") if self.log_path else None
        if path is None or not path.is_file():
            return
        with np.load(path) as data:
            self.evaluations_timesteps = [int(t) for t in data["timesteps"]]
            self.evaluations_results = [list(map(float, r)) for r in data["results"]]
            self.evaluations_length = [list(map(int, n)) for n in data["ep_lengths"]]
        if self.evaluations_results:
            self.best_mean_reward = max(float(np.mean(r)) for r in self.evaluations_results)

    def _on_step(self) -> bool:
        due = self.eval_freq > 0 and self.n_calls % self.eval_freq == 0
        if due:
            self.eval_env.seed(self.eval_seed)
        keep_going: bool = super()._on_step()  # type: ignore[misc]
        if due:
            refs = ", ".join(f"{name} {value:.6g}" for name, value in self.references.items())
            logger.info("eval at %d steps: mean return %.6g%s", self.num_timesteps,
                        self.last_mean_reward, f" (references: {refs})" if refs else "")
        return keep_going


class SeededEvalCallback(_SeededEval, EvalCallback):
    """SB3's EvalCallback on fixed episodes (for ``ppo`` and ``dqn``)."""


class SeededMaskableEvalCallback(_SeededEval, MaskableEvalCallback):
    """sb3-contrib's MaskableEvalCallback on fixed episodes (for ``maskable_ppo``)."""


class InvalidActionLogger(BaseCallback):
    """Log ``rollout/invalid_actions_mean``: invalid actions per finished training episode.

    Reads the Monitor records (:data:`agents.sb3.envs.INFO_KEYWORDS`) of the last 100 episodes;
    0 for masked agents, the fallback count for ``ppo`` / ``dqn``.
    """

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        key = INFO_KEYWORDS[0]
        values = [ep[key] for ep in self.model.ep_info_buffer or () if key in ep]
        if values:
            self.logger.record("rollout/invalid_actions_mean", float(np.mean(values)))


class TqdmProgressBar(BaseCallback):
    """Progress over the timesteps of one ``learn`` call on stderr: a tqdm bar on a terminal,
    else a line with the ETA every 15 s (:class:`palgym.progress.SweepProgress`).

    SB3's own ``progress_bar=True`` needs ``rich``; this needs only tqdm (a palgym dependency).
    """

    def __init__(self) -> None:
        super().__init__()
        self._bar: SweepProgress | None = None

    def _on_training_start(self) -> None:
        total = int(self.locals["total_timesteps"]) - int(self.model.num_timesteps)
        self._bar = SweepProgress(total, desc="env steps")

    def _on_step(self) -> bool:
        if self._bar is not None:
            self._bar.update(self.training_env.num_envs)
        return True

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
