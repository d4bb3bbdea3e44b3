"""What the env reports at an episode's end: completed / total, censored JCT, and a note."""

from __future__ import annotations

import math

import numpy as np

from palgym.envs import ClusterEnv


def test_truncated_episode_reports_unfinished_jobs_and_why_jct_is_nan() -> None:
    """An agent that always ends the round places no job: after max_rounds rounds of 360 s
    every measured job is still waiting, so no JCT exists and each job's censored JCT is the
    truncation time minus its submission."""
    env = ClusterEnv("sia-philly-gen-0", window=12, task="scheduling", max_rounds=40,
                     round_duration_s=360.0)
    env.reset(seed=3)
    submit_s = env.episode.trace.submit_time_s.astype(np.float64)
    for _ in range(10_000):
        _, _, terminated, truncated, info = env.step(env.codec.END_ROUND)
        if terminated or truncated:
            break
    assert truncated and not terminated
    metrics = info["episode_metrics"]
    assert (metrics["num_jobs"], metrics["num_completed"], metrics["num_unfinished"]) == (12, 0, 12)
    assert math.isnan(metrics["avg_jct_s"]) and metrics["num_rounds"] == 40
    end_s = 40 * 360.0
    assert env.simulator.now_s == end_s
    expected = float(np.mean(end_s - submit_s[submit_s <= end_s])) if (submit_s <= end_s).all() \
        else None
    assert expected is not None and math.isclose(metrics["censored_avg_jct_s"], expected,
                                                 rel_tol=1e-12)
    note = info["episode_note"]
    assert "truncated after 40 rounds" in note and "12 of 12" in note and "NaN" in note


def test_terminated_episode_says_all_jobs_completed() -> None:
    env = ClusterEnv("sia-philly-gen-0", window=12)
    env.reset(seed=3)
    for _ in range(10_000):
        _, _, terminated, truncated, info = env.step(env.heuristic_action("pal"))
        if terminated or truncated:
            break
    assert terminated
    metrics = info["episode_metrics"]
    assert metrics["num_completed"] == metrics["num_jobs"] == 12 and metrics["num_unfinished"] == 0
    jct = env.simulator.records().jct_s
    assert math.isclose(metrics["censored_avg_jct_s"], float(np.mean(jct)), rel_tol=1e-12)
    assert info["episode_note"] == "all 12 measured jobs completed"
