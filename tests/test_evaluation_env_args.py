"""The env's arguments as a typed config (agents.env_args), checked against the env
card's Arguments section and the env itself."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

from agents.env_args import (
    EPISODE_KWARGS,
    EPISODE_SOURCE_KWARGS,
    HEURISTIC_KWARGS,
    changed_kwargs,
    env_argument_names,
    env_config,
    env_config_class,
    episode_kwargs,
    format_kwargs,
)
from palgym.errors import ConfigError


def test_config_has_the_env_card_defaults() -> None:
    # ClusterEnv's card: K = 16 slots, T = 4 tiers, reward_scale 360000 s, the 16x4 cluster,
    # whole traces (window None), FIFO, the jct reward.
    config = env_config({}, "test")
    assert (config.num_slots, config.max_tiers, config.reward_scale) == (16, 4, 360_000.0)
    assert (config.cluster, config.window, config.queue_order, config.reward) == (
        "16x4", None, "fifo", "jct")
    assert dataclasses.is_dataclass(config)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.window = 3  # type: ignore[misc]


def test_every_role_names_env_arguments() -> None:
    names = set(env_argument_names())
    assert {*EPISODE_KWARGS, *EPISODE_SOURCE_KWARGS, *HEURISTIC_KWARGS} <= names
    assert {f.name for f in dataclasses.fields(env_config_class())} == names


def test_an_env_built_from_the_config_equals_one_built_from_kwargs() -> None:
    kwargs = {"trace": "sia-philly-gen-0", "window": 8, "queue_order": "las", "num_slots": 4}
    config = env_config(kwargs, "test")
    a = gym.make("palgym/PALPlacement-v0", **dataclasses.asdict(config))
    b = gym.make("palgym/PALPlacement-v0", **kwargs)
    try:
        assert a.observation_space == b.observation_space
        assert a.reset(seed=3)[1]["episode_hash"] == b.reset(seed=3)[1]["episode_hash"]
    finally:
        a.close()
        b.close()


def test_unknown_kwargs_are_named_with_their_source() -> None:
    with pytest.raises(ConfigError, match=r"run.yml: 'slots', 'tiers': not an argument"):
        env_config({"slots": 4, "tiers": 2, "window": 5}, "run.yml")


def test_episode_kwargs_keep_only_what_shapes_the_episode() -> None:
    given = {"sticky": True, "preset": "dynamic", "max_tiers": 16, "window": 20}
    assert episode_kwargs(given) == {"preset": "dynamic", "window": 20}


def test_changed_kwargs_are_those_besides_the_ids_defaults() -> None:
    # -v1 registers max_tiers=8 and max_gpus_per_node=16 (palgym/__init__.py), -v0 keeps the
    # constructor's 4 and None; reward_scale 360000 (an int here) is the default 360000.0.
    given = {"window": 20, "max_tiers": 8, "max_gpus_per_node": 16, "reward_scale": 360000,
             "queue_order": "srtf"}
    assert changed_kwargs("palgym/PALPlacement-v1", given) == {"queue_order": "srtf",
                                                               "window": 20}
    assert list(changed_kwargs("palgym:palgym/PALPlacement-v0", given)) == [
        "max_gpus_per_node", "max_tiers", "queue_order", "window"]
    assert changed_kwargs("palgym/PALScheduling-v1", {"task": "scheduling"}) == {}
    assert changed_kwargs("palgym/PALPlacement-v0", {"task": "scheduling"}) == {
        "task": "scheduling"}


def test_format_kwargs_writes_env_kwargs_items() -> None:
    kwargs = {"belief": {"mode": "online", "alpha": 0.5}, "observed_rates": True,
              "render_mode": None, "rules": ["pal", "pal+easy"], "reward_scale": 1000}
    assert format_kwargs(kwargs) == ("belief:{mode: online, alpha: 0.5} observed_rates:true "
                                     "render_mode:null rules:[pal, pal+easy] reward_scale:1000")
    assert format_kwargs({}) == "none"


def test_evaluate_env_kwargs_reach_every_contender(tmp_path, capsys) -> None:
    """``evaluate.py --env-kwargs`` (parsed as train.py's): 5 rounds of 360 s end every
    episode at 1800 s with the reason named, and every contender's env records the kwargs."""
    import json

    from agents.evaluation.cli import main

    out = tmp_path / "o.json"
    argv = ["--trace", "sia-philly-gen-0", "--window", "10", "--policy", "pal", "--quiet",
            "--bootstrap-resamples", "20", "--json", str(out),
            "--env-kwargs", "max_rounds:5", "belief:{mode: online, alpha: 0.5}"]
    assert main(argv) == 0, capsys.readouterr().err
    result = json.loads(out.read_text(encoding="utf-8"))
    assert {r["truncation_reason"] for r in result["results"]} == {"max_rounds (5) reached"}
    assert {r["makespan_s"] for r in result["results"]} == {1800.0}
    for policy in result["policies"]:
        assert policy["env_kwargs"]["max_rounds"] == 5
        assert policy["env_kwargs"]["belief"] == {"mode": "online", "alpha": 0.5}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--env-kwargs", "bogus:1"], "--env-kwargs: 'bogus': not an argument of the env"),
        (["--env-kwargs", "nocolon"], "--env-kwargs: expected key:value, got 'nocolon'"),
        (["--env-kwargs", "trace:x"], "--env-kwargs trace: give the traces with --trace"),
        (["--env-kwargs", "preset:dynamic", "--preset", "default"],
         "--env-kwargs preset and --preset both set the env's preset: give it once"),
        (["--env-kwargs", "window:5", "--window", "10"],
         "--env-kwargs window and --window both set the env's window: give it once"),
    ],
)
def test_evaluate_env_kwargs_errors(extra: list[str], message: str, capsys) -> None:
    from agents.evaluation.cli import main

    assert main(["--trace", "sia-philly-gen-0", "--policy", "pal", "--quiet", *extra]) == 2
    err = capsys.readouterr().err
    assert f"error: {message}" in err and "Traceback" not in err, err
