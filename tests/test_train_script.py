"""train.py end to end: run folder, determinism (same seed -> same model), resume, run ids,
the evaluation set a resume must keep, TensorBoard logs, errors.

Two identical 128-step runs go in parallel subprocesses (one env, CPU, one torch thread); the
resume and error tests call ``train.main`` in-process on a copy of a finished run. Skipped
without the ``train`` extra.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")
torch = pytest.importorskip("torch")

REPO_ROOT = Path(__file__).resolve().parents[1]
RUN = "palgym_PALPlacement-v0_maskable_ppo_0"
ARGS = [
    "--env", "palgym/PALPlacement-v0", "--algo", "maskable_ppo", "-n", "128", "--seed", "0",
    "--trace", "sia-philly-gen-0", "--window", "20", "--n-envs", "1", "--eval-freq", "64",
    "--eval-episodes", "1", "--num-threads", "1", "--verbose", "0",
    "--hyperparams", "n_steps:32", "batch_size:32", "n_epochs:2",
    "policy_kwargs:dict(net_arch=[32])",
]


def train_cli() -> ModuleType:
    """train.py imported as a module (for in-process calls of ``main``)."""
    spec = importlib.util.spec_from_file_location("train_cli", REPO_ROOT / "train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs with identical arguments (the first also computes a PAL reference)."""
    folders = [tmp_path_factory.mktemp("runs_a"), tmp_path_factory.mktemp("runs_b")]
    procs = [
        subprocess.Popen(
            [sys.executable, "train.py", *ARGS, "-f", str(folder),
             "--references", *(["pal"] if i == 0 else [])],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i, folder in enumerate(folders)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"train.py failed:\n{out}\n{err}"
        assert "run folder:" in out and "timesteps: 128" in out and "env steps/s" in out
    return folders[0] / RUN, folders[1] / RUN


def test_run_folder_has_every_file(runs: tuple[Path, Path]) -> None:
    import yaml

    run = runs[0]
    for name in ("model.zip", "best_model.zip", "config.yml", "args.yml", "evaluations.npz",
                 "progress.csv", "references.yml"):
        assert (run / name).is_file(), name
    config = yaml.safe_load((run / "config.yml").read_text())
    assert config["algo"] == "maskable_ppo" and config["n_timesteps"] == 128
    assert config["hyperparams"]["n_steps"] == 32 and config["hyperparams"]["gamma"] == 0.999
    assert config["env_kwargs"] == {"trace": "sia-philly-gen-0", "window": 20}
    args = yaml.safe_load((run / "args.yml").read_text())
    assert args["seed"] == 0 and args["n_envs"] == 1
    assert args["seeds"] == {"model": 0, "train_envs": [0], "eval": 10000}
    with np.load(run / "evaluations.npz") as data:
        assert data["timesteps"].tolist() == [64, 128]
        assert data["results"].shape == (2, 1)
    references = yaml.safe_load((run / "references.yml").read_text())
    assert set(references["policies"]) == {"pal"}
    assert (run / "tensorboard").is_dir() == (importlib.util.find_spec("tensorboard") is not None)


def test_throughput_is_recorded(runs: tuple[Path, Path]) -> None:
    """throughput.yml: 128 steps, rates consistent with its own wall and CPU time, and the
    per-rollout rate in progress.csv (4 rollouts of 32 steps)."""
    import csv

    import yaml

    rate = yaml.safe_load((runs[0] / "throughput.yml").read_text())
    assert rate["timesteps"] == 128 and rate["n_envs"] == 1 and rate["cpu_scope"] == "process"
    assert rate["wall_s"] > 0 and rate["cpu_s"] > 0
    assert rate["steps_per_s"] == pytest.approx(128 / rate["wall_s"])
    assert rate["cpu_s_per_1k_steps"] == pytest.approx(1000 * rate["cpu_s"] / 128)
    assert rate["steps_in_2h"] == pytest.approx(7200 * 128 / rate["wall_s"])
    with (runs[0] / "progress.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("time/steps_per_s")]
    assert len(rows) == 4 and all(float(row["time/steps_per_s"]) > 0 for row in rows)


def test_tensorboard_logs_hold_the_learning_curve(runs: tuple[Path, Path]) -> None:
    """``tensorboard --logdir`` reads the run's events: the eval curve equals evaluations.npz."""
    pytest.importorskip("tensorboard", reason="tensorboard (train extra) is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(runs[0] / "tensorboard"))
    events.Reload()
    scalars = events.Scalars("eval/mean_reward")
    with np.load(runs[0] / "evaluations.npz") as data:
        assert [s.step for s in scalars] == data["timesteps"].tolist()
        assert np.allclose([s.value for s in scalars], data["results"].mean(axis=1), rtol=1e-6)


def test_same_seed_trains_the_same_model(runs: tuple[Path, Path]) -> None:
    from sb3_contrib import MaskablePPO

    first, second = (MaskablePPO.load(run / "model.zip", device="cpu") for run in runs)
    a, b = first.policy.state_dict(), second.policy.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[key], b[key]) for key in a)
    with np.load(runs[0] / "evaluations.npz") as x, np.load(runs[1] / "evaluations.npz") as y:
        assert np.array_equal(x["results"], y["results"])


def test_resume_continues_the_saved_model(runs: tuple[Path, Path], tmp_path: Path) -> None:
    import yaml
    from sb3_contrib import MaskablePPO

    shutil.copytree(runs[0], tmp_path / RUN)
    argv = [*ARGS, "-f", str(tmp_path), "--references"]
    argv[argv.index("-n") + 1] = "64"
    hyper = argv.index("--hyperparams")
    argv = argv[:hyper] + argv[hyper + 5:]  # a resume keeps the saved hyperparameters
    envs = argv.index("--n-envs")
    argv = argv[:envs] + argv[envs + 2:]  # and the recorded number of envs (1, not the YAML's)
    assert train_cli().main([*argv, "--resume"]) == 0
    run = tmp_path / RUN
    model = MaskablePPO.load(run / "model.zip", device="cpu")
    assert model.num_timesteps == 192
    before = MaskablePPO.load(runs[0] / "model.zip", device="cpu").policy.state_dict()
    assert any(not torch.equal(before[k], v) for k, v in model.policy.state_dict().items())
    with np.load(run / "evaluations.npz") as data:
        assert data["timesteps"].tolist() == [64, 128, 192]
    args = yaml.safe_load((run / "args.yml").read_text())
    assert args["resume"] is False and len(args["resumes"]) == 1
    assert args["resumes"][0]["start_timestep"] == 128
    assert args["resumes"][0]["seeds"]["model"] == 128
    assert args["resumes"][0]["seeds"]["train_envs"] == [128]
    assert yaml.safe_load((run / "throughput.yml").read_text())["n_envs"] == 1
    assert (run / "progress-resume-128.csv").is_file()


class _WriteMarker:
    """Unpickling this writes ``path`` (the pickle calls ``Path.write_text``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Path.write_text, (self.path, "unpickled"))


def test_resume_unpickles_nothing_without_trust_model(runs: tuple[Path, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """A run's model.zip with a pickled entry palgym cannot supply: --resume exits 2 naming it
    and --trust-model, the pickle never runs and the run folder is left as it was."""
    import base64
    import json
    import zipfile

    import cloudpickle

    shutil.copytree(runs[0], tmp_path / RUN)
    model_zip, marker = tmp_path / RUN / "model.zip", tmp_path / "marker"
    with zipfile.ZipFile(model_zip) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data["hook"] = {":type:": "<class 'object'>", ":serialized:": base64.b64encode(
        cloudpickle.dumps(_WriteMarker(marker))).decode()}
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(model_zip, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    before = {p.name: p.read_bytes() for p in (tmp_path / RUN).iterdir() if p.is_file()}
    hyper = ARGS.index("--hyperparams")
    assert train_cli().main([*ARGS[:hyper], "-f", str(tmp_path), "--references",
                             "--resume"]) == 2
    err = capsys.readouterr().err
    assert "hook (palgym does not know this entry)" in err and "--trust-model" in err, err
    assert not marker.exists()
    assert {p.name: p.read_bytes() for p in (tmp_path / RUN).iterdir() if p.is_file()} == before


def test_a_second_run_takes_the_next_run_id(runs: tuple[Path, Path], tmp_path: Path) -> None:
    """A fresh run in a folder that holds run 0 goes to run 1 and leaves run 0 alone."""
    import yaml

    shutil.copytree(runs[0], tmp_path / RUN)
    before = (tmp_path / RUN / "model.zip").read_bytes()
    argv = [*ARGS, "-f", str(tmp_path), "--seed", "3", "--references"]
    argv[argv.index("-n") + 1] = "32"
    assert train_cli().main(argv) == 0
    second = tmp_path / RUN.replace("_0", "_1")
    assert (second / "model.zip").is_file()
    assert yaml.safe_load((second / "args.yml").read_text())["seed"] == 3
    assert (tmp_path / RUN / "model.zip").read_bytes() == before


@pytest.mark.parametrize(("flags", "named", "old", "new"), [
    (["--eval-episodes", "2"], "--eval-episodes", "1", "2"),
    (["--eval-seed", "5"], "--eval-seed", "10000", "5"),
    (["--seed", "4"], "--eval-seed", "10000", "10004"),  # the default eval seed follows --seed
    (["--window", "30"], "'window'", "20", "30"),
    (["--eval-trace", "sia-philly-gen-1"], "'trace'", "'sia-philly-gen-0'",
     "'sia-philly-gen-1'"),
])
def test_resume_refuses_another_evaluation_set(runs: tuple[Path, Path], tmp_path: Path, capsys,
                                               flags: list[str], named: str, old: str,
                                               new: str) -> None:
    """The learning curve and references.yml stay on one evaluation set: a resume that would
    evaluate elsewhere exits 2 naming the setting, the recorded and the new value, and leaves
    the run folder as it was."""
    shutil.copytree(runs[0], tmp_path / RUN)
    before = (tmp_path / RUN / "evaluations.npz").read_bytes()
    hyper = ARGS.index("--hyperparams")
    argv = [*ARGS[:hyper], "-f", str(tmp_path), "--references", "--resume"]
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    assert train_cli().main(argv) == 2
    err = capsys.readouterr().err
    assert f"{named}" in err and f"was {old} when the run started, now {new}" in err, err
    assert (tmp_path / RUN / "evaluations.npz").read_bytes() == before
    assert not (tmp_path / RUN / "progress-resume-128.csv").exists()


def test_clashes_and_bad_input_exit_2(runs: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    cli = train_cli()
    folder = str(runs[0].parent)
    assert cli.main([*ARGS, "-f", folder, "--run-id", "7", "--resume"]) == 2
    assert "no model.zip" in capsys.readouterr().err
    assert cli.main([*ARGS, "-f", str(tmp_path), "--resume"]) == 2
    assert "no palgym_PALPlacement-v0_maskable_ppo_<N> run" in capsys.readouterr().err
    assert cli.main([*ARGS, "-f", str(tmp_path), "--hyperparams", "n_step:3"]) == 2
    assert "does not accept hyperparameter(s) ['n_step']" in capsys.readouterr().err
    assert cli.main([*ARGS, "-f", str(tmp_path), "--trace", "no-such-trace"]) == 2
    assert "neither a file nor a bundled trace" in capsys.readouterr().err
    eight = [*ARGS, "-f", str(tmp_path), "--input-driven", "4"]
    eight[eight.index("--n-envs") + 1] = "8"
    assert cli.main(eight) == 2  # the K episodes step one env: 8 envs are refused, not dropped
    assert "--input-driven runs its K episodes on one env: use --n-envs 1, got 8" in (
        capsys.readouterr().err)
    assert not any(tmp_path.iterdir())  # bad input fails before the run folder is made


def test_fast_recipe_lays_its_settings_under_the_command_line(tmp_path: Path) -> None:
    """``--fast`` sets the batched-env recipe (agents.sb3.hyperparams.FAST_HYPERPARAMS) over the
    YAML; ``--n-envs`` and ``--hyperparams`` still win, and the run uses the native env."""
    import yaml

    args = ["--env", "palgym/PALPlacement-v0", "--algo", "maskable_ppo", "-n", "64", "--seed",
            "0", "--trace", "sia-philly-gen-0", "--window", "20", "--eval-freq", "0",
            "--verbose", "0", "--references", "--fast", "--n-envs", "2",
            "--hyperparams", "n_steps:16", "batch_size:32"]
    assert train_cli().main([*args, "-f", str(tmp_path)]) in (0, None)
    config = yaml.safe_load((tmp_path / RUN / "config.yml").read_text())
    hyper = config["hyperparams"]
    assert config["n_envs"] == 2 and hyper["n_steps"] == 16 and hyper["batch_size"] == 32
    assert hyper["n_epochs"] == 5 and "skip_infeasible=True" in hyper["policy_kwargs"]


def test_default_recipe_steps_the_yaml_envs_in_the_batched_env(tmp_path: Path) -> None:
    """Without --n-envs a run takes the YAML's envs, stepped by palgym's batched env
    (--vec-env auto: native), and one rollout is n_envs x n_steps env steps."""
    import yaml

    from agents.sb3.hyperparams import load_hyperparams

    default = load_hyperparams("maskable_ppo", "palgym/PALPlacement-v0")
    n_envs, rollout = default["n_envs"], default["n_envs"] * default["n_steps"]
    args = ["-n", "1", "--seed", "2", "--trace", "sia-philly-gen-0", "--window", "20",
            "--eval-freq", "0", "--verbose", "0", "--references", "-f", str(tmp_path)]
    assert train_cli().main(args) == 0
    run = tmp_path / RUN
    config = yaml.safe_load((run / "config.yml").read_text())
    assert (config["n_envs"], config["vec_env"]) == (n_envs, "native")
    assert config["hyperparams"]["n_steps"] == default["n_steps"]
    seeds = yaml.safe_load((run / "args.yml").read_text())["seeds"]
    assert seeds["train_envs"] == [2 + i for i in range(n_envs)]
    rate = yaml.safe_load((run / "throughput.yml").read_text())
    assert rate["timesteps"] == rollout and rate["n_envs"] == n_envs
    assert rate["cpu_scope"] == "process"  # the batched env runs in this process


def test_fast_recipe_is_maskable_ppo_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert train_cli().main(["--algo", "ppo", "--fast", "-n", "64", "--window", "20"]) == 2
    assert "--fast is a maskable_ppo recipe" in capsys.readouterr().err


def test_work_conserving_run_trains_in_the_batched_env_and_evaluates(tmp_path: Path) -> None:
    """A work-conserving scheduling env (``Discrete(K * M + 2)``, RESERVE last) trains with the
    project policy in the batched env, records its own layout, and its model is evaluated
    through the work-conserving env with no invalid action."""
    import csv

    import yaml
    from sb3_contrib import MaskablePPO

    from agents.evaluation.cli import main as evaluate
    from palgym.envs.layouts import ENV_LAYOUTS

    env_id = "palgym/PALScheduling-v1"
    args = ["--env", env_id, "--env-kwargs", "work_conserving:true", "--algo", "maskable_ppo",
            "-n", "64", "--seed", "0", "--trace", "sia-philly-gen-0", "--window", "20",
            "--n-envs", "2", "--vec-env", "native", "--eval-freq", "0", "--num-threads", "1",
            "--verbose", "0", "--references", "--hyperparams", "n_steps:32", "batch_size:32",
            "n_epochs:1", "policy_kwargs:dict(net_arch=[16],scorer_arch=[16])"]
    assert train_cli().main([*args, "-f", str(tmp_path)]) == 0
    run = tmp_path / "palgym_PALScheduling-v1_maskable_ppo_0"
    config = yaml.safe_load((run / "config.yml").read_text())
    assert config["vec_env"] == "native" and config["env_kwargs"]["work_conserving"] is True
    assert config["env_layout"] == ENV_LAYOUTS[env_id]["work_conserving"]
    model = MaskablePPO.load(run / "model.zip", device="cpu")
    # K = 16 slots, v1: T = 8 tiers, M = 2 * 8 + 2 = 18 candidates; RESERVE = K * M + 1
    assert model.action_space.n == 16 * 18 + 2
    assert model.policy.action_net.reserve is not None
    output = tmp_path / "episodes.csv"
    assert evaluate(["--agent", str(run), "--trace", "sia-philly-gen-0", "--window", "20",
                     "--seeds", "0", "--policy", "pal+easy", "--output", str(output),
                     "--quiet"]) in (0, None)
    with output.open(newline="", encoding="utf-8") as handle:
        learned = [row for row in csv.DictReader(handle) if row["kind"] == "learned"]
    assert len(learned) == 1
    row = learned[0]
    assert row["num_invalid_actions"] == "0" and int(row["num_steps"]) > 0
    assert row["num_completed"] == row["num_jobs"] == "20"
