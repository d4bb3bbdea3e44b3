"""Env ids and run names."""

from __future__ import annotations

from palgym.errors import ConfigError


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


PALGYM_ENTRY_POINT = "palgym.envs.cluster_env:ClusterEnv"
PALGYM_ENTRY_POINTS: tuple[str, ...] = (PALGYM_ENTRY_POINT, "palgym.envs.selector:SelectorEnv")
"""palgym's envs: :class:`palgym.envs.cluster_env.ClusterEnv` and the selector over its
heuristics, :class:`palgym.envs.selector.SelectorEnv`."""


def palgym_env_ids() -> tuple[str, ...]:
    """The registered Gymnasium ids of palgym's envs (:data:`PALGYM_ENTRY_POINTS`), sorted."""
    from gymnasium.envs.registration import registry

    import palgym  # noqa: F401  (registers the ids)

    return tuple(sorted(key for key, spec in registry.items()
                        if spec.entry_point in PALGYM_ENTRY_POINTS))


def check_env_id(env_id: str, argument: str = "env id") -> str:
    """``env_id`` without its ``module:`` prefix, if it is one of :func:`palgym_env_ids`.

    Raises:
        ConfigError: naming ``argument``, the id and the known ids.
    """
    known = palgym_env_ids()
    key = canonical_env_id(env_id)
    if key not in known:
        raise ConfigError(f"{argument} {env_id!r} is not a palgym env: give one of "
                          f"{', '.join(known)}")
    return key
