"""Training throughput: env steps per second and CPU-seconds per 1,000 steps.

:class:`ThroughputCallback` times one ``model.learn`` call (rollouts, gradient updates and the
evaluations inside it). At every rollout end it records ``time/steps_per_s`` and
``time/cpu_s_per_1k_steps`` in the SB3 logger (log tables, ``progress.csv``, TensorBoard);
every ``print_freq`` steps it logs one line next to the evaluation lines; at the end it
writes ``throughput.yml`` to the run folder:

- ``timesteps``: env steps of this ``learn`` call (all envs);
- ``wall_s``: wall-clock seconds of the call; ``cpu_s``: CPU-seconds of this process (all its
  threads, ``time.process_time``) plus its finished child processes;
- ``steps_per_s`` = timesteps / wall_s; ``cpu_s_per_1k_steps`` = 1000 x cpu_s / timesteps;
- ``steps_in_2h`` = 7200 x steps_per_s: what this machine trains in a two-hour budget at
  that rate;
- ``cpu_scope``: ``process`` (one env or in-process envs: every step's CPU is counted) or
  ``process+finished_children`` (``SubprocVecEnv``: workers still running at the end are not
  counted, so cpu_s is a lower bound).
"""

from __future__ import annotations

import logging
import resource
import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import SubprocVecEnv

from agents.sb3.runs import write_yaml

logger = logging.getLogger(__name__)

BUDGET_S = 7200.0
"""The training budget a committed model must fit in (s)."""


def cpu_seconds() -> float:
    """CPU-seconds (user + system) of this process and its waited-for children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def rates(timesteps: int, wall_s: float, cpu_s: float) -> dict[str, float]:
    """``{steps_per_s, cpu_s_per_1k_steps, steps_in_2h}`` of ``timesteps`` steps taking
    ``wall_s`` wall-clock and ``cpu_s`` CPU seconds (0.0 where undefined: no steps or time)."""
    per_s = timesteps / wall_s if wall_s > 0 else 0.0
    return {
        "steps_per_s": per_s,
        "cpu_s_per_1k_steps": 1000.0 * cpu_s / timesteps if timesteps > 0 else 0.0,
        "steps_in_2h": BUDGET_S * per_s,
    }


class ThroughputCallback(BaseCallback):
    """Measure and report training throughput (see the module docstring).

    Args:
        run_dir: folder of ``throughput.yml`` (None: do not write it).
        print_freq: log a throughput line every this many timesteps (<= 0: only at the end).
    """

    def __init__(self, run_dir: Path | None, print_freq: int) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.print_freq = print_freq
        self._start_wall = 0.0
        self._start_cpu = 0.0
        self._start_steps = 0
        self._next_print = 0
        self.summary: dict[str, Any] = {}

    def _on_training_start(self) -> None:
        self._start_wall = time.perf_counter()
        self._start_cpu = cpu_seconds()
        self._start_steps = int(self.model.num_timesteps)
        self._next_print = self._start_steps + max(self.print_freq, 0)

    def current(self) -> dict[str, float]:
        """Rates since the start of this ``learn`` call."""
        return rates(int(self.model.num_timesteps) - self._start_steps,
                     time.perf_counter() - self._start_wall, cpu_seconds() - self._start_cpu)

    def _on_step(self) -> bool:
        if self.print_freq > 0 and self.model.num_timesteps >= self._next_print:
            self._next_print += self.print_freq
            now = self.current()
            logger.info("throughput at %d steps: %.1f steps/s, %.2f CPU-s per 1k steps",
                        self.model.num_timesteps, now["steps_per_s"],
                        now["cpu_s_per_1k_steps"])
        return True

    def _on_rollout_end(self) -> None:
        now = self.current()
        self.logger.record("time/steps_per_s", now["steps_per_s"])
        self.logger.record("time/cpu_s_per_1k_steps", now["cpu_s_per_1k_steps"])

    def _on_training_end(self) -> None:
        timesteps = int(self.model.num_timesteps) - self._start_steps
        wall_s = time.perf_counter() - self._start_wall
        cpu_s = cpu_seconds() - self._start_cpu
        in_process = not isinstance(self.training_env, SubprocVecEnv)
        self.summary = {
            "timesteps": timesteps, "wall_s": wall_s, "cpu_s": cpu_s,
            **rates(timesteps, wall_s, cpu_s),
            "n_envs": int(self.training_env.num_envs),
            "cpu_scope": "process" if in_process else "process+finished_children",
        }
        logger.info("throughput: %d steps in %.1f s: %.1f steps/s, %.2f CPU-s per 1k steps "
                    "(%.0f steps in 2 h)", timesteps, wall_s, self.summary["steps_per_s"],
                    self.summary["cpu_s_per_1k_steps"], self.summary["steps_in_2h"])
        if self.run_dir is not None:
            write_yaml(self.run_dir / "throughput.yml", self.summary)
