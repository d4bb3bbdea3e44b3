"""Loading a model zip runs none of its pickled code unless --trust-model is given.

A planted zip is a committed model whose pickled entry is replaced by a pickle that writes a
marker file when unpickled (as a hostile zip would run any code): without the flag the marker
is never written, with it it is (the flag's documented meaning: SB3's own unpickling). The
committed models load without the flag exactly as SB3's unpickling loads them. ``pretrained:``
takes plain model names only. Skipped without the ``train`` extra.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="the train extra (sb3-contrib) is not installed")
torch = pytest.importorskip("torch")

from agents.evaluation.cli import main as evaluate_main  # noqa: E402
from agents.sb3 import learned  # noqa: E402
from agents.sb3.model_entries import PICKLED, SUPPLIERS  # noqa: E402
from agents.sb3.model_zip import (  # noqa: E402
    ModelZip,
    UntrustedModelError,
    load_model,
    read_model_zip,
    safe_objects,
)
from palgym.errors import ConfigError  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
PRETRAINED = REPO_ROOT / "agents" / "pretrained"
SOURCE = PRETRAINED / "PALPlacement-v0_maskable_ppo.zip"


class WriteMarker:
    """Unpickling this writes ``path`` (the pickle calls ``Path.write_text``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Path.write_text, (self.path, "unpickled"))


def payload(marker: Path) -> str:
    """The base64 cloudpickle SB3 would store, of an object that writes ``marker``."""
    import cloudpickle

    return base64.b64encode(cloudpickle.dumps(WriteMarker(marker))).decode()


def plant(target: Path, marker: Path, entry: str, *, disguised: bool) -> Path:
    """A copy of SOURCE whose ``entry`` holds the marker pickle: ``disguised`` keeps the
    entry's readable attributes (the pickle alone is hostile), else the readable part is that
    of the pickled object (as SB3 would write it for such an object)."""
    with zipfile.ZipFile(SOURCE) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    readable = data.get(entry) if disguised else None
    fresh = {":type:": "<class 'tests.WriteMarker'>", "path": str(marker)}
    data[entry] = {**(readable if isinstance(readable, dict) else fresh),
                   PICKLED: payload(marker)}
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return target


def test_the_payload_runs_when_unpickled(tmp_path: Path) -> None:
    """The marker pickle does what the other tests rely on (so they can fail)."""
    import cloudpickle

    marker = tmp_path / "marker"
    cloudpickle.loads(base64.b64decode(payload(marker)))
    assert marker.read_text() == "unpickled"


@pytest.mark.parametrize("entry", ["policy_class", "observation_space", "lr_schedule",
                                   "_last_obs", "ep_info_buffer"])
def test_a_disguised_pickle_is_ignored(entry: str, tmp_path: Path) -> None:
    """Hostile pickle, readable attributes intact: palgym supplies the entry from them; the
    model loads, acts as the committed one and the marker is never written."""
    marker = tmp_path / "marker"
    zip_path = plant(tmp_path / "planted.zip", marker, entry, disguised=True)
    agent = learned.load_agent(zip_path)
    reference = learned.load_agent(SOURCE)
    assert not marker.exists()
    rng = np.random.default_rng(0)
    obs = {k: rng.random((8, *s.shape), dtype=np.float32)
           for k, s in reference.model.observation_space.spaces.items()}
    assert np.array_equal(agent.predict(obs, deterministic=True)[0],
                          reference.predict(obs, deterministic=True)[0])


@pytest.mark.parametrize(("entry", "reason"), [
    ("policy_class", "policy_class (its class cannot be told from its readable attributes)"),
    ("policy_kwargs", "policy_kwargs (a <class 'tests.WriteMarker'>, not a dict)"),
    ("action_space", "action_space (a <class 'tests.WriteMarker'>, not a Discrete space)"),
    ("hook", "hook (palgym does not know this entry)"),
])
def test_a_pickle_palgym_cannot_supply_is_refused(entry: str, reason: str,
                                                  tmp_path: Path) -> None:
    """Even with a run configuration naming the algorithm beside it, a pickled entry whose
    readable part does not tell palgym's value is refused, naming it; nothing is unpickled."""
    marker = tmp_path / "marker"
    zip_path = plant(tmp_path / "planted.zip", marker, entry, disguised=False)
    zip_path.with_suffix(".yml").write_text("algo: maskable_ppo\n", encoding="utf-8")
    with pytest.raises(UntrustedModelError) as error:
        learned.load_agent(zip_path)
    message = str(error.value)
    assert reason in message and "--trust-model" in message and "\n" not in message
    assert not marker.exists()


