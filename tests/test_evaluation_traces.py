"""The one trace resolver of the command lines (agents.evaluation.traces): every spec kind, the
env's meaning of a spec, duplicate ids, and the errors that name the bad spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.evaluation.traces import env_trace_arg, resolve_traces, split_of_sets, split_source
from palgym.bundled import bundled_trace_paths
from palgym.envs.episodes import load_traces as env_load_traces
from palgym.errors import ConfigError, TraceFormatError
from palgym.io import read_sia_trace

BUNDLED = Path(__file__).resolve().parents[1] / "palgym" / "data" / "traces"
# Two jobs by hand: job 0 (1 GPU) arrives at 10 s and runs 100 units; job 1 (2 GPUs) at 40 s.
TWO_JOBS = "job_id,num_gpus,submit_time,duration,model\n0,1,10,100,resnet50\n1,2,40,50,vgg19\n"


def test_bundled_is_every_bundled_trace_in_name_order() -> None:
    names = [t.name for t in resolve_traces(["bundled"])]
    assert names == [f"sia-philly-gen-{i}" for i in range(5)]


def test_a_bundled_name_is_that_file() -> None:
    (trace,) = resolve_traces(["sia-philly-gen-2"])
    assert trace.content_hash() == read_sia_trace(BUNDLED / "sia-philly-gen-2.csv").content_hash()


def test_set_split_follows_the_bundled_manifest() -> None:
    # palgym-traceset.json: gen-0..2 train, gen-3 validation, gen-4 test.
    assert [t.name for t in resolve_traces(["bundled:train"])] == [
        "sia-philly-gen-0", "sia-philly-gen-1", "sia-philly-gen-2"]
    assert [t.name for t in resolve_traces([{"set": "bundled", "split": "test"}])] == [
        "sia-philly-gen-4"]
    assert [t.name for t in split_of_sets(["bundled"], "validation")] == ["sia-philly-gen-3"]
    assert split_source(None, "test") == (["bundled"], "bundled:test")


def test_specs_mean_what_the_env_reads() -> None:
    specs = ["bundled:validation", "sia-philly-gen-0", str(BUNDLED / "sia-philly-gen-1.csv")]
    ours = [t.content_hash() for t in resolve_traces(specs)]
    assert ours == [t.content_hash() for t in env_load_traces(specs)]


def test_a_file_is_read_in_the_given_duration_unit(tmp_path: Path) -> None:
    path = tmp_path / "two.csv"
    path.write_text(TWO_JOBS, encoding="utf-8")
    (trace,) = resolve_traces([path], duration_unit="seconds")
    assert trace.name == "two"
    # seconds: 1-second iterations, so the work is the duration column itself
    np.testing.assert_array_equal(trace.submit_time_s, [10.0, 40.0])
    np.testing.assert_array_equal(trace.num_gpus, [1, 2])


def test_two_traces_with_one_id_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "sia-philly-gen-0.csv").write_text(TWO_JOBS, encoding="utf-8")
    with pytest.raises(ConfigError, match="two traces are named 'sia-philly-gen-0'"):
        resolve_traces(["sia-philly-gen-0", tmp_path / "a" / "sia-philly-gen-0.csv"])


def test_an_unknown_spec_is_named() -> None:
    with pytest.raises(ConfigError, match="'no-such-trace' is neither a file nor a bundled"):
        resolve_traces(["no-such-trace"])
    with pytest.raises(ConfigError, match="no trace"):
        resolve_traces([])


def test_a_malformed_file_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(TWO_JOBS.replace("0,1,10,100", "0,one,10,100"), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="bad.csv"):
        resolve_traces([path], trace_format="sia")


def test_env_trace_arg_checks_the_specs_and_keeps_them() -> None:
    assert env_trace_arg(None) is None
    assert env_trace_arg(["bundled:train"]) == "bundled:train"
    assert env_trace_arg(["sia-philly-gen-0", "bundled:test"]) == ["sia-philly-gen-0",
                                                                  "bundled:test"]
    with pytest.raises(ConfigError, match="'no-such-trace'"):
        env_trace_arg(["no-such-trace"])
    with pytest.raises(TraceFormatError, match="missing.csv: cannot read file"):
        env_trace_arg(["missing.csv"])
    assert len(bundled_trace_paths()) == 5
