"""Variability measurements of any size -> a profile for a cluster of G GPUs.

Two inputs:

- a **runs table** (one row per measured run): a GPU identity column ``uuid`` and a ``perf``
  column that is a *time* (larger = slower); every other column is ignored. A run's normalised
  value is ``perf / median(perf of the file)``, a GPU's value the median of its runs (the TACC
  Longhorn files shipped with PAL have this layout);
- a **per-GPU table** in PAL's format ``GPU_ID,Node_ID,PerfVar_classA..PerfVar_classD`` (or
  palgym's ``gpu,perfvar_classA..D``), read with :func:`palgym.io.read_profile`.

The data set may have more or fewer GPUs than the simulated cluster: :func:`profile_for_cluster`
takes the first G, or resamples G GPUs (without replacement when the data set is large enough,
with replacement otherwise), or (:mod:`traces.variability_model`) draws from a fitted model.

Source: PAL artifact ``blox/cluster_state.py::_get_machine_slowdowns`` (normalisation by the file
median); Sinha et al., SC'22 (the Longhorn measurements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from palgym.errors import ConfigError, ProfileError
from palgym.sim.types import NUM_PERF_CLASSES, FloatArray
from palgym.sim.variability import VariabilityProfile
from traces.tabular import empty_mask, parse_numbers, read_table, require

CLUSTER_FIT_RULES: tuple[str, ...] = ("first", "resample")


@dataclass(frozen=True, eq=False)
class RunsTable:
    """Normalised runs of one measurement file.

    Attributes:
        path: the file.
        norm_runs: float64 (R,) ``perf / median(perf)`` in file order.
        gpu_ids: the U measured GPUs, in order of first appearance.
        gpu_medians: float64 (U,) median normalised run per GPU.
    """

    path: Path
    norm_runs: FloatArray
    gpu_ids: tuple[str, ...]
    gpu_medians: FloatArray


def load_runs_table(path: str | Path) -> RunsTable:
    """Read a runs table (``uuid`` + ``perf``; other columns ignored).

    Args:
        path: the CSV file.

    Returns:
        The normalised runs and per-GPU medians.

    Raises:
        ProfileError: naming file, line and field for a missing column, an empty ``uuid``, an
            empty / non-numeric / non-positive ``perf``, or a file without rows.
    """
    table = read_table(path, ("uuid", "perf"), ProfileError)
    if table.num_rows == 0:
        raise ProfileError("no measurement rows", path=table.path, line=2)
    perf = parse_numbers(table, "perf", error=ProfileError)
    require(table, "perf", perf > 0, "> 0", ProfileError)
    require(table, "uuid", ~empty_mask(table, "uuid"), "non-empty", ProfileError)
    with np.errstate(over="ignore"):
        norm = perf / np.median(perf)
    if not (np.isfinite(norm) & (norm > 0)).all():
        raise ProfileError("values too large to normalise by their median", path=table.path,
                           field="perf")
    frame = pd.DataFrame({"uuid": table.cells["uuid"], "norm": norm})
    medians = frame.groupby("uuid", sort=False)["norm"].median()
    return RunsTable(table.path, norm, tuple(str(u) for u in medians.index),
                     medians.to_numpy(dtype=np.float64))


def profile_from_runs(
    class_files: Sequence[str | Path], num_gpus: int, seed: int = 0, name: str | None = None,
) -> VariabilityProfile:
    """A G-GPU profile from one runs table per perf class (per-GPU medians, drawn per class).

    Args:
        class_files: 4 paths (class A..D; a file may repeat, e.g. BERT for B and C).
        num_gpus: G >= 1.
        seed: ``numpy.random.default_rng(seed)`` draws the GPUs (per class, in class order).
        name: profile id.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ConfigError: for a wrong number of files, G < 1 or a negative seed.
        ProfileError: for a bad file.

    Source: :func:`palgym.sim.variability.sample_gpu_medians` (palgym's default sampling).
    """
    from palgym.sim.variability import sample_gpu_medians

    if len(class_files) != NUM_PERF_CLASSES:
        raise ConfigError(f"need {NUM_PERF_CLASSES} class files, got {len(class_files)}")
    _check(num_gpus, seed)
    cache = {str(p): load_runs_table(p) for p in dict.fromkeys(str(p) for p in class_files)}
    medians = [cache[str(p)].gpu_medians for p in class_files]
    return sample_gpu_medians(medians, num_gpus, np.random.default_rng(seed),
                              name or f"runs-{num_gpus}-seed{seed}")


def profile_for_cluster(
    profile: VariabilityProfile, num_gpus: int, rule: str = "first", seed: int = 0,
) -> VariabilityProfile:
    """Fit a measured per-GPU profile of any size to a cluster of G GPUs.

    Args:
        profile: the measured profile (G_data GPUs).
        num_gpus: G >= 1.
        rule: ``"first"``: the first G GPUs (error if G_data < G); ``"resample"``: G whole GPUs
            (their four class values together) drawn by ``numpy.random.default_rng(seed)``,
            without replacement if G <= G_data, else with replacement.
        seed: >= 0.

    Returns:
        The profile, perfvar float64 (4, G).

    Raises:
        ConfigError: for an unknown rule, G < 1 or a negative seed.
        ProfileError: with ``"first"`` when the data set is smaller than the cluster.
    """
    _check(num_gpus, seed)
    if rule not in CLUSTER_FIT_RULES:
        raise ConfigError(f"rule must be one of {', '.join(CLUSTER_FIT_RULES)}, got {rule!r}")
    if rule == "first":
        return profile.take(num_gpus)
    rng = np.random.default_rng(seed)
    picks = rng.choice(profile.num_gpus, size=num_gpus, replace=num_gpus > profile.num_gpus)
    return VariabilityProfile(f"{profile.name}-resample{num_gpus}-seed{seed}",
                              profile.perfvar[:, picks].copy())


def _check(num_gpus: int, seed: int) -> None:
    if num_gpus < 1:
        raise ConfigError(f"num_gpus must be >= 1, got {num_gpus}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