def test_trust_model_unpickles(tmp_path: Path) -> None:
    """With trust_model the zip's pickles run (SB3's load): the marker is written, and a
    policy_class that is not a class then fails to load with a one-line error."""
    marker = tmp_path / "marker"
    zip_path = plant(tmp_path / "planted.zip", marker, "policy_class", disguised=True)
    with pytest.raises(ConfigError, match="does not load as a maskable_ppo model") as error:
        learned.load_agent(zip_path, trust_model=True)
    assert "\n" not in str(error.value)
    assert marker.read_text() == "unpickled"


def test_algo_of_an_unknown_policy_module_needs_trust(tmp_path: Path) -> None:
    """The algorithm is told from the readable module; another module is refused, not
    unpickled (with trust_model the class is unpickled to classify it)."""
    marker = tmp_path / "marker"
    zip_path = plant(tmp_path / "planted.zip", marker, "policy_class", disguised=True)
    with zipfile.ZipFile(zip_path) as archive:
        data = json.loads(archive.read("data"))
    data["policy_class"]["__module__"] = "elsewhere"
    with zipfile.ZipFile(SOURCE) as src, zipfile.ZipFile(tmp_path / "other.zip", "w") as dst:
        for name in src.namelist():
            dst.writestr(name, json.dumps(data) if name == "data" else src.read(name))
    with pytest.raises(ConfigError, match=r"unsupported model \(policy module 'elsewhere'\).*"
                                          r"--trust-model"):
        learned.detect_algo(tmp_path / "other.zip")
    assert not marker.exists()
    with pytest.raises(ConfigError, match="unsupported model"):
        learned.detect_algo(tmp_path / "other.zip", trust_model=True)
    assert marker.exists()


@pytest.mark.parametrize("name", learned.pretrained_names())
def test_committed_models_load_as_sb3_loads_them(name: str) -> None:
    """Every pickled entry of a committed zip is supplied, and the model equals SB3's
    unpickled one: weights, spaces, policy class and kwargs, schedules and actions."""
    zip_path = PRETRAINED / f"{name}.zip"
    model = read_model_zip(zip_path)
    assert set(model.pickled) <= set(SUPPLIERS)
    assert set(safe_objects(model, "maskable_ppo")) == set(model.pickled)
    safe = load_model(zip_path, "maskable_ppo")
    trusted = load_model(zip_path, "maskable_ppo", trust_model=True)
    a, b = safe.policy.state_dict(), trusted.policy.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert type(safe.policy) is type(trusted.policy)
    assert safe.policy_kwargs == trusted.policy_kwargs
    assert safe.observation_space == trusted.observation_space
    assert safe.action_space == trusted.action_space
    assert safe.rollout_buffer_class is trusted.rollout_buffer_class
    for progress in (1.0, 0.5, 0.0):
        assert safe.lr_schedule(progress) == trusted.lr_schedule(progress)
        assert safe.clip_range(progress) == trusted.clip_range(progress)
    rng = np.random.default_rng(1)
    obs = {k: rng.random((16, *s.shape), dtype=np.float32)
           for k, s in trusted.observation_space.spaces.items()}
    assert np.array_equal(safe.predict(obs, deterministic=True)[0],
                          trusted.predict(obs, deterministic=True)[0])


