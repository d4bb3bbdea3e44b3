"""Measurement folders of any cluster: class files by workload name or an explicit mapping.

The other-cluster folders are generated here from synthetic values (file names in another
cluster's style); the expected profiles and JCTs are worked out by hand in the comments.
"""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from palgym.errors import ProfileError
from palgym.io import (
    LONGHORN_CLASS_FILES,
    MAPPING_FILE_NAME,
    read_measurements,
    read_profile,
    read_sia_trace,
    resolve_class_files,
)
from palgym.io.class_files import workload_matches
from palgym.sim.cluster import ClusterSpec
from palgym.sim.config import preset
from palgym.sim.workload import Trace
from palgym.simulate import make_episode, run_episode
from tests.conftest import WriteSiaCsv

REPO = Path(__file__).resolve().parents[1]

# ResNet runs (GPU, perf): median of (10, 10, 10, 30, 12, 8, 8) is 10, so the normalised runs are
# (1, 1, 1, 3, 1.2, 0.8, 0.8) and the per-GPU medians g0 1.0, g1 median(1, 3) = 2.0, g2 1.2, g3 0.8.
RESNET = "uuid,perf,temp\ng0,10,50\ng0,10,51\ng1,10,50\ng1,30,70\ng2,12,55\ng3,8,49\ng3,8,48\n"
RESNET_RUNS = [1.0, 1.0, 1.0, 3.0, 1.2, 0.8, 0.8]
RESNET_MEDIANS = [1.0, 2.0, 1.2, 0.8]
# BERT: median(100, 110, 90, 100) = 100 -> 1.0, 1.1, 0.9, 1.0 (one run per GPU).
BERT = "perf,uuid\n100,h0\n110,h1\n90,h2\n100,h3\n"
BERT_MEDIANS = [1.0, 1.1, 0.9, 1.0]
# PageRank: median(5, 5, 5, 5.5) = 5 -> 1.0, 1.0, 1.0, 1.1.
PAGERANK = "uuid,perf\np0,5\np1,5\np2,5\np3,5.5\n"
PAGERANK_MEDIANS = [1.0, 1.0, 1.0, 1.1]
OTHER_CLUSTER = {
    "frontera-resnet50.csv": RESNET,
    "frontera_bert_large.csv": BERT,
    "Frontera-PageRank-2000.csv": PAGERANK,
    "frontera-sgemm.csv": "uuid,perf\nx,1\n",  # no perf class uses SGEMM
    "README.md": "not a measurement file\n",
}
# A resnet50 job of 10,000 iterations on all 4 GPUs of one node runs at the slowest GPU's
# class-A value, 2.0: 10,000 x 0.17540429367763434 s x 2.0 = 3508.09 s, completed at the
# next 360 s round boundary: 10 rounds = 3600 s (PAL_MODEL sections 2 and 3).
HAND_JCT_S = 3600.0


