"""The selector env in the training and evaluation tooling: ids, env kwargs, vector envs,
references, a 64-step train.py run and evaluate.py on its run folder (heuristics on the
identical episodes, equal to the constant selector)."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")

from agents.env_args import env_config  # noqa: E402
from agents.ids import check_env_id  # noqa: E402
from agents.sb3.envs import default_references, has_batched_env, make_vec_env  # noqa: E402
from agents.sb3.imitation import check_imitation  # noqa: E402
from palgym.envs.layouts import ENV_LAYOUTS, env_layout  # noqa: E402
from palgym.errors import ConfigError  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SELECTOR = "palgym/PALSelector-v0"
SCHEDULING = "palgym/PALScheduling-v0"
RUN = "palgym_PALSelector-v0_ppo_0"


def load_cli(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_cli", REPO_ROOT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tooling_knows_the_selector() -> None:
    assert check_env_id("palgym:" + SELECTOR) == SELECTOR
    config = env_config({"rules": "pal,pal+easy", "granularity": "decision"}, "cli", SELECTOR)
    assert config.rules == "pal,pal+easy" and config.queue_order == "fifo"
    with pytest.raises(ConfigError, match="'rules': not an argument"):
        env_config({"rules": ["pal"]}, "cli", SCHEDULING)
    with pytest.raises(ConfigError, match="'strict': not an argument"):
        env_config({"strict": True}, "cli", SELECTOR)
    assert not has_batched_env(SELECTOR) and has_batched_env(SCHEDULING)
    assert default_references(SELECTOR, {"rules": "pal,pal+easy"}) == ("pal", "pal+easy")
    assert default_references(SCHEDULING, {}) == ("pal", "packed-non-sticky")
    with pytest.raises(ConfigError, match="not for palgym/PALSelector-v0"):
        check_imitation("maskable_ppo", SELECTOR)
    assert env_layout(SELECTOR, {"rules": ["pal", "pal+easy"], "cluster": "2x8"}) == \
        ENV_LAYOUTS[SELECTOR]["rules=pal,pal+easy"]


def test_vector_env_of_the_selector_is_sb3s() -> None:
    venv = make_vec_env(SELECTOR, 2, 0, {"trace": "sia-philly-gen-0", "window": 10})
    try:
        assert type(venv).__name__ == "DummyVecEnv"
        assert venv.observation_space["state"].shape == (20,)
    finally:
        venv.close()


def constant_selector_jct(rule: str, kwargs: dict[str, object], seed: int) -> float:
    env = gym.make(SELECTOR, **kwargs)
    env.reset(seed=seed)
    while True:
        _, _, terminated, truncated, info = env.step(env.unwrapped.heuristic_action(rule))
        if terminated or truncated:
            return float(info["episode_metrics"]["avg_jct_s"])


def test_train_and_evaluate_a_selector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    monkeypatch.chdir(tmp_path)
    kwargs = ["rules:pal,pal+backfill", "queue_order:srtf"]
    code = load_cli("train").main([
        "--env", SELECTOR, "--algo", "ppo", "-n", "64", "--seed", "0", "--trace-set",
        "bundled", "--split", "train", "--window", "20", "--eval-freq", "64",
        "--eval-episodes", "1", "--num-threads", "1", "--verbose", "0", "-f", ".",
        "--env-kwargs", *kwargs, "--hyperparams", "n_steps:32", "batch_size:32", "n_epochs:1",
        "policy_kwargs:dict(net_arch=[16])"])
    assert code in (0, None)
    run = tmp_path / RUN
    import yaml

    config = yaml.safe_load((run / "config.yml").read_text(encoding="utf-8"))
    assert config["env_layout"] == env_layout(SELECTOR, {"rules": ["pal", "pal+backfill"]})
    references = yaml.safe_load((run / "references.yml").read_text(encoding="utf-8"))
    assert sorted(references["policies"]) == ["pal", "pal+backfill"]
    code = load_cli("evaluate").main([
        "--agent", str(run), "--env", SELECTOR, "--trace", "sia-philly-gen-3", "--window",
        "30", "--seeds", "0", "--policy", "pal+backfill", "pal", "--reference", "pal+backfill",
        "--baseline", "pal", "--output", "episodes.csv", "--quiet"])
    assert code in (0, None)
    with (tmp_path / "episodes.csv").open(newline="", encoding="utf-8") as handle:
        episodes = {row["policy"]: row for row in csv.DictReader(handle)}
    assert len({row["episode_hash"] for row in episodes.values()}) == 1
    assert int(episodes[str(run)]["num_steps"]) > 0
    selector_kwargs = {"trace": "sia-philly-gen-3", "window": 30, "queue_order": "srtf",
                       "rules": ["pal", "pal+backfill"]}
    for rule in ("pal", "pal+backfill"):  # the direct heuristic is the constant selector
        assert float(episodes[rule]["avg_jct_s"]) == pytest.approx(
            constant_selector_jct(rule, selector_kwargs, 0), rel=1e-12)
