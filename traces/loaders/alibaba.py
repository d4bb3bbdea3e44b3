"""Alibaba GPU cluster trace v2023 pod list (``openb_pod_list_*.csv``):
``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time``.

Column mapping:

==============  ================  ==============================================================
file column     canonical column  rule
==============  ================  ==============================================================
creation_time   submit_time_s     seconds; minus the earliest kept creation time
scheduled_time  duration (start)  ``duration = deletion_time - scheduled_time`` (seconds)
deletion_time   duration (end)
num_gpu         num_gpus          integer; 0 = CPU pod (dropped)
gpu_milli       (rule below)      thousandths of ONE GPU per requested GPU, 0..1000
(sort)          job_id            0..J-1 by creation time (ties in file order)
(none)          model             ``unknown`` (perf class A, palgym's rule)
name, cpu_milli, memory_mib, gpu_spec, qos, pod_phase: not used (``pod_phase`` = ``Pending``
counts as never scheduled).
==============  ================  ==============================================================

**Fractional GPUs** (``0 < gpu_milli < 1000``, GPU sharing): ``fractional="drop"`` (default) drops
the pod; ``fractional="round_up"`` gives it ``num_gpu`` whole GPUs (each share becomes a whole
GPU, overstating demand). Both are reported. **Never scheduled** (empty ``scheduled_time`` or
``pod_phase`` Pending): dropped. **Never deleted** (empty ``deletion_time``, still running at the
end of the trace): ``open_ended="drop"`` (default) drops it; ``open_ended="truncate"`` ends it at
the latest time in the file (reported as changed). Zero-length pods are dropped.

Source: alibaba/clusterdata ``cluster-trace-gpu-v2023`` (Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", ATC'23).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from palgym.errors import ConfigError
from traces.load_report import LoadReport
from traces.loaders.common import RowFilter, finish
from traces.schema import UNKNOWN_MODEL, CanonicalTrace
from traces.tabular import parse_numbers, read_table, require

ALIBABA_COLUMNS: tuple[str, ...] = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
)
ALIBABA_REQUIRED: tuple[str, ...] = (
    "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time",
)
FRACTIONAL_RULES: tuple[str, ...] = ("drop", "round_up")
OPEN_ENDED_RULES: tuple[str, ...] = ("drop", "truncate")
MILLI_PER_GPU: int = 1000


def load_alibaba(
    path: str | Path, *, fractional: str = "drop", open_ended: str = "drop",
    name: str | None = None,
) -> CanonicalTrace:
    """Load an Alibaba GPU v2023 pod list as whole-GPU jobs.

    Args:
        path: the CSV file.
        fractional: ``"drop"`` or ``"round_up"`` (see the module docstring).
        open_ended: ``"drop"`` or ``"truncate"``.
        name: trace id (default: the file stem).

    Returns:
        The canonical trace (durations in seconds), the earliest kept pod at time 0.

    Raises:
        TraceFormatError: naming file, line and field for a missing column or bad cell
            (``gpu_milli`` outside 0..1000, a time that is not a number) or if no pod is left.
        ConfigError: for an unknown rule.
    """
    _check_rule("fractional", fractional, FRACTIONAL_RULES)
    _check_rule("open_ended", open_ended, OPEN_ENDED_RULES)
    table = read_table(path, ALIBABA_REQUIRED)
    num_gpu = parse_numbers(table, "num_gpu", integer=True)
    require(table, "num_gpu", num_gpu >= 0, ">= 0")
    milli = parse_numbers(table, "gpu_milli", integer=True, allow_empty=True)
    milli = np.where(np.isnan(milli) & (num_gpu == 0), 0.0, milli)
    require(table, "gpu_milli", (milli >= 0) & (milli <= MILLI_PER_GPU), "in 0..1000")
    created = parse_numbers(table, "creation_time")
    scheduled = parse_numbers(table, "scheduled_time", allow_empty=True)
    deleted = parse_numbers(table, "deletion_time", allow_empty=True)
    rows = RowFilter(table, LoadReport(str(table.path), rows_read=table.num_rows))
    rows.drop(num_gpu < 1, "CPU pod (num_gpu 0)", "num_gpu")
    share = (milli > 0) & (milli < MILLI_PER_GPU)
    if fractional == "drop":
        rows.drop(share | (milli == 0), "fractional GPU (gpu_milli < 1000)", "gpu_milli")
    else:
        rows.change(share | (milli == 0), "fractional GPU rounded up to whole GPUs",
                    "gpu_milli")
    pending = np.isnan(scheduled)
    if "pod_phase" in table.cells:
        pending |= table.cells["pod_phase"] == "Pending"
    rows.drop(pending, "never scheduled", "scheduled_time")
    open_rows = np.isnan(deleted)
    if open_ended == "drop":
        rows.drop(open_rows, "never deleted (still running at trace end)", "deletion_time")
    else:
        times = np.concatenate([created, scheduled, deleted])
        times = times[np.isfinite(times)]
        trace_end = float(times.max()) if times.size else 0.0
        rows.change(open_rows, f"never deleted: ended at the trace end {trace_end!r}",
                    "deletion_time")
        deleted = np.where(open_rows, trace_end, deleted)
    duration = deleted - scheduled
    rows.drop(~(duration > 0), "zero-length pod (deletion <= scheduled)", "deletion_time")
    metadata = {"format": "alibaba", "source": str(table.path), "fractional": fractional,
                "open_ended": open_ended,
                "duration_rule": "deletion_time - scheduled_time (seconds)"}
    return finish(table, rows, name, submit_s=created, metadata=metadata,
                  columns={"num_gpus": num_gpu, "duration": duration,
                           "duration_unit": "seconds", "model": UNKNOWN_MODEL})


def _check_rule(option: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{option} must be one of {', '.join(allowed)}, got {value!r}")
