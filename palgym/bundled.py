"""Data bundled with palgym (``palgym/data``, written by ``python -m traces``; see its README).

Traces: five 160-job Sia-Philly-like traces. Profiles: 1,024-GPU variability profiles.

Source of the underlying measurements: TACC Longhorn V100 runs (Sinha et al., "Not All GPUs Are
Created Equal", SC'22) as shipped in the PAL artifact (hal-uw/blox-pal, ``aggregated_data/sim``).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from palgym.errors import ProfileError
from palgym.io.profile_file import read_profile
from palgym.sim.variability import VariabilityProfile

LONGHORN_RUN_COUNTS: tuple[int, int, int, int] = (1404, 1096, 1096, 880)
"""Runs per class file (resnet, bert, bert, pagerank): what single-run sampling draws from."""

BUNDLED_PROFILES: dict[str, str] = {
    "gpu-median": "longhorn-1024-gpu-median.csv",
    "single-run": "longhorn-1024-single-run.csv",
}


def bundled_trace_paths() -> dict[str, Path]:
    """Bundled trace id (file stem) -> path, in natural name order."""
    folder = Path(str(resources.files("palgym").joinpath("data", "traces")))
    files = sorted(folder.glob("*.csv"), key=natural_key) if folder.is_dir() else []
    return {path.stem: path for path in files}


def natural_key(path: Path) -> list[int | str]:
    """Sort key ordering ``x-2`` before ``x-10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def bundled_profile_path(sampling: str) -> Path:
    """Path of the bundled profile file for a sampling method."""
    if sampling not in BUNDLED_PROFILES:
        raise ProfileError(f"no bundled profile for sampling {sampling!r}")
    return Path(str(resources.files("palgym").joinpath("data", "profiles",
                                                         BUNDLED_PROFILES[sampling])))


def bundled_profile(sampling: str, num_gpus: int) -> VariabilityProfile:
    """The first ``num_gpus`` GPUs of the bundled profile of ``sampling``.

    The single-run file is the artifact's draw (``random.Random(42)``, GPU-major), so its first
    64 GPUs are exactly the artifact's 64-GPU profile.

    Raises:
        ProfileError: if the cluster has more GPUs than the bundled profile.
    """
    profile = read_profile(bundled_profile_path(sampling), name=f"longhorn-{sampling}")
    return profile.take(num_gpus)
