"""Versioned env layouts (palgym/envs/layouts.py; docs/ENV.md "Version history").

An env id's layout (task, actions and candidate kinds, observation spaces, entry names,
feature scales) must never change under a model trained on it: the committed hashes must
equal the computed ones, every id has its version-history line, the layout depends on the
declared layout arguments only, the committed models record theirs, and a model is refused
on an env of another layout.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
import yaml

import palgym  # noqa: F401 - registers the env ids
from agents.sb3.layouts import check_env_layout, check_layout, training_layout
from palgym.envs.cluster_env import ClusterEnv
from palgym.envs.layouts import (
    ENV_LAYOUTS,
    LAYOUT_ARGUMENTS,
    env_layout,
    layout_hash,
    layout_probes,
    layout_text,
    probe_layouts,
)
from palgym.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "ENV.md"
PRETRAINED = REPO / "agents" / "pretrained"
REGISTERED = sorted(env_id for env_id in gym.registry if env_id.startswith("palgym/"))
PLACEMENT = "palgym/PALPlacement-v0"


def next_version(env_id: str) -> str:
    stem, version = env_id.rsplit("-v", 1)
    return f"{stem}-v{int(version) + 1}"


@pytest.mark.parametrize("env_id", REGISTERED)
def test_committed_layouts_match_the_code(env_id: str) -> None:
    computed = probe_layouts(env_id)
    committed = ENV_LAYOUTS.get(env_id)
    assert committed == computed, (
        f"the layout of {env_id} changed (committed {committed}, computed {computed}): a model "
        f"trained on {env_id} no longer fits it. Register the changed env as "
        f"{next_version(env_id)} instead of {env_id} in palgym/__init__.py, add its hashes to "
        f"ENV_LAYOUTS in palgym/envs/layouts.py and a line for {next_version(env_id)} to "
        f"docs/ENV.md \"Version history\" (keep {env_id}'s entry and line as the record)")


def version_history() -> list[str]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Version history", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- `palgym/")]


def test_every_env_id_version_has_its_line() -> None:
    lines = version_history()
    assert set(REGISTERED) <= set(ENV_LAYOUTS), "every registered id needs its layouts"
    for env_id, probes in ENV_LAYOUTS.items():
        mine = [line for line in lines if line.startswith(f"- `{env_id}` ")]
        assert len(mine) == 1, f"docs/ENV.md \"Version history\" needs one line for {env_id}"
        assert f"(`{probes['default']}`)" in mine[0], f"{env_id}: the line names another hash"
    assert len(lines) == len(ENV_LAYOUTS), "a version-history line names no committed id"


def test_layout_text_of_the_default_placement_env() -> None:
    # K = 16 slots, T = 4 tiers: M = 2T + 2 = 10 candidates, K * M + 1 = 161 actions;
    # cluster 16x4: 4 classes x T tiers + (G_n + 1) histogram bins + 4 = 25 entries.
    lines = layout_text(gym.make(PLACEMENT)).splitlines()
    assert lines[:4] == [
        "palgym env layout 1",
        "task placement",
        "action Discrete n=161 start=0 end_round=160",
        "candidates " + " ".join([*(f"within_tier{t}" for t in range(4)),
                                  *(f"best_tier{t}" for t in range(4)), "packed", "random"]),
    ]
    assert ("observation jobs Box dtype=float32 shape=(192,) low=0.0 high=1.0 "
            "logical=(16, 12)") in lines
    assert ("observation cluster Box dtype=float32 shape=(25,) low=0.0 high=1.0 "
            "logical=(25,)") in lines
    assert lines[-1] == ("scales TIME_HORIZON_S=31536000.0 SLOWDOWN_MAX=4.0 LOCALITY_MAX=4.0 "
                         "OBSERVED_AGE_ROUNDS=100")
    gpus = layout_text(gym.make(PLACEMENT, cluster="2x8", observed_rates=True, window=8))
    assert "observation gpus Box dtype=float32 shape=(96,) low=0.0 high=1.0 logical=(16, 6)" in gpus


SAME_LAYOUT = {"v0": ("max_gpus_per_node=8", "cluster=2x8"), "v1": ("cluster=2x8", "default")}
"""The probes that share a layout by design: in -v0, a 16x4 cluster with room for 8 GPUs per
node has the 2x8 cluster's names and shapes; in -v1 the cluster does not change the layout."""


def test_every_probe_and_task_has_its_own_layout() -> None:
    hashes = []
    for env_id in REGISTERED:
        probes = dict(ENV_LAYOUTS[env_id])
        version = env_id.rsplit("-", 1)[1]
        if env_id.startswith("palgym/PALSelector"):
            assert set(probes) == set(layout_probes(env_id)), env_id
        else:
            same, kept = SAME_LAYOUT[version]
            assert probes.pop(same) == probes[kept], env_id
        hashes += probes.values()
    assert len(set(hashes)) == len(hashes)
    assert len(hashes) == sum(len(layout_probes(env_id)) - (0 if "Selector" in env_id else 1)
                              for env_id in REGISTERED)


