"""agents.throughput: the rates of a measured span, worked out by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("stable_baselines3", reason="the train extra is not installed")

from agents.throughput import rates  # noqa: E402


def test_rates_of_a_span() -> None:
    # 2,000 steps in 40 s wall and 10 CPU-s: 50 steps/s, 5 CPU-s per 1k, 360,000 in 7,200 s
    assert rates(2000, 40.0, 10.0) == {"steps_per_s": 50.0, "cpu_s_per_1k_steps": 5.0,
                                       "steps_in_2h": 360_000.0}


def test_rates_without_steps_or_time_are_zero() -> None:
    assert rates(0, 0.0, 0.0) == {"steps_per_s": 0.0, "cpu_s_per_1k_steps": 0.0,
                                  "steps_in_2h": 0.0}
