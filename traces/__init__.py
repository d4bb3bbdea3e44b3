"""Trace and profile tooling around palgym (layer L5: palgym's public API, pandas allowed).

- :mod:`traces.schema`, :mod:`traces.canonical_io`, :mod:`traces.convert`: the canonical job
  schema, its CSV / Parquet files with a content hash, and conversion to palgym's Trace.
- :mod:`traces.formats`: :func:`load_trace` / :func:`load_canonical` / :func:`detect_format` for
  every supported format (:data:`TRACE_FORMATS`); one module per format in :mod:`traces.loaders`.
- :mod:`traces.windows`, :mod:`traces.describe`: episodes from long traces, summary statistics.
- :mod:`traces.generate` (Sia-Philly-like, the bundled set), :mod:`traces.synthetic`
  (Philly-calibrated Poisson, Gavel-style): seeded generators; :mod:`traces.knobs` (load, wide
  jobs, bursty arrivals from :mod:`traces.arrivals`, duration spread) shift the Sia-Philly-like
  one, and :mod:`traces.regimes` names trace distributions and writes their train / validation
  / test collection.
- :mod:`traces.profiles`, :mod:`traces.variability_io`, :mod:`traces.variability_model`,
  :mod:`traces.drift`: variability profiles from measurements of any size, a fitted generative
  model, and per-round drift.
- :mod:`traces.bundle`: the files bundled in ``palgym/data`` and how to regenerate them.

Command line: ``python -m traces {convert,describe,split,generate,regimes,bundle,profile,
model-profile} --help``.
"""

from traces.bundle import BUNDLED_PROFILES, BUNDLED_TRACES, default_data_dir, write_bundle
from traces.canonical_io import read_canonical, write_canonical
from traces.convert import to_seconds, to_trace
from traces.describe import describe
from traces.formats import TRACE_FORMATS, detect_format, load_canonical, load_trace
from traces.generate import (
    SiaTraceTable,
    generate_command,
    generate_sia_philly_like,
    write_sia_philly_like,
)
from traces.knobs import NO_KNOBS, Knobs
from traces.profiles import (
    ProfileSampling,
    build_longhorn_profile,
    profile_command,
    write_longhorn_profile,
)
from traces.regimes import REGIMES, Regime, write_regimes
from traces.schema import CanonicalTrace, make_canonical
from traces.sia_philly_fit import SIA_PHILLY, SiaPhillyParams
from traces.synthetic import generate_gavel, generate_philly_poisson
from traces.windows import make_windows

__all__ = [
    "BUNDLED_PROFILES",
    "BUNDLED_TRACES",
    "NO_KNOBS",
    "REGIMES",
    "SIA_PHILLY",
    "TRACE_FORMATS",
    "CanonicalTrace",
    "Knobs",
    "ProfileSampling",
    "Regime",
    "SiaPhillyParams",
    "SiaTraceTable",
    "build_longhorn_profile",
    "default_data_dir",
    "describe",
    "detect_format",
    "generate_command",
    "generate_gavel",
    "generate_philly_poisson",
    "generate_sia_philly_like",
    "load_canonical",
    "load_trace",
    "make_canonical",
    "make_windows",
    "profile_command",
    "read_canonical",
    "to_seconds",
    "to_trace",
    "write_bundle",
    "write_canonical",
    "write_longhorn_profile",
    "write_regimes",
    "write_sia_philly_like",
]
