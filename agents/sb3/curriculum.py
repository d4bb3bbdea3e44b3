"""A curriculum over trace windows: train more on the windows where the agent trails PAL.

:class:`CurriculumWrapper` replaces the env's uniform draw of (trace, window start) by a draw
from a fixed pool of windows: every trace's half-overlapping windows of w jobs (starts 0,
w/2, w, ... while the window fits, plus the window ending at the trace's last job, so every
job is in some window; a trace of at most w jobs is one window). With the env's
``reward: relative`` an episode's return is (sum JCT(baseline) - sum JCT(agent)) /
reward_scale, so a negative return is how far the agent trails the baseline on that window.
Window i is drawn with probability

    p_i = floor / N + (1 - floor) x d_i / sum_j d_j,    d_i = max(0, -R_i)

where ``R_i`` is the last return on window i and N the pool size; a window never played has
``d_i`` = the largest d of the played ones (1.0 while none is played, and p uniform while
every d is 0), so every window is visited and none is starved below floor / N.

Seeding: the first ``reset(seed=s)`` seeds the wrapper's generator with s, later resets
without a seed continue it, so the same seed and the same returns give the same windows.
A reset with the same seed as the previous one replays the previous window (the K episodes
of :mod:`agents.sb3.input_driven` stay on one input). ``options`` naming ``trace`` or
``window_start`` pass through untouched. ``info["curriculum"]`` at reset names the window
and its probability; :meth:`CurriculumWrapper.summary` gives every window's visits and last
return.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from palgym.errors import ConfigError


def window_pool(num_jobs: list[int], window: int | None) -> list[tuple[int, int]]:
    """``(trace index, window start)`` of every window of the pool (module docstring).

    Args:
        num_jobs: jobs of each trace.
        window: jobs per episode (None: each whole trace is one window).
    """
    pool = []
    for index, jobs in enumerate(num_jobs):
        if window is None or window >= jobs:
            pool.append((index, 0))
            continue
        starts = list(range(0, jobs - window + 1, max(window // 2, 1)))
        if starts[-1] + window < jobs:
            starts.append(jobs - window)
        pool.extend((index, start) for start in starts)
    return pool


def sampling_probabilities(last_returns: list[float | None], floor: float) -> np.ndarray:
    """The probability of each window (see the module docstring).

    Args:
        last_returns: the last relative return of each window, None if never played.
        floor: share of the probability spread uniformly, in (0, 1].

    Returns:
        float64 (N,), summing to 1.
    """
    played = [max(0.0, -r) for r in last_returns if r is not None]
    unplayed = max(played) if played else 1.0
    deficit = np.array([unplayed if r is None else max(0.0, -r) for r in last_returns])
    uniform = np.full(len(deficit), 1.0 / len(deficit))
    if deficit.sum() <= 0.0:
        return uniform
    return floor * uniform + (1.0 - floor) * deficit / deficit.sum()


def check_curriculum(floor: float | None, env_kwargs: dict[str, Any]) -> None:
    """Refuse a floor outside (0, 1] or an env whose return is not relative to a baseline.

    Raises:
        ConfigError: naming the argument and its value.
    """
    if floor is None:
        return
    if not 0.0 < floor <= 1.0:
        raise ConfigError(f"--curriculum FLOOR must be in (0, 1], got {floor}")
    if env_kwargs.get("reward") != "relative":
        raise ConfigError("--curriculum weights windows by how far the agent trails the "
                          f"baseline: use --env-kwargs reward:relative (got reward "
                          f"{env_kwargs.get('reward', 'jct')!r})")


class CurriculumWrapper(gym.Wrapper[Any, Any, Any, Any]):
    """Draw each episode's window by :func:`sampling_probabilities` (module docstring).

    Args:
        env: a palgym cluster env (``traces`` and ``window`` are read from it).
        floor: share of the probability spread uniformly, in (0, 1].
    """

    def __init__(self, env: gym.Env[Any, Any], floor: float) -> None:
        super().__init__(env)
        traces = env.get_wrapper_attr("traces")
        self.floor = float(floor)
        self.pool = window_pool([t.num_jobs for t in traces], env.get_wrapper_attr("window"))
        self.last_returns: list[float | None] = [None] * len(self.pool)
        self.visits = [0] * len(self.pool)
        self._rng = np.random.default_rng(0)
        self._seed: int | None = None
        self._current: int | None = None
        self._return = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        """Reset on the drawn window (or on the one ``options`` names)."""
        options = dict(options or {})
        if "trace" in options or "window_start" in options:
            self._current = None
            return self.env.reset(seed=seed, options=options)
        replay = seed is not None and seed == self._seed and self._current is not None
        if seed is not None:
            self._seed = seed
            self._rng = np.random.default_rng(seed)
        probabilities = sampling_probabilities(self.last_returns, self.floor)
        if not replay:
            self._current = int(self._rng.choice(len(self.pool), p=probabilities))
        assert self._current is not None
        trace, start = self.pool[self._current]
        self.visits[self._current] += 1
        self._return = 0.0
        obs, info = self.env.reset(seed=seed, options={**options, "trace": trace,
                                                       "window_start": start})
        info["curriculum"] = {"trace": trace, "window_start": start,
                              "probability": float(probabilities[self._current])}
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step; at the episode's end record its return for its window."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        if (terminated or truncated) and self._current is not None:
            self.last_returns[self._current] = self._return
        return obs, float(reward), terminated, truncated, info

    def summary(self) -> list[dict[str, Any]]:
        """Per window: trace index, start, visits, last return (None: never played)."""
        return [{"trace": trace, "window_start": start, "visits": visits, "last_return": last}
                for (trace, start), visits, last in zip(self.pool, self.visits,
                                                        self.last_returns, strict=True)]
