"""Loaders of public trace formats into the canonical schema (one module per format)."""

from traces.loaders.alibaba import load_alibaba
from traces.loaders.helios import load_helios
from traces.loaders.philly import load_philly
from traces.loaders.pollux import load_pollux
from traces.loaders.sia import load_sia

__all__ = ["load_alibaba", "load_helios", "load_philly", "load_pollux", "load_sia"]
