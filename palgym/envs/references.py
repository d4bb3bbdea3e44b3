"""What the env computes once per episode and reuses within the process: the profile's slowdown
factors and the reference episode of the ``relative`` reward.

The reference run (:func:`palgym.simulate.run_episode` of the baseline policy) depends only on
the episode and on the reference policy and what it knows, so its completion times are
computed once per :class:`ReferenceKey` and kept in a small bounded LRU cache
(:data:`REFERENCES`): a reset on an episode seen before in the process (an evaluation's
episodes, the K rollouts of one input of input-driven baselines, a second env on the same
episodes) costs no simulation. The key holds everything the run reads:

- the episode: :meth:`~palgym.simulate.Episode.episode_hash` (trace content, profile content,
  cluster, configuration with its dynamics, seed) and a digest of the placement stream's state
  (made from the seed by :func:`~palgym.simulate.make_episode`; kept for hand-built episodes);
- the reference policy and its queue order, by name;
- what they know: the duration knowledge (level, estimate sigma, episode seed) and the belief
  (mode, alpha, refit tolerance and interval, solver; :class:`~palgym.policies.belief.
  BeliefOptions`).

The profile's factors the run starts from are a function of the profile and
``config.slowdown_clusters`` (both in the episode hash) and come from the same process cache
(:data:`PROFILE_FACTORS`). Not in the key, because the cached value does not depend on them:
the reward's name, scale and terms (the tracker reads the completion times), the step backend
and the driver (bit-identical by construction, ``tests/test_engine_kernels.py``,
``tests/test_driver.py``).
"""

from __future__ import annotations

import hashlib
import random
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from palgym.policies.belief import BeliefOptions
from palgym.policies.durations import CLAIRVOYANT, Durations
from palgym.policies.slowdown import SlowdownFactors
from palgym.sim.types import FloatArray
from palgym.simulate import Episode, run_episode, slowdown_factors

V = TypeVar("V")


class LruCache(Generic[V]):
    """A bounded least-recently-used cache.

    Args:
        max_entries: entries kept (>= 1); the least recently used one is dropped beyond it.

    Attributes:
        hits: lookups answered from the cache.
        misses: lookups that computed their value.

    Raises:
        ValueError: for ``max_entries`` < 1.
    """

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self.hits = self.misses = 0
        self._entries: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value of ``key``, computed by ``compute()`` (and kept) on a miss."""
        if key in self._entries:
            self.hits += 1
            self._entries.move_to_end(key)
            return self._entries[key]
        self.misses += 1
        value = compute()
        self._entries[key] = value
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry and zero the counters."""
        self._entries.clear()
        self.hits = self.misses = 0


REFERENCES: LruCache[FloatArray] = LruCache(256)
"""The process's reference completion times (float64 (J,) each, read-only; 256 episodes of
160 jobs are 0.3 MB)."""

PROFILE_FACTORS: LruCache[SlowdownFactors] = LruCache(16)
"""The process's profile slowdown factors, by profile content and cluster count rule."""


@dataclass(frozen=True)
class ReferenceKey:
    """Everything a reference run depends on (see the module docstring).

    Attributes:
        episode_hash: the episode's hash.
        placement_stream: SHA-256 of the placement stream's state.
        policy: the reference placement's name.
        queue_order: its queue order's name.
        durations: its duration knowledge in this episode (level, sigma, episode seed).
        belief: its belief (PAL / PM-First).
    """

    episode_hash: str
    placement_stream: str
    policy: str
    queue_order: str
    durations: Durations
    belief: BeliefOptions


def reference_key(episode: Episode, policy: str, queue_order: str,
                  durations: Durations = CLAIRVOYANT) -> ReferenceKey:
    """The :class:`ReferenceKey` of ``policy`` under ``queue_order`` on ``episode``."""
    rng = episode.placement_rng
    state = rng.getstate() if isinstance(rng, random.Random) else rng.bit_generator.state
    return ReferenceKey(
        episode_hash=episode.episode_hash(),
        placement_stream=hashlib.sha256(repr(state).encode()).hexdigest(),
        policy=policy, queue_order=queue_order,
        durations=durations.for_seed(episode.seed), belief=episode.belief,
    )


def profile_factors(episode: Episode, cache: LruCache[SlowdownFactors] = PROFILE_FACTORS
                    ) -> SlowdownFactors:
    """The slowdown factors of the episode's profile with its configuration's cluster count
    rule (:func:`palgym.simulate.slowdown_factors`), fitted once per profile and rule."""
    key = (episode.profile.content_hash(), str(episode.config.slowdown_clusters))
    return cache.get(key, lambda: slowdown_factors(episode))


def reference_completions(episode: Episode, policy: str, queue_order: str,
                          durations: Durations = CLAIRVOYANT,
                          cache: LruCache[FloatArray] = REFERENCES) -> FloatArray:
    """float64 (J,), read-only: the completion times (s; NaN for a job unfinished at a
    truncation) of the measured jobs when ``policy`` under ``queue_order`` runs ``episode``
    (PAL / PM-First deciding on ``episode.belief``; the order knowing durations as
    ``durations`` does), run once per :class:`ReferenceKey` in the process.

    Raises:
        ConfigError, PalgymError: as :func:`palgym.simulate.run_episode`.
    """
    def run() -> FloatArray:
        result = run_episode(episode, policy, queue_order, profile_factors(episode),
                             durations=durations)
        completions = np.array(result.records.completion_time_s, dtype=np.float64)
        completions.flags.writeable = False
        return completions

    return cache.get(reference_key(episode, policy, queue_order, durations), run)
