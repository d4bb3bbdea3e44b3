"""palgym-bench: frozen, versioned benchmark suites, results files and their replay.

``python -m palgym.bench list|prepare|run|validate|leaderboard`` (docs/BENCH.md). Suites are
data (:mod:`palgym.bench.suites`, ``palgym/bench/suites/*.yaml``); a results file
(:mod:`palgym.bench.results`) holds every episode's metrics and env actions, and
:mod:`palgym.bench.replay` replays them; :mod:`palgym.bench.stats` and
:mod:`palgym.bench.leaderboard` turn them into docs/LEADERBOARD.md (docs/SUBMITTING.md).
The command's parser and the body of ``run`` and ``prepare`` are :mod:`agents.bench` (they
build contenders with ``agents`` and write generated files with ``traces``, so they live above
both); ``python -m palgym.bench`` reaches them through the command table, :mod:`palgym.cli`.
"""

from palgym.bench.replay import Problem, validate_files
from palgym.bench.results import (
    SCHEMA,
    ChoiceRow,
    EpisodeRow,
    Header,
    ResultsError,
    ResultsFile,
    decode_actions,
    encode_actions,
    read_results,
    write_results,
)
from palgym.bench.suites import DataRoots, Suite, SuiteDataError, Task, load_suite, suite_names

__all__ = [
    "SCHEMA", "ChoiceRow", "DataRoots", "EpisodeRow", "Header", "Problem", "ResultsError",
    "ResultsFile", "Suite", "SuiteDataError", "Task", "decode_actions", "encode_actions",
    "load_suite", "read_results", "suite_names", "validate_files", "write_results",
]
