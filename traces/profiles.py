"""Variability profiles built from the TACC Longhorn measurements shipped with the PAL artifact.

Two samplings (PAL_MODEL.md section 1):

- ``single-run`` (pal-artifact): each simulated GPU gets ONE normalised run per class, drawn with
  ``random.Random(seed)`` (seed 42 reproduces the artifact's 64-GPU profile exactly);
- ``gpu-median`` (palgym default): each simulated GPU gets a measured GPU's median normalised run,
  measured GPUs drawn without replacement by ``numpy.random.default_rng(seed)``.

Source: TACC Longhorn V100 measurements (Sinha et al., "Not All GPUs Are Created Equal", SC'22),
as shipped in the PAL artifact hal-uw/blox-pal (branch ``artifact``, commit 8a590708,
``aggregated_data/sim``); sampling as in ``blox/cluster_state.py::_get_machine_slowdowns``.
"""

from __future__ import annotations

import hashlib
import random
from enum import Enum
from pathlib import Path

import numpy as np

from palgym.errors import ConfigError
from palgym.io import LONGHORN_CLASS_FILES, read_measurements, resolve_class_files, write_profile
from palgym.sim.variability import VariabilityProfile, sample_gpu_medians, sample_single_runs

LONGHORN_SOURCE = (
    "TACC Longhorn V100 measurements (Sinha et al., SC'22), as shipped in the PAL artifact "
    "hal-uw/blox-pal@8a590708, aggregated_data/sim"
)
"""Citation written into every generated profile."""


class ProfileSampling(str, Enum):
    """How simulated GPUs take values from the measurements."""

    SINGLE_RUN = "single-run"
    """One run per GPU and class, ``random.Random(seed).choice`` (the PAL artifact's method)."""
    GPU_MEDIAN = "gpu-median"
    """Measured GPUs' median runs, drawn without replacement (palgym's default)."""


DEFAULT_PROFILE_SEED: dict[ProfileSampling, int] = {
    ProfileSampling.SINGLE_RUN: 42,
    ProfileSampling.GPU_MEDIAN: 0,
}
"""Seed used when none is given. Source: PAL artifact ``random.seed(42)`` for single-run."""


def build_longhorn_profile(
    directory: str | Path,
    num_gpus: int,
    sampling: ProfileSampling | str = ProfileSampling.GPU_MEDIAN,
    seed: int | None = None,
    name: str | None = None,
) -> VariabilityProfile:
    """Build a G-GPU profile from a Longhorn measurement folder.

    Args:
        directory: PAL-style measurement folder (e.g. Longhorn's ``resnet-``, ``bert-`` and
            ``pagerank-longhorn-agg.csv``) or class-mapping ``.json``
            (:func:`palgym.io.resolve_class_files`).
        num_gpus: G >= 1.
        sampling: see :class:`ProfileSampling`.
        seed: non-negative seed; ``None`` uses :data:`DEFAULT_PROFILE_SEED`.
        name: profile id; defaults to ``longhorn-{G}-{sampling}``.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ConfigError: for ``num_gpus`` < 1, a negative seed or an unknown sampling.
        ProfileError: for a missing or malformed measurement file.

    Source: PAL_MODEL.md section 1 "Building perfvar from measurements"; PAL artifact
    ``blox/cluster_state.py::_get_machine_slowdowns``.
    """
    method = _sampling(sampling)
    chosen_seed = DEFAULT_PROFILE_SEED[method] if seed is None else seed
    if num_gpus < 1:
        raise ConfigError(f"num_gpus must be >= 1, got {num_gpus}")
    if chosen_seed < 0:
        raise ConfigError(f"seed must be >= 0, got {chosen_seed}")
    profile_name = name or f"longhorn-{num_gpus}-{method.value}"
    measurements = read_measurements(directory)
    if method is ProfileSampling.SINGLE_RUN:
        runs = [values.tolist() for values in measurements.norm_runs]
        return sample_single_runs(runs, num_gpus, random.Random(chosen_seed), profile_name)
    medians = [values.tolist() for values in measurements.gpu_medians]
    return sample_gpu_medians(medians, num_gpus, np.random.default_rng(chosen_seed), profile_name)


def profile_command(num_gpus: int, sampling: ProfileSampling | str, seed: int) -> str:
    """The canonical command that regenerates a profile (``DIR`` = the measurement folder).

    Args:
        num_gpus: G.
        sampling: the sampling.
        seed: the seed actually used.

    Returns:
        E.g. ``python -m traces profile --variability-data DIR --num-gpus 64
        --sampling gpu-median --seed 0``.
    """
    return (
        f"python -m traces profile --variability-data DIR --num-gpus {num_gpus} "
        f"--sampling {_sampling(sampling).value} --seed {seed}"
    )


def write_longhorn_profile(
    directory: str | Path,
    output: str | Path,
    num_gpus: int,
    sampling: ProfileSampling | str = ProfileSampling.GPU_MEDIAN,
    seed: int | None = None,
) -> Path:
    """Build a profile and write it with a comment citing the source, command and input hashes.

    The comment names the measurement folder ``DIR`` and identifies it by the SHA-256 of the
    files read, so the output bytes do not depend on where the folder lives.

    Args:
        directory: the Longhorn measurement folder.
        output: destination CSV file.
        num_gpus: G.
        sampling: see :class:`ProfileSampling`.
        seed: see :func:`build_longhorn_profile`.

    Returns:
        The path written.

    Raises:
        ConfigError: for invalid arguments.
        ProfileError: for bad measurement files.
        OSError: if the output cannot be written.
    """
    method = _sampling(sampling)
    chosen_seed = DEFAULT_PROFILE_SEED[method] if seed is None else seed
    profile = build_longhorn_profile(directory, num_gpus, method, chosen_seed)
    digests = _file_digests(directory)
    longhorn = tuple(name for name, _ in digests) == tuple(dict.fromkeys(LONGHORN_CLASS_FILES))
    lines = [
        f"generated by: {profile_command(num_gpus, method, chosen_seed)}",
        f"source: {LONGHORN_SOURCE if longhorn else 'the measurement files of DIR'}",
        "DIR files (sha256): " + ", ".join(f"{name} {digest}" for name, digest in digests),
        "values: perfvar = slowdown vs the median GPU per perf class (A resnet, B bert, "
        "C bert, D pagerank)",
    ]
    return write_profile(profile, output, comment="\n".join(lines))


def _file_digests(directory: str | Path) -> list[tuple[str, str]]:
    """(file name, first 16 hex digits of SHA-256) of each distinct class file, in class order."""
    paths = list(dict.fromkeys(resolve_class_files(directory).files))
    return [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()[:16]) for p in paths]


def _sampling(sampling: ProfileSampling | str) -> ProfileSampling:
    try:
        return ProfileSampling(sampling)
    except ValueError:
        choices = ", ".join(s.value for s in ProfileSampling)
        raise ConfigError(f"unknown sampling {sampling!r} (choose {choices})") from None