def write_folder(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def assert_hand_profile(perfvar: np.ndarray) -> None:
    """A 4-GPU gpu-median profile of the generated folder: all 4 measured GPUs of every class,
    in some order (drawn without replacement), so the sorted values are the hand medians."""
    for row, expected in zip(perfvar, (RESNET_MEDIANS, BERT_MEDIANS, BERT_MEDIANS,
                                       PAGERANK_MEDIANS), strict=True):
        np.testing.assert_allclose(np.sort(row), np.sort(expected), rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("name", "workload", "expected"),
    [
        ("resnet-longhorn-agg.csv", "resnet", True),
        ("frontera-resnet50.csv", "resnet", True),
        ("ResNet_50_v100.csv", "resnet", True),
        ("resnets.csv", "resnet", False),
        ("bert-longhorn-agg.csv", "bert", True),
        ("frontera_bert_large.csv", "bert", True),
        ("albert.csv", "bert", False),
        ("roberta-base.csv", "bert", False),
        ("bertlarge.csv", "bert", False),
        ("Frontera-PageRank-2000.csv", "pagerank", True),
        ("sgemm-longhorn-agg.csv", "pagerank", False),
    ],
)
def test_workload_name_rule(name: str, workload: str, expected: bool) -> None:
    assert workload_matches(name, workload) is expected


def test_other_cluster_folder_loads_by_workload_name(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "frontera", OTHER_CLUSTER)
    data = read_measurements(folder)
    assert [Path(s).name for s in data.sources] == [
        "frontera-resnet50.csv", "frontera_bert_large.csv", "frontera_bert_large.csv",
        "Frontera-PageRank-2000.csv",
    ]
    assert data.label == "frontera"
    np.testing.assert_allclose(data.norm_runs[0], RESNET_RUNS, rtol=0, atol=1e-15)
    np.testing.assert_allclose(data.gpu_medians[0], RESNET_MEDIANS, rtol=0, atol=1e-15)
    np.testing.assert_allclose(data.gpu_medians[1], BERT_MEDIANS, rtol=0, atol=1e-15)
    np.testing.assert_allclose(data.gpu_medians[3], PAGERANK_MEDIANS, rtol=0, atol=1e-15)


@pytest.mark.parametrize("policy", ["pal", "pm-first", "packed-sticky", "random-non-sticky"])
def test_other_cluster_folder_simulates(
    tmp_path: Path, write_sia_csv: WriteSiaCsv, policy: str
) -> None:
    folder = write_folder(tmp_path / "frontera", OTHER_CLUSTER)
    trace = read_sia_trace(write_sia_csv([(0, 4, 0, 10000, "resnet50")]))
    episode = make_episode(trace, cluster=ClusterSpec(1, 4), variability_data=folder, seed=3)
    assert episode.profile.name == "frontera-gpu-median"
    assert_hand_profile(episode.profile.perfvar)
    result = run_episode(episode, policy)
    assert not result.metrics.truncated
    assert result.metrics.num_completed == result.metrics.num_jobs == 1
    assert result.metrics.avg_jct_s == HAND_JCT_S


def test_other_cluster_single_run_sampling(tmp_path: Path) -> None:
    # pal-artifact: for g in 0..3, for c in A..D, r.choice(normalised runs of c's file),
    # r = random.Random(42) (PAL_MODEL section 1), over the hand-normalised runs.
    folder = write_folder(tmp_path / "frontera", OTHER_CLUSTER)
    episode = make_episode(_one_job_trace(tmp_path), cluster=ClusterSpec(1, 4),
                           config=preset("pal-artifact"), variability_data=folder)
    runs = (RESNET_RUNS, BERT_MEDIANS, BERT_MEDIANS, PAGERANK_MEDIANS)  # BERT/PageRank: 1 run/GPU
    r = random.Random(42)
    expected = np.array([[r.choice(runs[c]) for c in range(4)] for _ in range(4)]).T
    np.testing.assert_allclose(episode.profile.perfvar, expected, rtol=0, atol=1e-15)


def test_mapping_file_in_the_folder(tmp_path: Path) -> None:
    # Names that say nothing about the workload; C takes its own file (BERT halved: 0.5 .. 0.55).
    folder = write_folder(tmp_path / "site", {
        "run1.csv": RESNET, "run2.csv": BERT, "run3.csv": PAGERANK,
        "run4.csv": "uuid,perf\nq0,50\nq1,55\n",
        MAPPING_FILE_NAME: json.dumps({"A": "run1.csv", "B": "run2.csv", "C": "run4.csv",
                                       "D": "run3.csv"}),
    })
    data = read_measurements(folder)
    assert [Path(s).name for s in data.sources] == ["run1.csv", "run2.csv", "run4.csv",
                                                     "run3.csv"]
    np.testing.assert_allclose(data.gpu_medians[0], RESNET_MEDIANS, rtol=0, atol=1e-15)
    # median(50, 55) = 52.5 -> 50 / 52.5, 55 / 52.5.
    np.testing.assert_allclose(data.gpu_medians[2], [50 / 52.5, 55 / 52.5], rtol=0, atol=1e-15)


def test_mapping_file_given_instead_of_the_folder(tmp_path: Path) -> None:
    # A read-only folder is mapped from elsewhere; a partial mapping finds the rest by name.
    write_folder(tmp_path / "data" / "frontera", {
        **OTHER_CLUSTER, "frontera-resnet101.csv": RESNET.replace("30", "20")})
    mapping = tmp_path / "maps" / "frontera-r50.json"
    mapping.parent.mkdir()
    mapping.write_text(json.dumps({"folder": "../data/frontera", "A": "frontera-resnet50.csv"}))
    resolved = resolve_class_files(mapping)
    assert resolved.label == "frontera-r50" and resolved.mapping == mapping
    assert [p.name for p in resolved.files] == [
        "frontera-resnet50.csv", "frontera_bert_large.csv", "frontera_bert_large.csv",
        "Frontera-PageRank-2000.csv",
    ]
    episode = make_episode(_one_job_trace(tmp_path), cluster=ClusterSpec(1, 4),
                           variability_data=mapping)
    assert_hand_profile(episode.profile.perfvar)


def test_missing_class_names_folder_class_and_files(tmp_path: Path) -> None:
    files = {k: v for k, v in OTHER_CLUSTER.items() if "PageRank" not in k}
    folder = write_folder(tmp_path / "frontera", files)
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    message = str(error.value)
    assert message.startswith(f"{folder}: ")
    assert "perf class D needs a runs file of workload 'pagerank'" in message
    assert str(folder / "pagerank-longhorn-agg.csv") in message  # the file it looked for
    assert ("CSV files found: frontera-resnet50.csv, frontera-sgemm.csv, "
            "frontera_bert_large.csv") in message
    assert "perf class A" not in message and "perf class B" not in message


def test_two_matching_files_are_ambiguous(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "frontera", {**OTHER_CLUSTER,
                                                  "frontera-resnet101.csv": RESNET})
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    message = str(error.value)
    assert str(folder) in message
    assert ("perf class A (workload 'resnet') is ambiguous: 2 CSV files match "
            "(frontera-resnet101.csv, frontera-resnet50.csv)") in message
    assert MAPPING_FILE_NAME in message


def test_bad_row_names_file_line_and_field(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "frontera", {**OTHER_CLUSTER,
                                                  "frontera_bert_large.csv": BERT + "-2,h4\n"})
    with pytest.raises(ProfileError, match="> 0") as error:
        read_measurements(folder)
    # Header on line 1, four good rows on lines 2-5: the negative perf is on line 6.
    assert error.value.path == str(folder / "frontera_bert_large.csv")
    assert error.value.line == 6 and error.value.field == "perf"


@pytest.mark.parametrize(
    ("mapping", "field", "words"),
    [
        ({"E": "x.csv"}, "E", "unknown key"),
        ({"B": "nothere.csv"}, "B", "nothere.csv does not exist"),
        ({"A": ""}, "A", "non-empty file name"),
        ({"A": 3}, "A", "non-empty file name"),
    ],
)
def test_bad_mapping_names_file_and_field(
    tmp_path: Path, mapping: dict[str, object], field: str, words: str
) -> None:
    folder = write_folder(tmp_path / "frontera", {**OTHER_CLUSTER,
                                                  MAPPING_FILE_NAME: json.dumps(mapping)})
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    assert error.value.path == str(folder / MAPPING_FILE_NAME)
    assert error.value.field == field and words in str(error.value)


def test_mapping_that_is_not_json(tmp_path: Path) -> None:
    mapping = tmp_path / "m.json"
    mapping.write_text('{"A": "r.csv",\n "B" }')
    with pytest.raises(ProfileError, match="not valid JSON") as error:
        read_measurements(mapping)
    assert error.value.line == 2


def test_not_a_folder_nor_a_mapping(tmp_path: Path) -> None:
    (tmp_path / "profile.csv").write_text("gpu\n")
    with pytest.raises(ProfileError, match="not a folder of measurement files"):
        read_measurements(tmp_path / "profile.csv")


def test_traces_profile_command_on_another_cluster(tmp_path: Path) -> None:
    from traces.__main__ import main

    folder = write_folder(tmp_path / "frontera", OTHER_CLUSTER)
    output = tmp_path / "frontera-4.csv"
    assert main(["profile", "--variability-data", str(folder), "--num-gpus", "4",
                 "--output", str(output)]) == 0
    assert_hand_profile(read_profile(output).perfvar)
    text = output.read_text()
    assert "source: the measurement files of DIR" in text
    assert "frontera-resnet50.csv" in text and "longhorn" not in text


def test_evaluate_cli_on_another_cluster(tmp_path: Path, write_sia_csv: WriteSiaCsv) -> None:
    folder = write_folder(tmp_path / "frontera", OTHER_CLUSTER)
    trace = write_sia_csv([(0, 4, 0, 10000, "resnet50")])
    output = tmp_path / "results.csv"
    process = subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), "--variability-data", str(folder),
         "--trace", str(trace), "--cluster", "1x4", "--policy", "pal", "packed-sticky",
         "--output", str(output), "--quiet"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )
    assert process.returncode == 0, process.stderr
    with output.open() as handle:
        rows = list(csv.DictReader(handle))
    jcts = {row["policy"]: float(row["avg_jct_s"]) for row in rows}
    assert {"pal", "packed-sticky"} <= set(jcts)  # and the default baseline rows
    assert set(jcts.values()) == {HAND_JCT_S}


