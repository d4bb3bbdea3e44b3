"""Agents (agents/): heuristic agents, the rollout loop, hyperparameter files, model factory.

Heuristic tests need only palgym; the rest skip without the ``train`` extra (pyyaml, torch,
stable-baselines3, sb3-contrib). Episodes are 20-job windows to stay fast.
"""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import palgym  # noqa: F401  (registers the ids)
from agents.base import Agent, HeuristicAgent, heuristic_env_kwargs
from agents.rollout import heuristic_outcomes, rollout
from palgym import make_episode, run_episode
from palgym.envs.episodes import job_window, load_traces
from palgym.errors import ConfigError, PalgymError

ENV_ID = "palgym/PALPlacement-v0"
ENV_KWARGS = {"trace": "sia-philly-gen-2", "window": 20}
TINY = {"n_steps": 32, "batch_size": 32, "n_epochs": 1, "policy_kwargs": "dict(net_arch=[32])"}
TINY_DQN = {"buffer_size": 256, "learning_starts": 0, "batch_size": 32,
            "policy_kwargs": "dict(net_arch=[32])"}


def test_heuristic_agent_reproduces_run_episode() -> None:
    """PAL through the env (as an agent) == palgym.run_episode on the rebuilt episode."""
    agent = HeuristicAgent("pal")
    env = gym.make(ENV_ID, **ENV_KWARGS, **agent.env_kwargs)
    outcome = rollout(agent, env, seed=3)
    unwrapped = env.unwrapped
    trace = job_window(load_traces(ENV_KWARGS["trace"])[0], outcome.window_start, 20)
    episode = make_episode(trace, cluster=unwrapped.cluster, config=unwrapped.config,
                           seed=outcome.seed)
    assert episode.episode_hash() == outcome.episode_hash
    direct = run_episode(episode, "pal", "fifo")
    assert outcome.metrics["avg_jct_s"] == direct.metrics.avg_jct_s
    assert outcome.metrics["num_invalid_actions"] == 0
    assert math.isclose(outcome.episode_return, -float(np.sum(direct.records.jct_s)) / 360_000,
                        rel_tol=1e-9)
    assert isinstance(agent, Agent)


def test_heuristic_agent_needs_binding_and_known_name() -> None:
    with pytest.raises(PalgymError, match="bind"):
        HeuristicAgent("pal").predict({})
    with pytest.raises(ConfigError, match="unknown placement"):
        HeuristicAgent("best-fit")
    assert heuristic_env_kwargs("packed-sticky") == {"sticky": True, "class_reorder": False}
    assert heuristic_env_kwargs("pm-first") == {"sticky": False, "class_reorder": True}
    assert heuristic_env_kwargs("random-non-sticky") == {"sticky": False, "class_reorder": False}


def test_heuristic_outcomes_visit_the_seeded_vec_env_episodes() -> None:
    """References and a one-env DummyVecEnv seeded alike (the eval callback) see the same
    episodes, in order, with the same returns."""
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    from agents.sb3.envs import make_env

    outcomes = heuristic_outcomes(ENV_ID, ENV_KWARGS, seed=7, num_episodes=2, policies=["pal"])
    venv = vec_env.DummyVecEnv([lambda: make_env(ENV_ID, ENV_KWARGS)])
    venv.seed(7)
    venv.reset()
    hashes, returns, total = [venv.reset_infos[0]["episode_hash"]], [], 0.0
    while len(returns) < 2:
        _, rewards, dones, _ = venv.step(np.array(venv.env_method("heuristic_action", "pal")))
        total += float(rewards[0])
        if dones[0]:
            returns.append(total)
            hashes.append(venv.reset_infos[0]["episode_hash"])
            total = 0.0
    venv.close()
    assert [o.episode_hash for o in outcomes["pal"]] == hashes[:2]
    assert np.allclose([o.episode_return for o in outcomes["pal"]], returns, rtol=1e-12)


