"""palgym's envs for RLlib (its new API stack's masked-action convention):
:class:`RLlibActionMaskEnv` and :func:`make_rllib_env` (:mod:`agents.rllib.env`). Ray loads
on first use."""

from __future__ import annotations

from agents.lazy import lazy_getattr

_LAZY = {
    "RLlibActionMaskEnv": "agents.rllib.env",
    "make_rllib_env": "agents.rllib.env",
}

__getattr__ = lazy_getattr(__name__, _LAZY)
__all__ = sorted(_LAZY)
