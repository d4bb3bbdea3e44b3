"""Array aliases, enums and sentinels shared by the simulator core.

Dimension names used in docstrings throughout palgym: G GPUs, N nodes, J jobs, C perf classes,
K candidates, T slowdown tiers.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
StatusArray = npt.NDArray[np.int8]
"""Job statuses (:class:`JobStatus` values)."""

FREE: int = -1
"""Sentinel in ``job_of_gpu`` for a GPU that holds no job."""

NUM_PERF_CLASSES: int = 4
PERF_CLASS_NAMES: tuple[str, ...] = ("A", "B", "C", "D")


class PerfClass(IntEnum):
    """Variability class of a job (PAL, SC24, Section IV-A).

    Each class is tied to one measured application profile: A = ResNet-50, B = BERT,
    C = BERT (drawn independently), D = PageRank.
    """

    A = 0
    B = 1
    C = 2
    D = 3


class JobStatus(IntEnum):
    """Life cycle of a job in the simulator."""

    PENDING = 0  # not yet submitted (submit_time_s in the future)
    QUEUED = 1  # submitted, holds no GPU
    RUNNING = 2  # holds num_gpus GPUs
    COMPLETED = 3


class Locality(IntEnum):
    """Whether a GPU set lies within one node or spans several."""

    WITHIN = 0
    ACROSS = 1