OTHER_ARGUMENTS: dict[str, Any] = {
    "trace": "sia-philly-gen-1", "window": 10, "preset": "pal-artifact",
    "profile": str(REPO / "palgym" / "data" / "profiles" / "longhorn-1024-single-run.csv"),
    "queue_order": "srtf", "locality_penalty": 2.0, "round_duration_s": 60.0,
    "sticky": True, "class_reorder": False, "reward": "relative", "reward_scale": 1.0,
    "baseline_policy": "pal", "max_rounds": 10, "strict": True, "fallback_policy": "pm-first",
    "duration_knowledge": "noisy", "estimate_sigma": 0.5, "belief": "stale",
    "backend": "numpy", "render_mode": "ansi",
}
"""A non-default value of every env argument that is not a layout argument."""
NOT_VARIED = {"task": "chosen by the env id", "variability_data": "needs the public data "
              "(profile reads a profile the same way)"}


def test_every_env_argument_is_classified() -> None:
    parameters = set(inspect.signature(ClusterEnv.__init__).parameters) - {"self"}
    classified = set(LAYOUT_ARGUMENTS) | set(OTHER_ARGUMENTS) | set(NOT_VARIED)
    assert parameters == classified, (
        f"new env arguments {sorted(parameters - classified)}: add each to LAYOUT_ARGUMENTS "
        "(palgym/envs/layouts.py) if it changes the layout, else to OTHER_ARGUMENTS here")


@pytest.mark.parametrize("name", sorted(OTHER_ARGUMENTS))
def test_other_arguments_leave_the_layout_unchanged(name: str) -> None:
    kwargs = {name: OTHER_ARGUMENTS[name]}
    if name == "sticky":
        kwargs["preset"] = "pal-artifact"  # sticky envs need packed_sticky_strict_total=False
    env = gym.make(PLACEMENT, **kwargs)
    assert layout_hash(env) == ENV_LAYOUTS[PLACEMENT]["default"]


def test_the_hash_is_the_same_in_other_processes() -> None:
    code = ("import palgym\nfrom palgym.envs.layouts import env_layout\n"
            f"print(env_layout({PLACEMENT!r}, {{'observed_rates': True}}))\n")
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=REPO, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == ENV_LAYOUTS[PLACEMENT]["observed_rates"]


@pytest.mark.parametrize("config_file", sorted(PRETRAINED.glob("*_ppo.yml")), ids=lambda p: p.stem)
def test_committed_models_record_their_layout(config_file: Path) -> None:
    config = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    assert config["env_layout"] == training_layout(config["env_id"], config["env_kwargs"])
    layout_kwargs = {k: v for k, v in config["env_kwargs"].items() if k in LAYOUT_ARGUMENTS}
    if not layout_kwargs:  # trained with the defaults: the committed default layout
        assert config["env_layout"] == ENV_LAYOUTS[config["env_id"]]["default"]


OTHER_LAYOUT = "0123456789abcdef"


def test_a_model_of_another_layout_is_refused() -> None:
    config = {"algo": "maskable_ppo", "env_id": PLACEMENT, "env_layout": OTHER_LAYOUT,
              "env_kwargs": {"trace": "bundled:train", "window": 60, "max_tiers": 6}}
    current = env_layout(PLACEMENT, {"max_tiers": 6})
    with pytest.raises(ConfigError) as caught:
        check_layout("runs/x/model.zip", config, PLACEMENT, {"max_tiers": 6})
    message = str(caught.value)
    assert "\n" not in message
    assert OTHER_LAYOUT in message and current in message
    assert ("python train.py --env palgym/PALPlacement-v0 --algo maskable_ppo "
            "--env-kwargs max_tiers:6") in message
    assert "agents/pretrained/README.md" in message
    with pytest.raises(ConfigError, match=OTHER_LAYOUT):
        check_env_layout("runs/x/model.zip", config, gym.make(PLACEMENT, max_tiers=6))
    # The recorded layout passes; a config that records none is not checked.
    check_layout("m.zip", {**config, "env_layout": current}, PLACEMENT, {"max_tiers": 6})
    check_env_layout("m.zip", {}, gym.make(PLACEMENT))


def test_a_learned_contender_of_another_layout_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from agents.evaluation.contenders import learned_contender

    (tmp_path / "model.zip").write_bytes(b"not read: the layout is checked first")
    (tmp_path / "config.yml").write_text(yaml.safe_dump(
        {"algo": "maskable_ppo", "env_id": PLACEMENT, "env_layout": OTHER_LAYOUT,
         "env_kwargs": {"window": 60}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(ENV_LAYOUTS[PLACEMENT]["default"])):
        learned_contender(str(tmp_path), PLACEMENT, {})


def test_training_records_the_layout() -> None:
    pytest.importorskip("sb3_contrib")
    from agents.sb3.training import TrainSettings, resolve_config

    config = resolve_config(TrainSettings(env_id=PLACEMENT, n_timesteps=10,
                                          env_kwargs={"num_slots": 3}))
    assert config["env_layout"] == ENV_LAYOUTS[PLACEMENT]["num_slots=3"]
