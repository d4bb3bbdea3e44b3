"""Per-GPU performance variability: the simulated truth of how fast each GPU runs each class.

``perfvar[c, g]`` is how many times slower class-c work runs on GPU g than on the median GPU
(1.0 = median, larger = slower). Source: PAL, SC24, Section III and IV-A; the values are built
from per-run measurements normalised by the file median (artifact
``blox/cluster_state.py::_get_machine_slowdowns``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from palgym.errors import ProfileError
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray


@dataclass(frozen=True, eq=False)
class VariabilityProfile:
    """Variability values of a cluster's GPUs.

    Attributes:
        name: Profile id used in reports.
        perfvar: float64 (C, G), C = 4 perf classes, G GPUs; slowdown vs the median GPU, > 0.

    Raises:
        ProfileError: if ``perfvar`` is not (4, G) or holds a non-finite or non-positive value.
    """

    name: str
    perfvar: FloatArray

    def __post_init__(self) -> None:
        values = np.asarray(self.perfvar, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] != NUM_PERF_CLASSES or values.shape[1] < 1:
            raise ProfileError(
                f"perfvar must have shape ({NUM_PERF_CLASSES}, G), got {values.shape}",
                path=self.name,
            )
        bad = np.argwhere(~(np.isfinite(values) & (values > 0)))
        if bad.size:
            c, g = (int(v) for v in bad[0])
            raise ProfileError(
                f"GPU {g}: value {values[c, g]!r} must be finite and > 0",
                path=self.name,
                field=f"perfvar_class{'ABCD'[c]}",
            )
        values.setflags(write=False)
        object.__setattr__(self, "perfvar", values)

    @property
    def num_gpus(self) -> int:
        """G, the number of GPUs the profile covers."""
        return int(self.perfvar.shape[1])

    def content_hash(self) -> str:
        """SHA-256 (hex, first 16 chars) of the values."""
        return hashlib.sha256(np.ascontiguousarray(self.perfvar).tobytes()).hexdigest()[:16]

    def take(self, num_gpus: int) -> VariabilityProfile:
        """The first ``num_gpus`` GPUs of the profile.

        Raises:
            ProfileError: if the profile has fewer GPUs than asked for.
        """
        if num_gpus > self.num_gpus:
            raise ProfileError(
                f"profile covers {self.num_gpus} GPUs, the cluster has {num_gpus}", path=self.name
            )
        return VariabilityProfile(self.name, self.perfvar[:, :num_gpus].copy())

    @classmethod
    def homogeneous(cls, num_gpus: int) -> VariabilityProfile:
        """A profile with every value 1.0 (no variability)."""
        return cls("homogeneous", np.ones((NUM_PERF_CLASSES, num_gpus)))


def sample_single_runs(
    norm_runs: Sequence[Sequence[float] | FloatArray],
    num_gpus: int,
    rng: random.Random,
    name: str = "single-run",
) -> VariabilityProfile:
    """The PAL artifact's profile: each GPU gets ONE normalised run per class, drawn uniformly.

    For g in 0..G-1, for c in A, B, C, D: ``perfvar[c, g] = rng.choice(norm_runs[c])``. With
    ``random.Random(42)`` and the Longhorn files (A = resnet, B = C = bert, D = pagerank) this
    reproduces the artifact's 64-GPU profile exactly. ``rng`` is advanced in place: the artifact
    reuses the same generator for Random placement.

    Args:
        norm_runs: per class (4 sequences), the runs' ``perf / median(perf)`` in file order.
        num_gpus: G.
        rng: a ``random.Random`` instance (documented artifact-compatibility exception to
            palgym's numpy-only RNG rule).
        name: profile id.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ProfileError: if a class has no runs.

    Source: artifact ``blox/cluster_state.py::_get_machine_slowdowns`` (the uuid lookup never
    succeeds in simulation, so the ``random.choice`` fallback is what runs).
    """
    _check_runs(norm_runs, name)
    perfvar = np.empty((NUM_PERF_CLASSES, num_gpus))
    for gpu in range(num_gpus):
        for perf_class in range(NUM_PERF_CLASSES):
            perfvar[perf_class, gpu] = rng.choice(norm_runs[perf_class])
    return VariabilityProfile(name, perfvar)


def sample_gpu_medians(
    gpu_medians: Sequence[Sequence[float] | FloatArray],
    num_gpus: int,
    rng: np.random.Generator,
    name: str = "gpu-median",
) -> VariabilityProfile:
    """palgym's default profile: simulated GPUs take measured GPUs' median normalised runs.

    For each class independently, G measured GPUs are drawn without replacement (with
    replacement only when the data set has fewer GPUs than the cluster).

    Args:
        gpu_medians: per class, the median of each measured GPU's ``perf / median(perf)``.
        num_gpus: G.
        rng: numpy generator (the variability stream).
        name: profile id.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ProfileError: if a class has no GPUs.
    """
    _check_runs(gpu_medians, name)
    perfvar = np.empty((NUM_PERF_CLASSES, num_gpus))
    for perf_class in range(NUM_PERF_CLASSES):
        values = np.asarray(gpu_medians[perf_class], dtype=np.float64)
        replace = values.shape[0] < num_gpus
        perfvar[perf_class] = rng.choice(values, size=num_gpus, replace=replace)
    return VariabilityProfile(name, perfvar)


def _check_runs(runs: Sequence[Sequence[float] | FloatArray], name: str) -> None:
    if len(runs) != NUM_PERF_CLASSES:
        raise ProfileError(f"need runs for {NUM_PERF_CLASSES} classes, got {len(runs)}", path=name)
    for perf_class, values in enumerate(runs):
        if len(values) == 0:
            raise ProfileError("no measurements", path=name, field=f"class{'ABCD'[perf_class]}")