def test_evaluate_cli_reports_the_missing_class(tmp_path: Path, write_sia_csv: WriteSiaCsv) -> None:
    folder = write_folder(tmp_path / "frontera",
                          {k: v for k, v in OTHER_CLUSTER.items() if "resnet" not in k})
    process = subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), "--variability-data", str(folder),
         "--trace", str(write_sia_csv([(0, 1, 0, 10, "resnet50")])), "--cluster", "1x4",
         "--policy", "pal", "--quiet"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )
    assert process.returncode == 2
    assert "perf class A needs a runs file of workload 'resnet'" in process.stderr


# ----------------------------------------------------------------------------- public data
def test_longhorn_folder_reads_as_before(data_dir: Path, tmp_path: Path) -> None:
    folder = data_dir / "variability" / "longhorn_pal"
    found = read_measurements(folder)
    named = read_measurements(folder, LONGHORN_CLASS_FILES)
    assert found.sources == named.sources == tuple(str(folder / n) for n in LONGHORN_CLASS_FILES)
    for a, b in zip(found.norm_runs + found.gpu_medians, named.norm_runs + named.gpu_medians,
                    strict=True):
        assert a.tobytes() == b.tobytes()
    # The artifact's 64-GPU profile (PAL_MODEL section 1): GPU 0 and GPU 35 class A.
    episode = make_episode(_one_job_trace(tmp_path), config=preset("pal-artifact"),
                           variability_data=folder)
    np.testing.assert_allclose(episode.profile.perfvar[:, 0],
                               [0.953386, 0.999224, 0.993355, 0.999400], atol=5e-7)
    assert episode.profile.perfvar[0, 35] == pytest.approx(2.827860, abs=5e-7)
    assert episode.profile.name == "longhorn_pal-single-run"


