"""Env ids and run names."""

from __future__ import annotations


def canonical_env_id(env_id: str) -> str:
    """The id without a ``module:`` prefix (``palgym:palgym/X-v0`` -> ``palgym/X-v0``)."""
    return env_id.split(":", 1)[1] if ":" in env_id else env_id


def gym_id(env_id: str) -> str:
    """``env_id`` with the ``palgym:`` import prefix unless it already names a module.

    ``gym.make("palgym:palgym/PALPlacement-v0")`` imports palgym first (which registers the
    ids), so it also works in a freshly started worker process.
    """
    return env_id if ":" in env_id else f"palgym:{env_id}"


def run_name(env_id: str, algo: str, seed: int) -> str:
    """Run folder name ``<env id with / as _>_<algo>_<seed>``."""
    return f"{canonical_env_id(env_id).replace('/', '_')}_{algo}_{seed}"
