"""Observed rates: the optional ``gpus`` key of the env's observation (``observed_rates=True``).

After every round, each job that ran the whole round (no restart time left at its start) and
made progress gives an observed slowdown ``o = (R / iterations done in the round) / (T_it x
locality_penalty)`` (:func:`palgym.policies.belief.observed_slowdowns`, the observation the
``online`` belief learns from). A job runs at the pace of its slowest GPU, so ``o`` is what the
scheduler saw of every GPU of the job (an upper bound of each one's slowdown for the job's
class); :class:`ObservedRates` keeps, per GPU, the last such ``o`` and the round index it was
seen at. Which GPU the slowness is blamed on is the ``online`` belief's attribution, shown in
the ``believed_*`` columns.

The ``gpus`` rows (:class:`palgym.envs.features.GpuFeatures`): the belief of each class
(``believed_A`` .. ``believed_D``, min(value / SLOWDOWN_MAX, 1)), the last observed slowdown
(min(o / SLOWDOWN_MAX, 1); 0 before the GPU's first observation) and its age in rounds
(min(age / OBSERVED_AGE_ROUNDS, 1); 0 right after the round it was seen in, 1 before any).
"""

from __future__ import annotations

import numpy as np

from palgym.envs.features import GPU, GPU_FEATURES, OBSERVED_AGE_ROUNDS, SLOWDOWN_MAX
from palgym.policies.belief import observed_slowdowns, progress_snapshot
from palgym.sim.types import NUM_PERF_CLASSES, BoolArray, FloatArray, IntArray
from palgym.sim.views import SimView

NEVER = -1
"""``seen_round`` of a GPU never observed."""


class ObservedRates:
    """Per GPU, the last observed slowdown (see the module docstring).

    Args:
        sim: a fresh simulator.

    Attributes:
        slowdown: float64 (G,), the last observed slowdown of each GPU (0: never observed).
        seen_round: int64 (G,), ``sim.round_index`` after the round it was observed in
            (:data:`NEVER`: never).
    """

    def __init__(self, sim: SimView) -> None:
        num_gpus = sim.cluster.num_gpus
        self.slowdown: FloatArray = np.zeros(num_gpus)
        self.seen_round: IntArray = np.full(num_gpus, NEVER, np.int64)
        self._round = sim.round_index
        self._snapshot: tuple[IntArray, IntArray, FloatArray, BoolArray] | None = None

    def watch(self, sim: SimView) -> None:
        """Called after every commit (snapshot the progress) and every advance (record the
        round's observations)."""
        if sim.round_index == self._round:
            self._snapshot = progress_snapshot(sim)
            return
        self._round = sim.round_index
        if self._snapshot is None:
            return
        gpus, owners, iterations, fresh = self._snapshot
        self._snapshot = None
        starts, ends, observed = observed_slowdowns(sim, owners, iterations, fresh)
        counts = ends - starts
        offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        seen = gpus[np.arange(int(counts.sum())) + offsets]
        self.slowdown[seen] = np.repeat(observed, counts)
        self.seen_round[seen] = sim.round_index


def gpu_rows(believed: FloatArray, rates: ObservedRates, round_index: int) -> np.ndarray:
    """float32 (G, F_g): the ``gpus`` rows (see the module docstring).

    Args:
        believed: float64 (C, G), the belief's values.
        rates: the episode's observed rates.
        round_index: the current round.
    """
    rows = np.zeros((believed.shape[1], len(GPU_FEATURES)), np.float32)
    rows[:, GPU.believed_A : GPU.believed_A + NUM_PERF_CLASSES] = np.minimum(
        believed / SLOWDOWN_MAX, 1.0).T
    rows[:, GPU.observed_slowdown] = np.minimum(rates.slowdown / SLOWDOWN_MAX, 1.0)
    age = np.where(rates.seen_round == NEVER, OBSERVED_AGE_ROUNDS, round_index - rates.seen_round)
    rows[:, GPU.observed_age] = np.minimum(age / OBSERVED_AGE_ROUNDS, 1.0)
    return rows
