"""evaluate.py side by side: learned agents and heuristics on identical episodes.

Two identical tiny trainings (``train.py --trace-set bundled``, 64 steps, one env, CPU) run in
parallel subprocesses; each model is then evaluated by ``evaluate.py --agent`` from its own
folder with the same relative path, so equal CSV / JSON bytes show that the same seed trains
the same model and that the evaluation is deterministic. Skipped without the ``train`` extra.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")

from agents.evaluation.comparison import run_contenders  # noqa: E402
from agents.evaluation.contenders import heuristic_contender, learned_contender  # noqa: E402
from palgym.errors import ConfigError  # noqa: E402
from palgym.io import read_sia_trace  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
RUN = "palgym_PALPlacement-v0_maskable_ppo_0"
TRAIN = [
    "--trace-set", "bundled", "--split", "train", "--window", "20", "-n", "64", "--seed", "0",
    "--n-envs", "1", "--eval-freq", "64", "--eval-episodes", "1", "--num-threads", "1",
    "--verbose", "0", "--references", "pal",
    "--hyperparams", "n_steps:32", "batch_size:32", "n_epochs:1",
    "policy_kwargs:dict(net_arch=[16])",
]
SMALL_JOBS = 12


def small_trace(folder: Path) -> Path:
    """The first 12 jobs of the bundled test trace (sia-philly-gen-4) as a CSV file."""
    lines = (REPO_ROOT / "palgym/data/traces/sia-philly-gen-4.csv").read_text().splitlines()
    rows = [line for line in lines if not line.startswith("#")]
    path = folder / "small-4.csv"
    path.write_text("\n".join(rows[: 1 + SMALL_JOBS]) + "\n", encoding="utf-8")
    return path


def subprocesses(commands: list[tuple[list[str], Path]]) -> list[subprocess.CompletedProcess]:
    """Run commands (argv, cwd) in parallel; PYTHONPATH points at the repository."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for argv, cwd in commands]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two folders, each with a trained run and the outputs of evaluating it."""
    folders = [tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")]
    trained = subprocesses([([str(REPO_ROOT / "train.py"), *TRAIN, "-f", "."], f)
                            for f in folders])
    for proc in trained:
        assert proc.returncode == 0, proc.stderr
    for folder in folders:
        small_trace(folder)
    args = ["--agent", RUN, "--trace", "small-4.csv", "--seeds", "0", "1", "--policy", "pal",
            "--output", "episodes.csv", "--summary-output", "summary.csv", "--json",
            "results.json", "--bootstrap-resamples", "500", "--quiet"]
    runs = subprocesses([([str(REPO_ROOT / "evaluate.py"), *args], f) for f in folders])
    for proc, folder in zip(runs, folders, strict=True):
        assert proc.returncode == 0, proc.stderr
        (folder / "stdout.txt").write_text(proc.stdout, encoding="utf-8")
    return folders


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_same_seed_same_model_same_tables(evaluated: list[Path]) -> None:
    first, second = evaluated
    for name in ("episodes.csv", "summary.csv", "results.json", "stdout.txt"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_every_policy_runs_the_identical_episodes(evaluated: list[Path]) -> None:
    episodes = rows(evaluated[0] / "episodes.csv")
    policies = [RUN, "pal", "packed-sticky", "packed-non-sticky"]
    assert sorted({r["policy"] for r in episodes}) == sorted(policies)
    assert len(episodes) == len(policies) * 2  # one trace x two seeds
    for seed in ("0", "1"):
        same = [r for r in episodes if r["seed"] == seed]
        assert len({r["episode_hash"] for r in same}) == 1
        assert len({r["episode_seed"] for r in same}) == 1
        assert {r["num_jobs"] for r in same} == {str(SMALL_JOBS)}
    stdout = (evaluated[0] / "stdout.txt").read_text(encoding="utf-8")
    for row in episodes[:2]:
        assert row["episode_hash"] in stdout


def test_masked_agent_reports_zero_invalid_actions(evaluated: list[Path]) -> None:
    summary = {r["policy"]: r for r in rows(evaluated[0] / "summary.csv")}
    assert summary[RUN]["kind"] == "learned" and summary[RUN]["algo"] == "maskable_ppo"
    assert summary[RUN]["num_invalid_actions"] == "0"
    # a run folder evaluates its best evaluation checkpoint (agents/evaluation/checkpoints.py)
    assert (evaluated[0] / RUN / "best_model.zip").is_file()
    size = (evaluated[0] / RUN / "best_model.zip").stat().st_size
    assert summary[RUN]["model_size_bytes"] == str(size)
    learned = [r for r in rows(evaluated[0] / "episodes.csv") if r["policy"] == RUN]
    assert all(int(r["num_steps"]) > 0 for r in learned)  # it acted through the env


def test_summary_geomeans_recomputed_from_the_episode_rows(evaluated: list[Path]) -> None:
    episodes = rows(evaluated[0] / "episodes.csv")
    avg = {(r["policy"], r["seed"]): float(r["avg_jct_s"]) for r in episodes}
    summary = {r["policy"]: r for r in rows(evaluated[0] / "summary.csv")}
    for policy, row in summary.items():
        for reference, column in (("pal", "vs_reference"), ("packed-sticky", "vs_baseline")):
            ratios = [avg[(policy, s)] / avg[(reference, s)] for s in ("0", "1")]
            expected = math.sqrt(ratios[0] * ratios[1])
            got = float(row[f"geomean_ratio_{column}"])
            assert got == pytest.approx(expected, rel=1e-12)
            # Two resampling units: a resample's geomean is r1, r2 or sqrt(r1 r2), with
            # probabilities 1/4, 1/4, 1/2, so the 2.5th and 97.5th percentiles are the extremes.
            low, high = float(row[f"ci_low_{column}"]), float(row[f"ci_high_{column}"])
            assert low == pytest.approx(min(ratios), rel=1e-12)
            assert high == pytest.approx(max(ratios), rel=1e-12)
    assert float(summary["pal"]["geomean_ratio_vs_reference"]) == 1.0
    content = json.loads((evaluated[0] / "results.json").read_text(encoding="utf-8"))
    assert content["trace_source"] == "small-4.csv" and content["seeds"] == [0, 1]
    assert [p["label"] for p in content["policies"]][0] == RUN


def test_evaluating_on_training_traces_warns(evaluated: list[Path]) -> None:
    done = subprocesses([([str(REPO_ROOT / "evaluate.py"), "--agent", RUN, "--trace-set",
                           "bundled", "--split", "train", "--window", "8", "--policy", "pal",
                           "--quiet", "--bootstrap-resamples", "20"], evaluated[0])])[0]
    assert done.returncode == 0, done.stderr
    assert (f"{RUN} trained on ['sia-philly-gen-0', 'sia-philly-gen-1', 'sia-philly-gen-2']: "
            "these results are not a held-out evaluation") in done.stderr
    assert "held-out" not in (evaluated[0] / "stdout.txt").read_text(encoding="utf-8")


def test_env_kwargs_are_printed_and_command_line_overrides_warned(evaluated: list[Path],
                                                                  tmp_path: Path) -> None:
    """The run's config.yml says queue_order las, preset default and reward_scale 2000; the
    command line gives srtf, default and 1000. The command line's values are used (as
    before); the two that differ are each named in a warning, and the printed line lists the
    kwargs besides PALPlacement-v0's defaults (FIFO, 360000 s): queue_order and reward_scale."""
    import shutil

    import yaml

    run = tmp_path / RUN
    shutil.copytree(evaluated[0] / RUN, run)
    config = yaml.safe_load((run / "config.yml").read_text(encoding="utf-8"))
    config["env_kwargs"].update(queue_order="las", preset="default", reward_scale=2000.0)
    (run / "config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    small_trace(tmp_path)
    args = ["--agent", RUN, "--trace", "small-4.csv", "--seeds", "0", "--policy", "pal",
            "--queue-order", "srtf", "--preset", "default", "--env-kwargs", "reward_scale:1000",
            "--bootstrap-resamples", "20", "--json", "results.json", "--quiet"]
    done = subprocesses([([str(REPO_ROOT / "evaluate.py"), *args], tmp_path)])[0]
    assert done.returncode == 0, done.stderr
    line = (f"{RUN} env kwargs (besides palgym/PALPlacement-v0's defaults): queue_order:srtf "
            "reward_scale:1000")
    assert done.stdout.splitlines()[1] == line
    warned = [w for w in done.stderr.splitlines() if "the command line gives" in w]
    assert warned == [
        f"WARNING: {RUN}: env kwarg queue_order: the command line gives srtf, the model's run "
        "config las; using the command line's srtf",
        f"WARNING: {RUN}: env kwarg reward_scale: the command line gives 1000, the model's run "
        "config 2000.0; using the command line's 1000"]
    content = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    used = content["policies"][0]["env_kwargs"]
    assert (used["queue_order"], used["preset"], used["reward_scale"]) == ("srtf", "default", 1000)


def test_learning_curve_and_plots(evaluated: list[Path]) -> None:
    pytest.importorskip("matplotlib")
    folder = evaluated[0]
    done = subprocesses([([str(REPO_ROOT / "evaluate.py"), "--agent", RUN, "--trace",
                           "small-4.csv", "--policy", "pal", "--plot", "plots", "--quiet",
                           "--bootstrap-resamples", "50"], folder)])[0]
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (folder / "plots").iterdir())
    assert names == ["jct-cdf_small-4.png", f"learning-curve_{RUN}.png", "normalised-jct.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in (folder / "plots").iterdir())


# ------------------------------------------------------------------ in process
@pytest.mark.parametrize("kwargs", [{}, {"window": 7}])
def test_heuristics_via_env_equal_the_direct_simulation(kwargs: dict, tmp_path: Path) -> None:
    trace = read_sia_trace(small_trace(tmp_path))
    contenders = [heuristic_contender(name, kwargs) for name in ("pal", "random-non-sticky",
                                                                 "packed-sticky")]
    via_env = run_contenders("palgym/PALPlacement-v0", contenders, [trace], [0, 3],
                             heuristics_via="env")
    direct = run_contenders("palgym/PALPlacement-v0", contenders, [trace], [0, 3])
    labels = {contender.label for contender in contenders}
    assert set(via_env) == set(direct) == labels and len(labels) == 3
    assert all(len(via_env[name]) == 2 for name in labels)  # one trace x two seeds
    for name in via_env:
        for a, b in zip(via_env[name], direct[name], strict=True):
            assert a.episode_hash == b.episode_hash and a.metrics == b.metrics
            assert a.jct_s == b.jct_s
            assert b.episode_return == pytest.approx(a.episode_return, rel=1e-9)
            assert b.num_steps == 0 and a.num_steps > 0
            assert a.window_start == b.window_start
            assert b.metrics["num_jobs"] == kwargs.get("window", SMALL_JOBS)


def test_unmasked_agent_invalid_actions_are_counted(tmp_path: Path) -> None:
    """An untrained PPO sees no masks: its invalid actions are the env's fallback count."""
    import gymnasium as gym

    from agents.rollout import rollout
    from agents.sb3.envs import make_vec_env
    from agents.sb3.factory import make_model
    from agents.sb3.learned import load_agent

    venv = make_vec_env("palgym/PALPlacement-v0", 1, 0, {"trace": "sia-philly-gen-4",
                                                          "window": SMALL_JOBS})
    make_model("ppo", venv, {"n_steps": 32, "batch_size": 32,
                             "policy_kwargs": "dict(net_arch=[8])"}, seed=0).save(
        tmp_path / "model.zip")
    venv.close()
    trace = read_sia_trace(small_trace(tmp_path))
    agent = learned_contender(str(tmp_path / "model.zip"), "palgym/PALPlacement-v0", {})
    results = run_contenders("palgym/PALPlacement-v0", [agent, heuristic_contender("pal", {})],
                             [trace], [0])
    counted = results[agent.label][0].metrics["num_invalid_actions"]
    env = gym.make("palgym/PALPlacement-v0", trace=[trace])
    flags = []
    model = load_agent(tmp_path / "model.zip")
    observation, _ = env.reset(seed=0, options={"trace": 0})
    while True:
        action, _ = model.predict(observation, deterministic=True)
        observation, _, terminated, truncated, info = env.step(int(action))
        flags.append(info["invalid_action"])
        if terminated or truncated:
            break
    assert counted == sum(flags) > 0
    assert rollout(model, env, seed=0, options={"trace": 0}).metrics[
        "num_invalid_actions"] == counted


def test_different_episodes_are_refused(tmp_path: Path) -> None:
    trace = read_sia_trace(small_trace(tmp_path))
    contenders = [heuristic_contender("pal", {}),
                  heuristic_contender("pm-first", {"locality_penalty": 1.2})]
    with pytest.raises(ConfigError, match="'pm-first' ran a different episode"):
        run_contenders("palgym/PALPlacement-v0", contenders, [trace], [0])
    with pytest.raises(ConfigError, match="given twice"):
        run_contenders("palgym/PALPlacement-v0", contenders[:1] * 2, [trace], [0])


def test_pretrained_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.sb3.learned as learned

    monkeypatch.setattr(learned, "PRETRAINED_DIR", tmp_path)
    with pytest.raises(ConfigError, match=r"no pretrained model .*PALPlacement-v0_maskable_ppo"
                                          r"\.zip .*README\.md"):
        learned.resolve_model_path("pretrained", "palgym/PALPlacement-v0")
    (tmp_path / "PALScheduling-v0_maskable_ppo.zip").write_bytes(b"placeholder")
    (tmp_path / "PALScheduling-v0_maskable_ppo.yml").write_text("algo: ppo\n", encoding="utf-8")
    path = learned.resolve_model_path("pretrained", "palgym:palgym/PALScheduling-v0")
    assert path == tmp_path / "PALScheduling-v0_maskable_ppo.zip"
    assert learned.resolve_model_path("pretrained:PALScheduling-v0_maskable_ppo", "x") == path
    assert learned.detect_algo(path) == "ppo"  # <stem>.yml beside the zip
    assert learned.resolve_model_path(str(path), "x") == path


def test_learning_curve_files_of_run_folders_and_pretrained(tmp_path: Path) -> None:
    from agents.base import HeuristicAgent
    from agents.evaluation.contenders import Contender, learning_curve_files

    def contender(path: Path) -> Contender:
        return Contender("x", "learned", HeuristicAgent("pal"), model_path=str(path))

    (tmp_path / "model.zip").write_bytes(b"")
    assert learning_curve_files(contender(tmp_path / "model.zip")) is None
    (tmp_path / "evaluations.npz").write_bytes(b"")
    assert learning_curve_files(contender(tmp_path / "best_model.zip")) == (
        tmp_path / "evaluations.npz", tmp_path / "references.yml")
    assert learning_curve_files(contender(tmp_path / "P_maskable_ppo.zip")) is None
    (tmp_path / "P_maskable_ppo-evaluations.npz").write_bytes(b"")
    assert learning_curve_files(contender(tmp_path / "P_maskable_ppo.zip")) == (
        tmp_path / "P_maskable_ppo-evaluations.npz", tmp_path / "P_maskable_ppo-references.yml")


def test_heuristic_side_by_side_needs_no_torch(tmp_path: Path) -> None:
    """The train extra's packages are made unimportable (an import of them raises
    ImportError); heuristic side-by-side evaluation still runs."""
    small_trace(tmp_path)
    code = (
        "import sys, runpy\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'stable_baselines3', 'sb3_contrib', 'yaml'):\n"
        "            raise ImportError(f'{name} is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "sys.argv = ['evaluate.py', '--trace', 'small-4.csv', '--seeds', '0', '--policy', 'pal',"
        " '--bootstrap-resamples', '20', '--quiet']\n"
        "try:\n"
        f"    runpy.run_path({str(REPO_ROOT / 'evaluate.py')!r}, run_name='__main__')\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0, stop.code\n"
        "print('RAN')\n"
    )
    done = subprocesses([(["-c", code], tmp_path)])[0]
    assert done.returncode == 0, done.stderr
    assert "RAN" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--agent", "no/such/model.zip", "--trace-set", "bundled"), "no saved model"),
        (("--trace", "small-4.csv", "--trace-set", "bundled"), "not both"),
        (("--seeds", "0", "--queue-order", "fifo", "las", "--trace", "small-4.csv"),
         "one queue order"),
        (("--trace-set", "bundled", "--split", "dev"), "invalid choice"),
        (("--agent", "pretrained:none-such", "--trace", "small-4.csv"), "no pretrained model"),
    ],
)
def test_bad_side_by_side_arguments_exit_2(args: tuple[str, ...], message: str,
                                           tmp_path: Path) -> None:
    small_trace(tmp_path)
    done = subprocesses([([str(REPO_ROOT / "evaluate.py"), *args, "--quiet"], tmp_path)])[0]
    assert done.returncode == 2, done.stdout
    assert message in done.stderr and "Traceback" not in done.stderr


def test_bare_model_zips_of_the_project_policy_are_evaluated(evaluated: list[Path],
                                                             tmp_path: Path) -> None:
    """A copy of a committed model and a run's model.zip taken out of its folder (no
    configuration beside them; the policy class is agents.sb3.policies'): the zip alone is
    enough."""
    from agents.sb3.learned import detect_algo

    pretrained = tmp_path / "copy.zip"
    pretrained.write_bytes((REPO_ROOT / "agents/pretrained/PALPlacement-v0_maskable_ppo.zip")
                           .read_bytes())
    loose = tmp_path / "loose.zip"
    loose.write_bytes((evaluated[0] / RUN / "model.zip").read_bytes())
    assert detect_algo(pretrained) == detect_algo(loose) == "maskable_ppo"
    small_trace(tmp_path)
    for model in ("copy.zip", "loose.zip"):
        args = ["--agent", model, "--trace", "small-4.csv", "--seeds", "0", "--policy", "pal",
                "--bootstrap-resamples", "20", "--output", f"{model}.csv", "--quiet"]
        done = subprocesses([([str(REPO_ROOT / "evaluate.py"), *args], tmp_path)])[0]
        assert done.returncode == 0, done.stderr
        agent_rows = [r for r in rows(tmp_path / f"{model}.csv") if r["policy"] == model]
        assert len(agent_rows) == 1 and agent_rows[0]["kind"] == "learned"
        assert (agent_rows[0]["num_completed"], agent_rows[0]["num_jobs"]) == ("12", "12")
        assert agent_rows[0]["num_invalid_actions"] == "0"
        assert "no run config" in done.stderr and "default env arguments" in done.stderr


def test_heuristics_run_on_profiles_with_more_tiers_than_the_env_default(
    data_dir: Path, tmp_path: Path
) -> None:
    """Longhorn's GPU-median profile has more than 4 (the env's default ``max_tiers``) slowdown
    tiers in some class; heuristic contenders still run on it, whatever a learned agent's
    ``max_tiers``."""
    from palgym.simulate import make_episode, slowdown_factors

    longhorn = str(data_dir / "variability" / "longhorn_pal")
    trace = read_sia_trace(small_trace(tmp_path))
    episode = make_episode(trace, variability_data=longhorn, seed=0)
    assert max(t.size for t in slowdown_factors(episode).tiers) > 4  # the case at hand
    kwargs = {"preset": "default", "variability_data": longhorn}
    contenders = [heuristic_contender(name, kwargs) for name in ("pal", "packed-sticky")]
    outcomes = run_contenders("palgym/PALPlacement-v0", contenders, [trace], [0])
    assert [len(outcomes[c.label]) for c in contenders] == [1, 1]
    assert outcomes["pal"][0].episode_hash == outcomes["packed-sticky"][0].episode_hash
    assert all(outcomes[c.label][0].metrics["num_completed"] == SMALL_JOBS for c in contenders)
