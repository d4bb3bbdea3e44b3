"""Trace and profile tooling around palgym (layer L5: palgym's public API, pandas allowed).

- :mod:`traces.generate`: a seeded Sia-Philly-like trace generator fitted to the published
  statistics of PAL's Sia-Philly workloads.
- :mod:`traces.profiles`: variability profiles from the TACC Longhorn measurements.
- :mod:`traces.bundle`: the files bundled in ``palgym/data`` and how to regenerate them.

Command line: ``python -m traces {generate,bundle,profile} --help``.
"""

from traces.bundle import BUNDLED_PROFILES, BUNDLED_TRACES, default_data_dir, write_bundle
from traces.generate import (
    SiaTraceTable,
    generate_command,
    generate_sia_philly_like,
    write_sia_philly_like,
)
from traces.profiles import (
    ProfileSampling,
    build_longhorn_profile,
    profile_command,
    write_longhorn_profile,
)
from traces.sia_philly_fit import SIA_PHILLY, SiaPhillyParams

__all__ = [
    "BUNDLED_PROFILES",
    "BUNDLED_TRACES",
    "SIA_PHILLY",
    "ProfileSampling",
    "SiaPhillyParams",
    "SiaTraceTable",
    "build_longhorn_profile",
    "default_data_dir",
    "generate_command",
    "generate_sia_philly_like",
    "profile_command",
    "write_bundle",
    "write_longhorn_profile",
    "write_sia_philly_like",
]
