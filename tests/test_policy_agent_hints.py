"""The env's error for a placement whose GPUs no candidate holds names the likely causes: a
rule that delegates to PAL without ``class_reorder = True`` is refused naming the setting, and
runs (as PAL, bit for bit) once its class declares it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from palgym import make_placement, run_episode
from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError
from palgym.policies import placement_name
from palgym.policies.loader import register_placement
from palgym.policies.registry import placement_entry


class DelegatesToPal:
    """PAL's own placement, called from a user's class that does not declare class_reorder."""

    name = "delegates-to-pal"
    sticky = False
    deterministic = True

    def __init__(self, factors: Any, config: Any) -> None:
        self.pal = make_placement("pal", factors, config)

    def place(self, view: Any, order: np.ndarray, sampler: Any) -> np.ndarray:
        return np.asarray(self.pal.place(view, order, sampler))


class DelegatesToPalReordered(DelegatesToPal):
    """The same rule with the trait PAL has."""

    name = "delegates-to-pal-reordered"
    class_reorder = True


def env_run(policy: str) -> tuple[ClusterEnv, dict[str, Any]]:
    entry = placement_entry(placement_name(policy))
    env = ClusterEnv("sia-philly-gen-1", window=60, task="placement", queue_order="fifo",
                     sticky=entry.sticky, class_reorder=entry.class_reorder)
    env.reset(seed=4)
    while True:
        _, _, terminated, truncated, info = env.step(env.heuristic_action(policy))
        if terminated or truncated:
            return env, info


def test_a_rule_delegating_to_pal_without_class_reorder_is_refused_naming_it() -> None:
    register_placement(DelegatesToPal)
    with pytest.raises(ConfigError) as caught:
        env_run("delegates-to-pal")
    message = str(caught.value)
    assert "which no env candidate holds" in message
    assert "a rule that delegates to PAL or PM-First needs class_reorder = True on its class" \
        in message and "this env has class_reorder=False" in message
    assert "\n" not in message


def test_the_same_rule_with_class_reorder_runs_as_pal() -> None:
    register_placement(DelegatesToPalReordered)
    env, info = env_run("delegates-to-pal-reordered")
    pal = run_episode(env.episode, "pal", "fifo")
    assert np.array_equal(pal.records.completion_time_s,
                          env.simulator.records().completion_time_s)
    assert info["num_invalid_actions"] == 0
