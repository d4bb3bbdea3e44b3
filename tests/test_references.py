"""The relative reward's reference episodes, cached per process (palgym.envs.references): a
cached reference is the fresh run bit for bit, every part of the key misses the cache when it
changes, the cache is bounded, and an env reset on an episode seen before runs no reference."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from palgym.bundled import bundled_trace_paths
from palgym.envs import ClusterEnv
from palgym.envs.episodes import job_window
from palgym.envs.references import (
    REFERENCES,
    LruCache,
    reference_completions,
    reference_key,
)
from palgym.io.sia import read_sia_trace
from palgym.policies.belief import BeliefOptions
from palgym.policies.durations import Durations
from palgym.sim.config import preset
from palgym.simulate import Episode, make_episode, run_episode

TRACE = str(sorted(bundled_trace_paths().values())[0])
ONLINE = BeliefOptions("online")


def episode(seed: int = 3, start: int = 10, size: int = 24, belief: BeliefOptions = ONLINE,
            **options: object) -> Episode:
    trace = job_window(read_sia_trace(TRACE), start, size)
    return make_episode(trace, config=preset("dynamic", **options), seed=seed, belief=belief)


def test_cached_reference_is_the_fresh_run_bit_for_bit() -> None:
    cache: LruCache[np.ndarray] = LruCache(4)
    base = episode()
    noisy = Durations("noisy", sigma=0.5)
    first = reference_completions(base, "pal", "srtf", noisy, cache=cache)
    again = reference_completions(episode(), "pal", "srtf", noisy, cache=cache)  # an equal episode
    fresh = run_episode(base, "pal", "srtf", durations=noisy).records.completion_time_s
    assert (cache.misses, cache.hits) == (1, 1)
    assert again is first and first.tobytes() == fresh.tobytes()
    assert not first.flags.writeable  # the cached array cannot be changed by a caller
    with pytest.raises(ValueError):
        first[0] = 0.0


def test_every_key_part_misses_the_cache() -> None:
    base = episode()
    known = Durations("noisy", sigma=0.5)
    base_key = reference_key(base, "pal", "fifo", known)
    hand_built = replace(base, placement_rng=np.random.default_rng(99))  # same hash
    artifact_rng = replace(base, placement_rng=random.Random(42))
    variants = {
        "policy": reference_key(base, "pm-first", "fifo", known),
        "queue order": reference_key(base, "pal", "las", known),
        "duration level": reference_key(base, "pal", "fifo", Durations("clairvoyant")),
        "estimate sigma": reference_key(base, "pal", "fifo", Durations("noisy", sigma=0.4)),
        "episode seed": reference_key(episode(seed=4), "pal", "fifo", known),
        "trace window": reference_key(episode(start=11), "pal", "fifo", known),
        "config": reference_key(episode(round_duration_s=300.0), "pal", "fifo", known),
        "dynamics": reference_key(replace(base, config=preset("default")), "pal", "fifo",
                                  known),
        "placement stream": reference_key(hand_built, "pal", "fifo", known),
        "placement stream kind": reference_key(artifact_rng, "pal", "fifo", known),
        **{f"belief {name}": reference_key(episode(belief=replace(ONLINE, **{name: value})),
                                           "pal", "fifo", known)
           for name, value in (("mode", "stale"), ("alpha", 0.5), ("refit_tolerance", 0.2),
                               ("refit_interval_rounds", 5), ("solver", "sklearn"))},
    }
    assert hand_built.episode_hash() == base.episode_hash()
    keys = [base_key, *variants.values()]
    assert len(set(keys)) == len(keys), [n for n, k in variants.items() if k == base_key]
    # the durations' own seed is the episode's: the same knowledge at another seed is one key
    assert reference_key(base, "pal", "fifo", known.for_seed(123)) == base_key
    # a miss runs the variant: its reference is that variant's own run
    cache: LruCache[np.ndarray] = LruCache(8)
    stale = episode(belief=BeliefOptions("stale"))
    for ep, policy in ((base, "pal"), (stale, "pal"), (base, "packed-sticky")):
        got = reference_completions(ep, policy, "fifo", cache=cache)
        want = run_episode(ep, policy, "fifo").records.completion_time_s
        assert got.tobytes() == want.tobytes()
    assert (cache.misses, cache.hits) == (3, 0)


def test_the_cache_is_bounded_and_least_recently_used() -> None:
    cache: LruCache[str] = LruCache(2)
    computed: list[str] = []

    def value(key: str) -> str:
        return cache.get(key, lambda: computed.append(key) or key.upper())

    assert [value(k) for k in ("a", "b", "a", "c", "b", "a")] == list("ABACBA")
    # "c" evicts "b" (the least recently used after "a" was read again), "b" evicts "a", ...
    assert computed == ["a", "b", "c", "b", "a"] and len(cache) == 2
    with pytest.raises(ValueError, match="max_entries must be >= 1"):
        LruCache(0)


def test_env_reset_on_a_seen_episode_runs_no_reference() -> None:
    REFERENCES.clear()
    kwargs = dict(preset="dynamic", window=24, max_tiers=6, belief="online", reward="relative",
                  baseline_policy="pal")
    env = ClusterEnv(TRACE, **kwargs)  # type: ignore[arg-type]
    env.reset(seed=5)
    assert (REFERENCES.misses, REFERENCES.hits) == (1, 0)
    # the env's reference is PAL's run on its episode, under its belief and duration knowledge
    stored = reference_completions(env.episode, "pal", "fifo", env.durations)
    fresh = run_episode(env.episode, "pal", "fifo").records.completion_time_s
    assert stored.tobytes() == fresh.tobytes() and env.episode.belief == ONLINE
    hits = REFERENCES.hits
    for _ in range(3):  # input-driven baselines: K resets with one seed
        env.reset(seed=5)
    ClusterEnv(TRACE, **kwargs).reset(seed=5)  # another env of the process, same episode
    assert (REFERENCES.misses, REFERENCES.hits - hits) == (1, 4)
    env.reset(seed=6)
    assert REFERENCES.misses == 2