def test_longhorn_through_a_mapping_file(data_dir: Path, tmp_path: Path) -> None:
    # The read-only public folder, mapped from a file elsewhere: the same profile bit for bit.
    folder = data_dir / "variability" / "longhorn_pal"
    mapping = tmp_path / "longhorn.json"
    mapping.write_text(json.dumps({
        "folder": str(folder), "A": "resnet-longhorn-agg.csv", "B": "bert-longhorn-agg.csv",
        "C": "bert-longhorn-agg.csv", "D": "pagerank-longhorn-agg.csv"}))
    trace = _one_job_trace(tmp_path)
    for name in ("default", "pal-artifact"):
        a = make_episode(trace, config=preset(name), variability_data=folder, seed=5)
        b = make_episode(trace, config=preset(name), variability_data=mapping, seed=5)
        assert a.profile.perfvar.tobytes() == b.profile.perfvar.tobytes()
        assert a.episode_hash() == b.episode_hash()


def test_alibaba_pai_folder_is_not_per_gpu_measurements(data_dir: Path) -> None:
    # Per-worker mini-batch times of GPU-sharing jobs: no workload's runs file, so every class
    # is reported missing (docs/TRACES.md "Another cluster's measurements").
    folder = data_dir / "variability" / "alibaba_pai_minibatch"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not part of this data folder")
    with pytest.raises(ProfileError) as error:
        read_measurements(folder)
    message = str(error.value)
    for name in "ABCD":
        assert f"perf class {name} needs a runs file" in message
    assert "job_1_norm.csv" in message


def _one_job_trace(tmp_path: Path) -> Trace:
    path = tmp_path / "one-job.csv"
    path.write_text("job_id,num_gpus,submit_time,duration,model\n0,1,0,10,resnet50\n")
    return read_sia_trace(path)
