"""``python -m agents.pretrained`` lists every committed model with its env id, world and its
committed leaderboard results (the ratio to PAL worked out here from the results files)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from agents.pretrained.__main__ import main, model_results
from palgym.bench.results import read_results

ROOT = Path(__file__).resolve().parents[1]
PRETRAINED = ROOT / "agents" / "pretrained"
LITE = ROOT / "benchmarks" / "leaderboard" / "palgym-bench-v1-lite"


def test_every_model_is_listed_with_its_env_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-results"]) == 0
    out = capsys.readouterr().out
    zips = sorted(PRETRAINED.glob("*.zip"))
    assert zips
    for path in zips:
        config = yaml.safe_load(path.with_suffix(".yml").read_text())
        assert (f"{path.stem}: {config['env_id']} (layout {config['env_layout']}), "
                f"{config['n_timesteps']} timesteps") in out
    assert f"{len(zips)} models in" in out
    assert "world: window=60, preset=dynamic, belief=online" in out  # the dynamic model


def test_the_results_are_the_committed_ratios_to_pal() -> None:
    name = "PALPlacement-v0_maskable_ppo"
    mine = {(r.task, r.trace, r.seed): r.avg_jct_s
            for _, r in read_results(LITE / f"{name}.jsonl").episodes}
    pal = {(r.task, r.trace, r.seed): r.avg_jct_s
           for _, r in read_results(LITE / "pal.jsonl").episodes}
    logs = [math.log(v / pal[k]) for k, v in mine.items()]  # type: ignore[operator]
    ratio = math.exp(sum(logs) / len(logs))
    [task] = {k[0] for k in mine}
    lines = model_results([name])[name]
    assert any(line.startswith(f"palgym-bench-v1-lite {task}: {ratio:.3f}x PAL (rank ")
               for line in lines), lines
