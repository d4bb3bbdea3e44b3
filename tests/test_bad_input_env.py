"""The env and episode builders refuse bad arguments with errors naming the argument and the
valid values: ``window``, ``reset`` options, episode seeds, and traces the clock cannot run."""

from __future__ import annotations

import pytest

from palgym.envs.cluster_env import ClusterEnv
from palgym.errors import ConfigError, TraceFormatError
from palgym.sim.cluster import ClusterSpec
from palgym.sim.variability import VariabilityProfile
from palgym.sim.workload import Trace
from palgym.simulate import make_episode

TRACE = "sia-philly-gen-0"  # 160 jobs


def small_trace(submit_s: float = 10.0) -> Trace:
    return Trace.from_columns("small", job_id=[1, 2], submit_time_s=[0.0, submit_s],
                              num_gpus=[1, 1], total_iterations=[10.0, 10.0],
                              iteration_time_s=[1.0, 1.0], model=["resnet50", "resnet50"])


@pytest.fixture(scope="module")
def env() -> ClusterEnv:
    return ClusterEnv([TRACE, TRACE], window=10)


@pytest.mark.parametrize("window", [0, -3, 2.5])
def test_window_names_itself_and_the_valid_values(window: object) -> None:
    with pytest.raises(ConfigError, match=r"window must be None \(whole traces\) or an integer "
                                          rf">= 1 \(jobs per episode\), got {window}"):
        ClusterEnv(TRACE, window=window)  # type: ignore[arg-type]


@pytest.mark.parametrize("index", [99, 2, -1])
def test_reset_trace_index_names_the_option_and_range(env: ClusterEnv, index: int) -> None:
    with pytest.raises(ConfigError, match=rf"reset option 'trace' {index}: .* must be in "
                                          r"\[0, 1\] \(2 traces\)"):
        env.reset(seed=0, options={"trace": index})


def test_reset_window_start_names_the_option_and_range(env: ClusterEnv) -> None:
    # 160 jobs, windows of 10: the last window starts at job 150.
    with pytest.raises(ConfigError, match=r"'window_start' must be an integer in \[0, 150\]"):
        env.reset(seed=0, options={"trace": 0, "window_start": 151})
    _, info = env.reset(seed=0, options={"trace": 0, "window_start": 150})
    assert info["window_start"] == 150


def test_reset_options_must_be_a_dict(env: ClusterEnv) -> None:
    with pytest.raises(TypeError, match=r"reset\(options=...\) must be a dict .* got str 'str'"):
        env.reset(seed=0, options="str")  # type: ignore[arg-type]


def test_unknown_reset_options_are_named_with_the_accepted_ones(env: ClusterEnv) -> None:
    with pytest.raises(ConfigError, match=r"reset options \['bogus', 'seed'\] are not known: "
                       r"the env accepts \['trace', 'window_start', 'profile'\]"):
        env.reset(seed=0, options={"trace": 0, "bogus": 1, "seed": 3})


@pytest.mark.parametrize("seed", [-1, 1.5, "0"])
def test_make_episode_names_a_bad_seed(seed: object) -> None:
    with pytest.raises(ConfigError, match=rf"seed must be an integer >= 0, got {seed!r}"):
        make_episode(small_trace(), cluster=ClusterSpec(1, 1),
                     profile=VariabilityProfile.homogeneous(1), seed=seed)  # type: ignore[arg-type]


def test_a_whole_trace_env_refuses_an_unresolvable_time_at_construction() -> None:
    with pytest.raises(TraceFormatError, match="'submit_time_s': job 2 .*clock's resolution"):
        ClusterEnv(small_trace(1e18), cluster="1x1")
    # With windows, the window drawn at reset is checked (rebased, job 2 is still at 1e18).
    env = ClusterEnv(small_trace(1e18), cluster="1x1", window=2)
    with pytest.raises(TraceFormatError, match="clock's resolution"):
        env.reset(seed=0)
