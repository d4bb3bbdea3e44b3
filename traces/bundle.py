"""The files bundled in ``palgym/data/`` and how to regenerate them, byte for byte.

Traces need nothing external; profiles need the Longhorn measurement folder (PAL artifact
``aggregated_data/sim``), so they are regenerated only when that folder is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import palgym.errors
from traces.generate import write_sia_philly_like
from traces.profiles import ProfileSampling, write_longhorn_profile


@dataclass(frozen=True)
class BundledTrace:
    """A generated Sia-Philly-like trace.

    Attributes:
        relative_path: path under the data folder.
        num_jobs: J.
        seed: generator seed.
    """

    relative_path: str
    num_jobs: int
    seed: int


@dataclass(frozen=True)
class BundledProfile:
    """A variability profile built from the Longhorn measurements.

    Attributes:
        relative_path: path under the data folder.
        num_gpus: G.
        sampling: the sampling method.
        seed: the sampling seed.
    """

    relative_path: str
    num_gpus: int
    sampling: ProfileSampling
    seed: int


BUNDLED_TRACES: tuple[BundledTrace, ...] = tuple(
    BundledTrace(f"traces/sia-philly-gen-{seed}.csv", 160, seed) for seed in range(5)
)
"""Five 160-job traces, seeds 0..4 (the size of PAL's Sia-Philly workloads)."""

BUNDLED_PROFILES: tuple[BundledProfile, ...] = (
    BundledProfile("profiles/longhorn-1024-gpu-median.csv", 1024, ProfileSampling.GPU_MEDIAN, 0),
    BundledProfile("profiles/longhorn-1024-single-run.csv", 1024, ProfileSampling.SINGLE_RUN, 42),
)
"""1,024-GPU profiles; a cluster of G GPUs uses the first G. Single-run sampling is GPU-major, so
the first 64 GPUs of the seed-42 file are exactly the artifact's 64-GPU (16 x 4) profile."""


def default_data_dir() -> Path:
    """``palgym/data`` of the imported palgym package (never the working directory).

    Returns:
        The folder path.
    """
    # palgym.errors, not palgym: the package may be a namespace package without __init__.py.
    return Path(palgym.errors.__file__).resolve().parent / "data"


def write_bundle(
    output_dir: str | Path | None = None, variability_data: str | Path | None = None
) -> list[Path]:
    """Regenerate the bundled files into ``output_dir``.

    Args:
        output_dir: destination folder (default :func:`default_data_dir`); sub-folders are made.
        variability_data: the Longhorn measurement folder; profiles are skipped without it.

    Returns:
        The paths written, traces first.

    Raises:
        ConfigError: for invalid bundle entries.
        ProfileError: for bad measurement files.
        OSError: if a file cannot be written.
    """
    root = Path(output_dir) if output_dir is not None else default_data_dir()
    written = [
        write_sia_philly_like(root / item.relative_path, item.num_jobs, item.seed)
        for item in BUNDLED_TRACES
    ]
    if variability_data is not None:
        written += [
            write_longhorn_profile(
                variability_data, root / item.relative_path, item.num_gpus, item.sampling,
                item.seed,
            )
            for item in BUNDLED_PROFILES
        ]
    return written