def test_spaces_and_schedules_are_rebuilt_from_readable_text() -> None:
    """Readable forms rebuild the objects exactly; what palgym does not make is refused."""
    from gymnasium import spaces
    from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule

    obs = spaces.Dict({"b": spaces.Box(-np.inf, 2.5, (3, 2), np.float32),
                       "a": spaces.Box(1e-8, 1.0, (4,), np.float64)})
    data = {
        "policy_class": {":type:": "<class 'abc.ABCMeta'>", PICKLED: "",
                         "__module__": "stable_baselines3.common.policies",
                         "__init__": "<function MultiInputActorCriticPolicy.__init__ at 0x1f>"},
        "observation_space": {":type:": "<class 'gymnasium.spaces.dict.Dict'>", PICKLED: "",
                              "spaces": str(obs.spaces)},
        "action_space": {":type:": "<class 'gymnasium.spaces.discrete.Discrete'>",
                         PICKLED: "", "n": "7", "start": "2", "dtype": "int64"},
        "clip_range": {":type:": "<class 'stable_baselines3.common.utils.FloatSchedule'>",
                       PICKLED: "", "value_schedule": str(LinearSchedule(0.3, 0.1, 0.5))},
        "lr_schedule": {":type:": "<class 'stable_baselines3.common.utils.FloatSchedule'>",
                        PICKLED: "", "value_schedule": str(ConstantSchedule(0.25))},
        "learning_rate": 0.25,
    }
    objects = safe_objects(ModelZip(Path("m.zip"), b"", data), "ppo")
    assert objects["observation_space"] == obs and list(objects["observation_space"]) == ["a", "b"]
    assert objects["action_space"] == spaces.Discrete(7, start=2)
    assert [objects["clip_range"](p) for p in (1.0, 0.75, 0.5, 0.0)] == [0.3, 0.2, 0.1, 0.1]
    assert objects["lr_schedule"](0.3) == FloatSchedule(0.25)(0.3) == 0.25
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy
    assert objects["policy_class"] is MultiInputActorCriticPolicy
    data["observation_space"]["spaces"] = str({"a": spaces.Box(np.zeros(2), np.arange(2.0),
                                                                   dtype=np.float64)})
    data["policy_class"]["__module__"] = "sb3_contrib.common.maskable.policies"
    with pytest.raises(UntrustedModelError, match=(
            r"policy_class \(sb3_contrib.common.maskable.policies.MultiInputActorCriticPolicy "
            r"is not one of stable_baselines3.common.policies.MultiInputActorCriticPolicy\); "
            r"observation_space \(not a Dict of Boxes with scalar bounds in key order\)")):
        safe_objects(ModelZip(Path("m.zip"), b"", data), "ppo")


def test_policy_kwargs_classes_come_from_the_hyperparameter_allowlist() -> None:
    entry = {":type:": "<class 'dict'>", PICKLED: "", "net_arch": {"pi": [], "vf": [8]},
             "activation_fn": "<class 'torch.nn.modules.activation.ReLU'>",
             "optimizer_class": "<class 'torch.optim.adamw.AdamW'>"}
    objects = safe_objects(ModelZip(Path("m.zip"), b"", {"policy_kwargs": entry}), "ppo")
    assert objects["policy_kwargs"] == {"net_arch": {"pi": [], "vf": [8]},
                                        "activation_fn": torch.nn.ReLU,
                                        "optimizer_class": torch.optim.AdamW}
    entry["activation_fn"] = "<class 'os._wrap_close'>"
    with pytest.raises(UntrustedModelError, match="activation_fn=\"<class 'os._wrap_close'>\" "
                                                  "is not an activation or optimizer class"):
        safe_objects(ModelZip(Path("m.zip"), b"", {"policy_kwargs": entry}), "ppo")


