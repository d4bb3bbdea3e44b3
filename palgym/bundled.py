"""Data bundled with palgym (``palgym/data``, written by ``python -m traces``; see its README).

Traces: five 160-job Sia-Philly-like traces. Profiles: 1,024-GPU variability profiles,
extended by a seeded rule for larger clusters (:func:`extend_profile`).

Source of the underlying measurements: TACC Longhorn V100 runs (Sinha et al., "Not All GPUs Are
Created Equal", SC'22) as shipped in the PAL artifact (hal-uw/blox-pal, ``aggregated_data/sim``).
"""

from __future__ import annotations

import logging
import re
from importlib import resources
from pathlib import Path

import numpy as np

from palgym.errors import ProfileError
from palgym.io.profile_file import read_profile
from palgym.sim.variability import VariabilityProfile

LONGHORN_RUN_COUNTS: tuple[int, int, int, int] = (1404, 1096, 1096, 880)
"""Runs per class file (resnet, bert, bert, pagerank): what single-run sampling draws from."""

EXTENSION_SEED: int = 1024
"""Seed of the generator that draws the GPUs of a cluster larger than the bundled profile."""

logger = logging.getLogger(__name__)
_WARNED: set[tuple[str, int]] = set()

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
    """The bundled profile of ``sampling`` for a ``num_gpus``-GPU cluster.

    Up to 1,024 GPUs: the first ``num_gpus`` GPUs of the bundled file. The single-run file is the
    artifact's draw (``random.Random(42)``, GPU-major), so its first 64 GPUs are exactly the
    artifact's 64-GPU profile.

    Larger clusters: the bundled GPUs followed by ``num_gpus - 1024`` GPUs drawn by
    :func:`extend_profile` (whole columns of the bundled file, seeded with
    :data:`EXTENSION_SEED`), and a warning (``logging``, once per process for each sampling and
    size) names the rule and the command that pins a profile of that size.

    Args:
        sampling: ``"gpu-median"`` or ``"single-run"``.
        num_gpus: G >= 1.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ProfileError: for an unknown sampling or G < 1.
    """
    if num_gpus < 1:
        raise ProfileError(f"num_gpus must be >= 1, got {num_gpus}")
    profile = read_profile(bundled_profile_path(sampling), name=f"longhorn-{sampling}")
    if num_gpus <= profile.num_gpus:
        return profile.take(num_gpus)
    if (sampling, num_gpus) not in _WARNED:
        _WARNED.add((sampling, num_gpus))
        logger.warning(extension_notice(sampling, profile.num_gpus, num_gpus))
    return extend_profile(profile, num_gpus)


def extend_profile(profile: VariabilityProfile, num_gpus: int,
                   seed: int = EXTENSION_SEED) -> VariabilityProfile:
    """``profile``'s GPUs followed by GPUs copied as whole columns from it, drawn with replacement.

    Rule: with ``B = profile.num_gpus``, GPU ``g < B`` keeps its values and GPU ``g >= B`` takes
    all four class values of GPU ``idx[g - B]``, where
    ``idx = numpy.random.default_rng(seed).integers(0, B, size=num_gpus - B)``. Each GPU's
    classes stay together, the per-class distribution is the bundled one, and the draws are
    sequential, so two cluster sizes agree on the GPUs they share. Independent of
    ``PYTHONHASHSEED`` and of the episode seed.

    Args:
        profile: the base profile, perfvar float64 (4, B).
        num_gpus: G >= B.
        seed: generator seed (default :data:`EXTENSION_SEED`).

    Returns:
        The profile ``f"{profile.name}-extended"``, perfvar float64 (4, G) (``profile`` itself
        when G == B).

    Raises:
        ProfileError: if G < B.
    """
    base = profile.num_gpus
    if num_gpus < base:
        raise ProfileError(f"cannot extend a {base}-GPU profile to {num_gpus} GPUs",
                           path=profile.name)
    if num_gpus == base:
        return profile
    columns = np.random.default_rng(seed).integers(0, base, size=num_gpus - base)
    perfvar = np.concatenate([profile.perfvar, profile.perfvar[:, columns]], axis=1)
    return VariabilityProfile(f"{profile.name}-extended", perfvar)


def extension_notice(sampling: str, bundled_gpus: int, num_gpus: int) -> str:
    """The warning for a cluster larger than the bundled profile: the rule and how to pin one."""
    extra = num_gpus - bundled_gpus
    return (
        f"the bundled {sampling} profile covers {bundled_gpus} GPUs, the cluster has {num_gpus}: "
        f"GPUs {bundled_gpus}..{num_gpus - 1} ({extra}) copy whole bundled GPUs drawn with "
        f"numpy.random.default_rng({EXTENSION_SEED}) (palgym.bundled.extend_profile). To pin a "
        f"{num_gpus}-GPU profile instead: python -m traces model-profile --num-gpus {num_gpus} "
        f"--seed 0 --output profile-{num_gpus}.csv (or python -m traces profile "
        f"--variability-data DIR --num-gpus {num_gpus} --sampling {sampling} --output FILE), "
        f"then pass it with evaluate.py --profile profile-{num_gpus}.csv "
        f"(the envs: profile=FILE)"
    )
