"""Sia / Pollux workload CSV: ``name,time,application,num_replicas,batch_size``.

Column mapping (times kept as in the file, no rebasing):

=============  ================  ================================================================
file column    canonical column  rule
=============  ================  ================================================================
(row order)    job_id            0..J-1 in file order (``name`` is not numeric)
time           submit_time_s     seconds, >= 0
num_replicas   num_gpus          integer >= 1 (one GPU per replica)
application    model             non-empty; perf class from :data:`POLLUX_PERF_CLASS`
batch_size     batch_size        integer >= 1, or empty
(none)         duration          seconds, drawn by the documented rule below
=============  ================  ================================================================

**Duration rule** (the file has none): each job's duration in seconds is drawn from the Philly
duration distribution of its GPU-count group (:func:`traces.philly_fit.sample_philly_durations`,
``numpy.random.default_rng(seed)``, one uniform per job in file order), so equal seeds give equal
traces. The rule and seed are written into the trace metadata (``duration_rule``).

Source: Pollux OSDI'21 artifact (petuum/adaptdl, ``simulator/workloads``) and the Sia SOSP'23
artifact use this layout; the durations follow :mod:`traces.philly_fit`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from palgym.errors import ConfigError
from traces.load_report import LoadReport
from traces.loaders.common import RowFilter, finish
from traces.philly_fit import PHILLY_FITTED_ON, sample_philly_durations
from traces.schema import CanonicalTrace
from traces.tabular import empty_mask, parse_numbers, read_table, require

POLLUX_COLUMNS: tuple[str, ...] = ("name", "time", "application", "num_replicas", "batch_size")

POLLUX_PERF_CLASS: dict[str, str] = {
    "cifar10": "A", "imagenet": "A", "yolov3": "A", "bert": "B", "deepspeech2": "B", "ncf": "D",
}
"""Pollux application -> perf class (an assumption, documented): convolutional nets (cifar10 =
ResNet-18, imagenet = ResNet-50, yolov3) -> A (ResNet measurements); sequence models (bert,
deepspeech2) -> B (BERT measurements); ncf (embedding lookups, memory-bound) -> D (PageRank
measurements). Any other application: derived from the model name (palgym's rule)."""


def load_pollux(path: str | Path, *, seed: int = 0, name: str | None = None) -> CanonicalTrace:
    """Load a Pollux / Sia workload CSV, assigning durations by the seeded Philly rule.

    Args:
        path: the CSV file.
        seed: seed of the duration draw (>= 0).
        name: trace id (default: the file stem).

    Returns:
        The canonical trace (durations in seconds).

    Raises:
        TraceFormatError: naming file, line and field for a missing column or a bad value.
        ConfigError: for a negative seed.
    """
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    table = read_table(path, POLLUX_COLUMNS)
    submit = parse_numbers(table, "time")
    require(table, "time", submit >= 0, ">= 0")
    num_gpus = parse_numbers(table, "num_replicas", integer=True)
    require(table, "num_replicas", num_gpus >= 1, ">= 1")
    require(table, "application", ~empty_mask(table, "application"), "non-empty")
    batch = parse_numbers(table, "batch_size", integer=True, allow_empty=True)
    require(table, "batch_size", np.isnan(batch) | (batch >= 1), ">= 1")
    rng = np.random.default_rng(seed)
    duration = sample_philly_durations(rng, num_gpus.astype(np.int64))
    apps = table.cells["application"]
    perf_class = np.array([POLLUX_PERF_CLASS.get(str(a), "") for a in apps], dtype=object)
    rows = RowFilter(table, LoadReport(str(table.path), rows_read=table.num_rows))
    rule = (f"seconds drawn from the Philly duration distribution of the job's GPU-count group "
            f"(traces.philly_fit, {PHILLY_FITTED_ON}), numpy default_rng({seed})")
    metadata = {"format": "pollux", "source": str(table.path), "duration_rule": rule,
                "seed": str(seed)}
    return finish(
        table, rows, name, submit_s=submit, rebase=False, metadata=metadata,
        job_id=np.arange(table.num_rows, dtype=np.float64),
        columns={"num_gpus": num_gpus, "duration": duration, "duration_unit": "seconds",
                 "model": apps, "perf_class": perf_class, "batch_size": batch},
    )
