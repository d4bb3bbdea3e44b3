"""Named regimes of the Sia-Philly-like generator and the trace collection they make.

A regime is a named :class:`~traces.knobs.Knobs`: a trace distribution (load, wide jobs,
burstiness, duration spread, grouped long wide jobs) under which a different queue order x
placement x backfill combination may win. :func:`write_regimes` writes, for every regime,
traces of each split at the split's **declared seeds** (:data:`SPLIT_FIRST_SEED`: train 1000..,
validation 2000.., test 3000..; disjoint, and the same seeds in every regime, so regimes differ
only in their knobs), and the trace-set manifests of :mod:`palgym.tracesets`:

- ``DIR/palgym-traceset.json``: every regime (``--trace-set DIR --split validation``);
- ``DIR/<regime>.json``: one regime (``--trace-set DIR/wide.json --split validation``).

A trace's id (its file stem) names its regime and seed, e.g. ``wide-2001``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from palgym.errors import ConfigError
from palgym.tracesets import MANIFEST_NAME, SPLITS, make_trace_set, write_manifest
from traces.generate import write_sia_philly_like
from traces.knobs import Knobs


@dataclass(frozen=True)
class Regime:
    """A named trace distribution.

    Attributes:
        name: id (lower case, ``-``-separated; the prefix of its traces' ids).
        knobs: its distribution shifts.
        why: what it stresses (one line).
    """

    name: str
    knobs: Knobs
    why: str


REGIMES: tuple[Regime, ...] = (
    Regime("base", Knobs(), "the fitted Sia-Philly mix (load ~11 on 64 GPUs)"),
    Regime("light", Knobs(load=0.25), "a quarter of the arrival rate: short queues"),
    Regime("heavy", Knobs(load=2.0), "twice the arrival rate: long queues"),
    Regime("wide", Knobs(wide_mean_gpus=12.0),
           "wider multi-GPU jobs (mean 12 GPUs; ~6.5 jobs of 24-48 GPUs per 160, base 3.5)"),
    Regime("bursty", Knobs(burst_ratio=50.0, burst_share=0.05, burst_length_s=3600.0),
           "1-hour bursts at 14.5x the mean rate, 5% of the time (gap CV 2.35)"),
    Regime("long-tail", Knobs(duration_spread=1.5),
           "log-duration spread x1.5 around the same medians"),
    Regime("wide-groups", Knobs(wide_groups=1),
           "3 long jobs of 24-48 GPUs (above their group's median) arriving within 20 minutes"),
)
"""The regimes (parameters in docs/TRACES.md, "Regimes")."""

SPLIT_FIRST_SEED: Mapping[str, int] = {"train": 1000, "validation": 2000, "test": 3000}
"""The declared seeds: split S uses seeds ``SPLIT_FIRST_SEED[S] + i``, i < its count."""

MAX_TRACES_PER_SPLIT: int = 1000
"""Seed blocks are 1000 apart, so no seed is in two splits."""

DEFAULT_COUNTS: Mapping[str, int] = {"train": 8, "validation": 6, "test": 4}
"""Traces per regime and split written by default."""


def regime(name: str) -> Regime:
    """The regime named ``name``.

    Raises:
        ConfigError: ``"--regime must be one of [...], got ..."``.
    """
    for item in REGIMES:
        if item.name == name:
            return item
    raise ConfigError(f"--regime must be one of {[r.name for r in REGIMES]}, got {name!r}")


def split_seeds(split: str, count: int) -> range:
    """The declared seeds of ``count`` traces of ``split``.

    Raises:
        ConfigError: naming ``--{split}`` for a count outside [0, MAX_TRACES_PER_SPLIT].
    """
    if not 0 <= count <= MAX_TRACES_PER_SPLIT:
        raise ConfigError(f"--{split} must be between 0 and {MAX_TRACES_PER_SPLIT}, "
                          f"got {count!r}")
    return range(SPLIT_FIRST_SEED[split], SPLIT_FIRST_SEED[split] + count)


def write_regimes(
    output_dir: str | Path, names: Sequence[str] | None = None,
    counts: Mapping[str, int] = DEFAULT_COUNTS, num_jobs: int = 160,
) -> list[Path]:
    """Write every regime's traces and the trace-set manifests (module docstring).

    Args:
        output_dir: destination folder (created; files are written atomically, overwriting).
        names: regimes to write (default: all of :data:`REGIMES`, in that order).
        counts: traces per regime for each of :data:`~palgym.tracesets.SPLITS` (missing: 0).
        num_jobs: J, jobs per trace.

    Returns:
        The manifests written: the combined one first, then one per regime.

    Raises:
        ConfigError: for an unknown regime or split, a repeated regime, a bad count or
            ``num_jobs``, or no trace at all.
        OSError: if a file cannot be written.
    """
    chosen = [regime(name) for name in (names or [r.name for r in REGIMES])]
    if len({r.name for r in chosen}) != len(chosen):
        raise ConfigError(f"--regime names a regime twice: {list(names or [])}")
    unknown = sorted(set(counts) - set(SPLITS))
    if unknown:
        raise ConfigError(f"unknown split(s) {unknown}; use {list(SPLITS)}")
    seeds = {split: split_seeds(split, counts.get(split, 0)) for split in SPLITS}
    if not any(seeds.values()):
        raise ConfigError("no traces to write: every split count is 0")
    root = Path(output_dir)
    files: dict[str, list[Path]] = {}
    splits: dict[str, dict[str, list[str]]] = {}
    for item in chosen:
        files[item.name], splits[item.name] = [], {split: [] for split in SPLITS}
        for split in SPLITS:
            for seed in seeds[split]:
                trace_id = f"{item.name}-{seed}"
                files[item.name].append(write_sia_philly_like(
                    root / f"{trace_id}.csv", num_jobs, seed, knobs=item.knobs,
                    note=f"regime: {item.name} ({split} seed)"))
                splits[item.name][split].append(trace_id)
    rule = _rule(counts, num_jobs)
    every = make_trace_set(
        "regimes", [f for item in chosen for f in files[item.name]],
        {s: [t for item in chosen for t in splits[item.name][s]] for s in SPLITS}, rule)
    written = [write_manifest(every, root / MANIFEST_NAME)]
    for item in chosen:
        one = make_trace_set(f"regimes-{item.name}", files[item.name], splits[item.name], rule)
        written.append(write_manifest(one, root / f"{item.name}.json"))
    return written


def _rule(counts: Mapping[str, int], num_jobs: int) -> str:
    declared = ", ".join(
        f"{split} seeds {SPLIT_FIRST_SEED[split]}..{SPLIT_FIRST_SEED[split] + counts[split] - 1}"
        for split in SPLITS if counts.get(split, 0) > 0)
    return (f"regime traces of {num_jobs} jobs, id <regime>-<seed>, by traces.regimes; "
            f"declared seeds per regime: {declared}")


def regime_table() -> str:
    """The regimes and their changed knobs, one line each (``python -m traces regimes
    --list``)."""
    lines = []
    width = max(len(item.name) for item in REGIMES)
    for item in REGIMES:
        knobs = item.knobs.flags().strip() or "(defaults)"
        lines.append(f"{item.name:<{width}} {knobs:<70} {item.why}")
    return "\n".join(lines)