# ---------------------------------------------------------------- hyperparameters
def test_hyperparameter_files_merge_default_and_env_entry() -> None:
    pytest.importorskip("yaml")
    from agents.sb3.hyperparams import ALGO_NAMES, load_hyperparams

    expected = {
        "policy": "CandidateScoringPolicy", "n_timesteps": 200000, "n_envs": 8, "n_steps": 64,
        "batch_size": 128, "n_epochs": 10, "learning_rate": 0.0003, "gamma": 0.999,
        "gae_lambda": 0.95, "clip_range": 0.2, "ent_coef": 0.01, "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "policy_kwargs": "dict(scorer_arch=[64, 64], net_arch=dict(pi=[], vf=[64, 64]), "
                         "activation_fn=nn.Tanh, skip_infeasible=True)",
    }
    assert load_hyperparams("maskable_ppo", ENV_ID) == expected
    scheduling = load_hyperparams("maskable_ppo", "palgym:palgym/PALScheduling-v0")
    assert scheduling == {**expected, "n_timesteps": 500000}
    assert load_hyperparams("maskable_ppo", "Other-v0") == expected  # default only
    assert load_hyperparams("dqn", ENV_ID)["buffer_size"] == 20000
    # the batched default keeps the update schedule of the one-env recipe it replaced: 512 env
    # steps per update (1 env x 512), minibatches of 128, 10 epochs
    for algo in ("maskable_ppo", "ppo"):
        default = load_hyperparams(algo, ENV_ID)
        assert default["n_envs"] * default["n_steps"] == 1 * 512
        assert (default["batch_size"], default["n_epochs"]) == (128, 10)
        # the selector env has no batched env: its own one-env recipe
        selector = load_hyperparams(algo, "palgym/PALSelector-v0")
        assert (selector["n_envs"], selector["n_steps"], selector["batch_size"]) == (1, 1024, 256)
    assert load_hyperparams("dqn", ENV_ID)["n_envs"] == 1  # off-policy: one env
    for algo in ALGO_NAMES:
        expected_policy = "CandidateScoringPolicy" if algo == "maskable_ppo" else "MultiInputPolicy"
        assert load_hyperparams(algo, ENV_ID)["policy"] == expected_policy
    with pytest.raises(ConfigError, match="algo must be one of"):
        load_hyperparams("sac", ENV_ID)


def test_cli_overrides_are_parsed_with_yaml() -> None:
    pytest.importorskip("yaml")
    from agents.sb3.hyperparams import parse_key_values

    parsed = parse_key_values([
        "n_steps:32", "learning_rate:3e-4", "gamma:0.99", "normalize:true",
        "policy_kwargs:dict(net_arch=[64, 64])", "clip_range:lin_0.2", "net:{a: 1, b: [2]}",
        "buffer_size:1e4", "trace:sia-philly-gen-0", "window:", "n_steps:64",
    ])
    assert parsed == {
        "n_steps": 64, "learning_rate": 0.0003, "gamma": 0.99, "normalize": True,
        "policy_kwargs": "dict(net_arch=[64, 64])", "clip_range": "lin_0.2",
        "net": {"a": 1, "b": [2]}, "buffer_size": 10000, "trace": "sia-philly-gen-0",
        "window": None,
    }
    assert isinstance(parsed["buffer_size"], int)
    with pytest.raises(ConfigError, match="key:value"):
        parse_key_values(["n_steps=32"])


def test_policy_kwargs_are_evaluated_safely() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("yaml")
    from agents.sb3.hyperparams import model_kwargs, resolve_policy_kwargs

    text = "dict(net_arch=dict(pi=[64], vf=[64]), activation_fn=nn.ReLU, " \
           "optimizer_class=th.optim.AdamW, optimizer_kwargs={'eps': 1e-5})"
    assert resolve_policy_kwargs(text) == {
        "net_arch": {"pi": [64], "vf": [64]}, "activation_fn": torch.nn.ReLU,
        "optimizer_class": torch.optim.AdamW, "optimizer_kwargs": {"eps": 1e-5},
    }
    assert resolve_policy_kwargs({"activation_fn": "torch.nn.Tanh"}) == {
        "activation_fn": torch.nn.Tanh}
    for bad in ("__import__('os').system('true')", "os.system", "nn.Module", "[1, 2]",
                "dict(**{'a': 1})", "lambda: 1"):
        with pytest.raises(ConfigError):
            resolve_policy_kwargs(bad)
    kwargs = model_kwargs({"policy": "MultiInputPolicy", "n_timesteps": 10, "n_envs": 2,
                           "learning_rate": "lin_0.001", "clip_range": 0.1})
    assert set(kwargs) == {"learning_rate", "clip_range"}
    assert kwargs["learning_rate"](0.5) == pytest.approx(0.0005)
    with pytest.raises(ConfigError, match="lin_"):
        model_kwargs({"learning_rate": "cos_0.1"})


# ---------------------------------------------------------------- models
@pytest.fixture(scope="module")
def venv():
    pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")
    from agents.sb3.envs import make_vec_env

    env = make_vec_env(ENV_ID, 1, seed=0, env_kwargs=ENV_KWARGS)
    yield env
    env.close()


@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo", "dqn"])
def test_make_model_builds_saves_and_acts(algo: str, venv, tmp_path: Path) -> None:
    """Each algo builds, round-trips through a zip (algo detected from the zip alone) and
    acts as a LearnedAgent; the masked one never takes an invalid action."""
    from agents.sb3.factory import algo_class, make_model
    from agents.sb3.learned import LearnedAgent, detect_algo, load_agent

    model = make_model(algo, venv, {"policy": "MultiInputPolicy",
                                    **(TINY_DQN if algo == "dqn" else TINY)}, seed=0)
    assert isinstance(model, algo_class(algo))
    model.save(tmp_path / "model.zip")
    assert detect_algo(tmp_path / "model.zip") == algo
    agent = load_agent(tmp_path)
    assert isinstance(agent, LearnedAgent) and agent.algo == algo
    assert agent.uses_masks == (algo == "maskable_ppo")
    outcome = rollout(agent, gym.make(ENV_ID, **ENV_KWARGS), seed=1)
    assert outcome.metrics["num_completed"] == 20
    if algo == "maskable_ppo":
        assert outcome.metrics["num_invalid_actions"] == 0


def test_make_model_rejects_bad_hyperparameters(venv) -> None:
    from agents.sb3.factory import make_model

    with pytest.raises(ConfigError, match="gae_lambda"):
        make_model("dqn", venv, {"gae_lambda": 0.9}, seed=0)
    with pytest.raises(ConfigError, match="not allowed"):
        make_model("ppo", venv, {"policy_kwargs": "dict(net_arch=eval('[1]'))"}, seed=0)
    with pytest.raises(ConfigError, match="algo must be one of"):
        make_model("a2c", venv, {}, seed=0)


def test_algo_detected_from_config_yml(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")
    from agents.sb3.learned import detect_algo

    (tmp_path / "model.zip").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="not a stable-baselines3 model"):
        detect_algo(tmp_path)
    (tmp_path / "config.yml").write_text("algo: dqn\n", encoding="utf-8")
    assert detect_algo(tmp_path / "model.zip") == "dqn"
    with pytest.raises(ConfigError, match="no saved model"):
        detect_algo(tmp_path / "missing")


# ---------------------------------------------------------------- trace sets in training
def test_training_uses_the_sets_train_and_validation_splits() -> None:
    pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")
    from agents.sb3.training import TrainSettings, resolve_config
    from palgym.tracesets import load_trace_set

    config = resolve_config(TrainSettings(n_timesteps=8, window=20))  # no trace: bundled set
    assert config["env_kwargs"] == {"trace": "bundled:train", "window": 20}
    assert config["eval_env_kwargs"] == {"trace": "bundled:validation", "window": 20}
    members = {m.trace: m.sha256 for m in load_trace_set("bundled").members}
    assert config["trace_sets"]["bundled"]["members"] == members
    assert config["trace_sets"]["bundled"]["splits"] == {
        "train": ["sia-philly-gen-0", "sia-philly-gen-1", "sia-philly-gen-2"],
        "validation": ["sia-philly-gen-3"]}
    config = resolve_config(TrainSettings(n_timesteps=8, trace_set=("bundled",), split="test",
                                          eval_trace="sia-philly-gen-0"))
    assert config["env_kwargs"]["trace"] == "bundled:test"
    assert config["eval_env_kwargs"]["trace"] == "sia-philly-gen-0"
    config = resolve_config(TrainSettings(n_timesteps=8, trace="sia-philly-gen-1"))
    assert config["env_kwargs"]["trace"] == "sia-philly-gen-1" and config["trace_sets"] == {}
    with pytest.raises(ConfigError, match="not both"):
        resolve_config(TrainSettings(n_timesteps=8, trace="sia-philly-gen-1",
                                     trace_set=("bundled",)))