def test_a_closure_schedule_comes_from_the_run_configuration() -> None:
    """A ``lin_`` schedule is a pickled closure: acting needs none (the algorithm's default
    stands in), training rebuilds it from the run's hyperparameters or refuses."""
    data = {"learning_rate": {":type:": "<class 'function'>", PICKLED: ""},
            "clip_range": {":type:": "<class 'stable_baselines3.common.utils.FloatSchedule'>",
                           PICKLED: "", "value_schedule": "<function f.<locals>.g at 0x1>"}}
    model = ModelZip(Path("m.zip"), b"", data)
    acting = safe_objects(model, "maskable_ppo")
    assert acting["learning_rate"] == 3e-4 and acting["clip_range"] == 0.2  # MaskablePPO's
    with pytest.raises(UntrustedModelError, match="learning_rate .*no run configuration"):
        safe_objects(model, "maskable_ppo", for_training=True)
    training = safe_objects(model, "maskable_ppo", for_training=True,
                            hyperparams={"learning_rate": "lin_0.001", "clip_range": 0.1})
    assert training["learning_rate"](0.5) == 0.0005 and training["clip_range"] == 0.1


@pytest.mark.parametrize("spec", ["pretrained:../x", "pretrained:/abs/x", "pretrained:a/b",
                                  "pretrained:..", "pretrained:a\\b",
                                  "pretrained:../pretrained/PALPlacement-v0_maskable_ppo"])
def test_pretrained_takes_plain_names_only(spec: str) -> None:
    with pytest.raises(ConfigError) as error:
        learned.resolve_model_path(spec, "palgym/PALPlacement-v0")
    message = str(error.value)
    assert "not a path" in message
    assert all(name in message for name in learned.pretrained_names())


def test_pretrained_names_must_be_committed_models(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no pretrained model .*none-such\.zip \(available: "
                                          r"PALPlacement-v0_maskable_ppo, "):
        learned.resolve_model_path("pretrained:none-such", "palgym/PALPlacement-v0")
    with pytest.raises(ConfigError, match="give a model name after 'pretrained:'"):
        learned.resolve_model_path("pretrained:", "palgym/PALPlacement-v0")
    assert learned.resolve_model_path("pretrained:PALPlacement-v0_maskable_ppo", "x") == SOURCE


def test_cli_refuses_a_planted_zip_and_an_escaping_name(tmp_path: Path) -> None:
    """``python evaluate.py``: exit 2, one ``error:`` line, no traceback, marker absent; the
    escaping name points at a planted zip that would otherwise load."""
    marker = tmp_path / "marker"
    plant(tmp_path / "planted.zip", marker, "hook", disguised=False)
    escape = os.path.relpath(tmp_path / "planted", PRETRAINED)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    commands = [["--agent", "planted.zip"], ["--agent", f"pretrained:{escape}"],
                ["--agent", f"pretrained:{tmp_path / 'planted'}"]]
    procs = [subprocess.Popen([sys.executable, str(REPO_ROOT / "evaluate.py"), *args,
                               "--trace", "sia-philly-gen-4", "--quiet"],
                              cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for args in commands]
    results = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 2, err
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, err
    assert "hook (palgym does not know this entry)" in results[0][1]
    assert "--trust-model" in results[0][1]
    assert all("not a path" in err for _, err in results[1:])
    assert not marker.exists()


def test_cli_trust_model_runs_the_zip(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    """``--trust-model`` hands the zip to SB3's unpickling: the planted code runs (here the
    pickled policy_class is no class, so the run then stops with exit 2)."""
    marker = tmp_path / "marker"
    refused = plant(tmp_path / "refused.zip", marker, "policy_class", disguised=False)
    argv = ["--trace", "sia-philly-gen-4", "--quiet"]
    assert evaluate_main(["--agent", str(refused), *argv]) == 2
    assert "--trust-model" in capsys.readouterr().err and not marker.exists()
    disguised = plant(tmp_path / "disguised.zip", marker, "policy_class", disguised=True)
    assert evaluate_main(["--agent", str(disguised), *argv, "--trust-model"]) == 2
    assert "does not load as a maskable_ppo model" in capsys.readouterr().err
    assert marker.read_text() == "unpickled"


@pytest.mark.parametrize("script", ["evaluate.py", "train.py"])
def test_help_says_a_model_zip_can_run_code(script: str) -> None:
    done = subprocess.run([sys.executable, str(REPO_ROOT / script), "--help"], cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "2000"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines()
                if line.strip().startswith("--trust-model"))
    assert "A model zip can run code: use this only for" in line and "trust" in line
