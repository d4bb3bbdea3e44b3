"""Trace sets (palgym.tracesets): disjoint splits, the folder rule, manifests and their hashes,
the env's ``"<set>:<split>"`` trace syntax."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import gymnasium as gym
import pytest

import palgym  # noqa: F401  (registers the ids)
from palgym.bundled import bundled_trace_paths
from palgym.errors import ConfigError
from palgym.tracesets import (
    SPLITS,
    TraceSetError,
    load_trace_set,
    make_trace_set,
    parse_split_spec,
    read_manifest,
    split_specs,
    write_manifest,
)
from palgym.tracesets.__main__ import main as tracesets_main


def write_traces(folder: Path, names: list[str], num_jobs: int) -> list[Path]:
    """Write traces of ``num_jobs`` 1-GPU vgg19 jobs (ids 100.., arrivals 10 s apart)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, name in enumerate(names):
        rows = [f"{100 + j},1,{10 * j + index},{50 + j},vgg19" for j in range(num_jobs)]
        path = folder / f"{name}.csv"
        path.write_text("job_id,num_gpus,submit_time,duration,model\n" + "\n".join(rows) + "\n",
                        encoding="utf-8")
        paths.append(path)
    return paths


def split_jobs(trace_set, split: str) -> set[tuple[str, int]]:
    """(member trace id, job id) of every job in ``split``."""
    return {(trace.name.split("[")[0], int(job)) for trace in trace_set.traces(split)
            for job in trace.job_id}


def test_bundled_set_is_split_by_trace_with_file_hashes() -> None:
    trace_set = load_trace_set("bundled")
    assert trace_set.labels("train") == ["sia-philly-gen-0", "sia-philly-gen-1",
                                         "sia-philly-gen-2"]
    assert trace_set.labels("validation") == ["sia-philly-gen-3"]
    assert trace_set.labels("test") == ["sia-philly-gen-4"]
    for name, path in bundled_trace_paths().items():
        assert trace_set.member(name).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    jobs = {split: split_jobs(trace_set, split) for split in SPLITS}
    assert len(jobs["train"]) == 3 * 160 and len(jobs["test"]) == 160
    assert not (jobs["train"] & jobs["validation"] or jobs["train"] & jobs["test"]
                or jobs["validation"] & jobs["test"])


def test_folder_rule_five_files(tmp_path: Path) -> None:
    """5 files of 10 jobs: the last ceil(0.4 * 5) = 2 files are test; files 1-3 give their
    last ceil(0.2 * 10) = 2 jobs to validation and jobs 0-7 to train."""
    write_traces(tmp_path, [f"workload-{i}" for i in (1, 2, 3, 4, 5)], 10)
    trace_set = load_trace_set(tmp_path)
    assert trace_set.labels("train") == ["workload-1[0:8]", "workload-2[0:8]", "workload-3[0:8]"]
    assert trace_set.labels("validation") == ["workload-1[8:10]", "workload-2[8:10]",
                                              "workload-3[8:10]"]
    assert trace_set.labels("test") == ["workload-4", "workload-5"]
    jobs = {split: split_jobs(trace_set, split) for split in SPLITS}
    assert jobs["validation"] == {(f"workload-{i}", j) for i in (1, 2, 3) for j in (108, 109)}
    everything = jobs["train"] | jobs["validation"] | jobs["test"]
    assert len(everything) == sum(len(v) for v in jobs.values()) == 50  # disjoint, complete
    first_validation = trace_set.traces("validation")[0]
    assert first_validation.submit_time_s.tolist() == [0.0, 10.0]  # rebased window


def test_folder_rule_one_and_two_files_and_natural_order(tmp_path: Path) -> None:
    write_traces(tmp_path / "one", ["only"], 10)
    one = load_trace_set(tmp_path / "one")
    assert (one.labels("train"), one.labels("validation"), one.labels("test")) == (
        ["only[0:6]"], ["only[6:8]"], ["only[8:10]"])
    write_traces(tmp_path / "two", ["gen-10", "gen-2"], 5)  # natural order: gen-2 first
    two = load_trace_set(tmp_path / "two")
    assert two.labels("train") == ["gen-2[0:4]"] and two.labels("validation") == ["gen-2[4:5]"]
    assert two.labels("test") == ["gen-10"]


def test_folder_rule_is_deterministic(tmp_path: Path) -> None:
    write_traces(tmp_path, ["a", "b", "c"], 7)
    first, second = load_trace_set(tmp_path), load_trace_set(tmp_path)
    assert first.to_manifest() == second.to_manifest()
    assert first.labels("test") == ["b", "c"]  # ceil(0.4 * 3) = 2 files


def test_manifest_round_trip_and_changed_member(tmp_path: Path) -> None:
    paths = write_traces(tmp_path / "data", ["w1", "w2", "w3"], 6)
    made = make_trace_set("mine", paths, {"train": ["w1", ("w2", 0, 4)],
                                          "validation": [("w2", 4, 6)], "test": ["w3"]}, "hand")
    manifest = write_manifest(made, tmp_path / "sets" / "mine.json")
    content = json.loads(manifest.read_text(encoding="utf-8"))
    assert content["members"][0]["path"] == "../data/w1.csv"
    assert content["splits"]["train"] == [{"trace": "w1"}, {"trace": "w2", "jobs": [0, 4]}]
    loaded = read_manifest(manifest)
    assert loaded.labels("train") == ["w1", "w2[0:4]"] and loaded.rule == "hand"
    assert parse_split_spec(f"{manifest}:validation") == (str(manifest), "validation")
    original = paths[1].read_text(encoding="utf-8")
    paths[1].write_text(original + "999,1,500,5,vgg19\n", encoding="utf-8")
    with pytest.raises(TraceSetError, match=r"w2\.csv: content changed.*member 'w2'"):
        read_manifest(manifest)
    paths[1].write_text(original, encoding="utf-8")
    assert read_manifest(manifest).labels("test") == ["w3"]
    paths[2].unlink()
    with pytest.raises(TraceSetError, match="is missing"):
        read_manifest(manifest, verify=True)


