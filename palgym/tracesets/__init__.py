"""Trace sets: named collections of trace files with disjoint train / validation / test splits.

A trace set lists its **members** (trace files, each with the SHA-256 of its bytes) and three
**splits**. A split entry is a whole member or a window of its jobs: positions
``[start, stop)`` in arrival order (the order :class:`~palgym.sim.workload.Trace` keeps, the
one the env's ``window_start`` counts in). No job is in two splits.

Where a set comes from (:func:`load_trace_set`):

- ``"bundled"``: the five generated traces of ``palgym/data/traces``, by trace:
  ``sia-philly-gen-0..2`` train, ``sia-philly-gen-3`` validation, ``sia-philly-gen-4`` test
  (the committed manifest ``palgym/data/traces/palgym-traceset.json``).
- a manifest file (``*.json``), or a folder holding :data:`MANIFEST_NAME`: exactly its splits.
- any other folder: its ``*.csv`` files split by the **folder rule** (:func:`folder_rule`):
  files in natural name order; the last ``ceil(0.4 n)`` files are the test split; every other
  file gives its first jobs to train and its last ``ceil(0.2 J)`` jobs to validation. So a
  folder of ``workload-1..5.csv`` (160 jobs each) splits into train = workloads 1-3 jobs
  ``[0, 128)``, validation = workloads 1-3 jobs ``[128, 160)``, test = workloads 4-5. A single
  file splits 60 / 20 / 20 by jobs.

Manifest (JSON, ``"format": "palgym-traceset/1"``)::

    {"format": "palgym-traceset/1", "name": "bundled", "rule": "<how the splits were made>",
     "duration_unit": "iterations",
     "members": [{"trace": "sia-philly-gen-0", "path": "sia-philly-gen-0.csv",
                  "sha256": "<64 hex>", "num_jobs": 160}, ...],
     "splits": {"train": [{"trace": "sia-philly-gen-0"},
                          {"trace": "workload-1", "jobs": [0, 128]}, ...],
                "validation": [...], "test": [...]}}

Member paths are relative to the manifest's folder (or absolute). Loading a manifest hashes
every member and raises :class:`TraceSetError` naming the file when one changed.
:func:`make_trace_set` and :func:`write_manifest` write a manifest for any choice of splits.

Env and CLI syntax: ``"<set>:<split>"`` (e.g. ``"bundled:train"``,
``"/data/sia_philly_pal:test"``) or ``{"set": <set>, "split": <split>}``
(:func:`parse_split_spec`, :func:`split_traces`).
"""

from palgym.tracesets.manifest import (
    BUNDLED_SET,
    MANIFEST_NAME,
    bundled_manifest_path,
    load_trace_set,
    parse_split_spec,
    read_manifest,
    split_specs,
    split_traces,
    write_manifest,
)
from palgym.tracesets.sets import (
    FOLDER_RULE,
    MANIFEST_FORMAT,
    SPLITS,
    Member,
    SplitEntry,
    TraceSet,
    TraceSetError,
    check_disjoint,
    file_sha256,
    folder_rule,
    job_range,
    make_trace_set,
)

__all__ = [
    "BUNDLED_SET", "FOLDER_RULE", "MANIFEST_FORMAT", "MANIFEST_NAME", "SPLITS", "Member",
    "SplitEntry", "TraceSet", "TraceSetError", "bundled_manifest_path", "check_disjoint",
    "file_sha256", "folder_rule", "job_range", "load_trace_set", "make_trace_set",
    "parse_split_spec", "read_manifest", "split_specs", "split_traces", "write_manifest",
]