def test_overlapping_or_malformed_splits_are_rejected(tmp_path: Path) -> None:
    paths = write_traces(tmp_path, ["w1", "w2"], 6)
    with pytest.raises(TraceSetError, match="both the 'train' and the 'test' split"):
        make_trace_set("x", paths, {"train": [("w1", 0, 4)], "test": [("w1", 3, 6)]}, "bad")
    with pytest.raises(TraceSetError, match=r"jobs \[0, 7\) outside \[0, 6\)"):
        make_trace_set("x", paths, {"train": [("w1", 0, 7)]}, "bad")
    good = write_manifest(make_trace_set("x", paths, {"train": ["w1"], "test": ["w2"]}, "ok"),
                          tmp_path / "m.json")
    content = json.loads(good.read_text(encoding="utf-8"))
    content["splits"]["test"] = [{"trace": "w2", "jobs": [0, "6"]}]
    good.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(TraceSetError, match=r"m\.json, splits\.test\[0\]: field 'jobs'"):
        read_manifest(good)
    with pytest.raises(TraceSetError, match="split 'validation' is empty"):
        make_trace_set("x", paths, {"train": ["w1"]}, "ok").traces("validation")


def test_split_specs_union_skips_empty_splits(tmp_path: Path) -> None:
    paths = write_traces(tmp_path, ["w1", "w2"], 6)
    manifest = write_manifest(make_trace_set("x", paths, {"train": ["w1"], "test": ["w2"]}, "ok"),
                              tmp_path / "m.json")
    assert split_specs([str(manifest), "bundled"], "validation") == ["bundled:validation"]
    assert split_specs([str(manifest), "bundled"], "train") == [f"{manifest}:train",
                                                                "bundled:train"]
    with pytest.raises(TraceSetError, match="empty in every trace set"):
        split_specs([str(manifest)], "validation")


def test_env_accepts_set_and_split() -> None:
    env = gym.make("palgym/PALPlacement-v0", trace="bundled:validation")
    assert [t.name for t in env.unwrapped.traces] == ["sia-philly-gen-3"]
    env = gym.make("palgym/PALPlacement-v0", trace=[{"set": "bundled", "split": "test"},
                                                    "sia-philly-gen-0"])
    assert [t.name for t in env.unwrapped.traces] == ["sia-philly-gen-4", "sia-philly-gen-0"]
    with pytest.raises(TraceSetError, match="split must be one of"):
        gym.make("palgym/PALPlacement-v0", trace={"set": "bundled", "split": "dev"})
    with pytest.raises(TraceSetError, match="neither 'bundled'"):
        gym.make("palgym/PALPlacement-v0", trace="no-such-set:train")


def test_cli_writes_an_explicit_manifest(tmp_path: Path, capsys) -> None:
    write_traces(tmp_path / "data", ["workload-1", "workload-2", "workload-3"], 5)
    out = tmp_path / "m.json"
    assert tracesets_main(["write", str(tmp_path / "data"), "-o", str(out), "--train",
                           "workload-1", "workload-2[0:3]", "--test", "workload-2[3:5]"]) == 0
    loaded = read_manifest(out)
    assert [m.trace for m in loaded.members] == ["workload-1", "workload-2"]
    assert loaded.labels("test") == ["workload-2[3:5]"]
    assert "validation: (empty)" in capsys.readouterr().out
    assert tracesets_main(["write", str(tmp_path / "data"), "-o", str(out), "--train",
                           "workload-1[0:"]) == 2
    assert "expected TRACE or TRACE[start:stop]" in capsys.readouterr().err


def test_sia_philly_folder_rule_and_workloads_4_5_test(data_dir: Path, tmp_path: Path) -> None:
    folder = data_dir / "traces" / "sia_philly_pal"
    trace_set = load_trace_set(folder)
    assert trace_set.labels("train") == [f"workload-{i}[0:128]" for i in (1, 2, 3)]
    assert trace_set.labels("validation") == [f"workload-{i}[128:160]" for i in (1, 2, 3)]
    assert trace_set.labels("test") == ["workload-4", "workload-5"]
    out = tmp_path / "sia.json"
    assert tracesets_main(["write", str(folder), "-o", str(out), "--train", "workload-1",
                           "workload-2", "workload-3", "--test", "workload-4",
                           "workload-5"]) == 0
    assert split_specs([str(out), "bundled"], "train") == [f"{out}:train", "bundled:train"]
    assert read_manifest(out).labels("train") == ["workload-1", "workload-2", "workload-3"]


def test_tracesets_import_only_stdlib_numpy_and_lower_palgym_layers() -> None:
    import ast
    import sys

    allowed = ("numpy", "palgym.errors", "palgym.io", "palgym.sim", "palgym.bundled",
               "palgym.tracesets")
    folder = Path(__file__).resolve().parents[1] / "palgym" / "tracesets"
    found = []
    files = sorted(folder.glob("*.py"))
    assert {p.name for p in files} >= {"__init__.py", "sets.py", "manifest.py"}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__":
                    continue
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    found.append(f"{path.name}: {name}")
    assert not found, found


def test_unknown_split_of_a_known_set_names_the_split() -> None:
    from palgym.envs.episodes import load_traces

    with pytest.raises(ConfigError, match="unknown split 'tset'"):
        load_traces("bundled:tset")
