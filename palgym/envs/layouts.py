"""Versioned env layouts: a hash of what an agent sees of an env id, and the committed table.

An env's *layout* is everything a trained model depends on besides the dynamics: the task, the
action space and the kind of every candidate (:meth:`palgym.envs.actions.ActionCodec
.candidate_kinds`), and for every observation key its space (dtype, shape, bounds), logical
shape and entry names (:attr:`ClusterEnv.feature_names`), plus the features' normalisation
constants (:mod:`palgym.envs.features`). :func:`layout_text` writes it as canonical text (no
Python ``hash``, no set order: the same bytes in every process) and :func:`layout_hash` is the
first 16 hex digits of its SHA-256.

The layout depends on the env id (its task) and on :data:`LAYOUT_ARGUMENTS` only (the
selector env: :data:`SELECTOR_LAYOUT_ARGUMENTS`; ``tests/test_env_layouts.py`` checks that the
other arguments leave it unchanged), so :func:`env_layout` builds the env from those alone.
:data:`ENV_LAYOUTS` is the committed table: for every env id, the hash of each argument set of
its probes (:func:`layout_probes`: the defaults, and each layout argument changed); the test
fails when the code computes another, since an env id's layout must not change under a model
trained on it: bump the id's ``-vN`` and add a line to docs/ENV.md "Version history".
``train.py`` records the hash in a run's ``config.yml`` (``env_layout``) and a model is refused
on an env of another layout (:mod:`agents.sb3.layouts`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from palgym.envs import features

LAYOUT_FORMAT = 1
"""Version of :func:`layout_text`'s format (its first line)."""

LAYOUT_ARGUMENTS: tuple[str, ...] = ("num_slots", "max_tiers", "cluster", "observed_rates",
                                     "max_gpus_per_node", "work_conserving")
"""The env arguments that change the layout: K, T, the cluster (G GPUs, G_n per node: the
``cluster`` and ``gpus`` keys), the ``gpus`` key itself, the node histogram's room
(``max_gpus_per_node``: with it, the ``cluster`` key no longer depends on G_n) and the
scheduling task's RESERVE action (``work_conserving``: ``Discrete(K * M + 2)``)."""
SELECTOR_LAYOUT_ARGUMENTS: tuple[str, ...] = ("rules", "num_slots")
"""The selector env's (:mod:`palgym.envs.selector`) layout arguments: its field (H and the
rule names) and K (the scale of the window features); its observation does not depend on the
cluster or the tiers."""

LAYOUT_PROBES: dict[str, dict[str, Any]] = {
    "default": {},
    "num_slots=3": {"num_slots": 3},
    "max_tiers=2": {"max_tiers": 2},
    "cluster=2x8": {"cluster": "2x8"},
    "observed_rates": {"observed_rates": True},
    "max_gpus_per_node=8": {"max_gpus_per_node": 8},
}
"""Argument sets whose layouts the committed table records per env id: the defaults (what a
model trained with the defaults records) and each :data:`LAYOUT_ARGUMENTS` entry changed alone,
so a change in how any of them shapes the layout is seen."""

SCHEDULING_LAYOUT_PROBES: dict[str, dict[str, Any]] = {
    **LAYOUT_PROBES, "work_conserving": {"work_conserving": True},
}
"""The scheduling ids' probes: :data:`LAYOUT_PROBES` and ``work_conserving`` (an argument
of the scheduling task only)."""

SELECTOR_LAYOUT_PROBES: dict[str, dict[str, Any]] = {
    "default": {},
    "rules=pal,pal+easy": {"rules": ["pal", "pal+easy"]},
    "num_slots=3,rules=pal,pm-first": {"num_slots": 3, "rules": ["pal", "pm-first"]},
}
"""The selector env's probes: the defaults, another field, and K changed (a field without
backfilling: a backfilling rule needs K = 16)."""
SELECTOR_ENTRY_POINT = "palgym.envs.selector:SelectorEnv"
"""The selector env's registered entry point."""

SCALES: tuple[str, ...] = ("TIME_HORIZON_S", "SLOWDOWN_MAX", "LOCALITY_MAX",
                           "OBSERVED_AGE_ROUNDS")
"""The normalisation constants of :mod:`palgym.envs.features` (a change rescales features)."""

ENV_LAYOUTS: dict[str, dict[str, str]] = {
    "palgym/PALPlacement-v0": {
        "default": "6e60869fa7d52cec",
        "num_slots=3": "a66602e80ec930cd",
        "max_tiers=2": "be5eff0554c64f3f",
        "cluster=2x8": "43becf80234911fb",
        "observed_rates": "270157e8512ee902",
        "max_gpus_per_node=8": "43becf80234911fb",
    },
    "palgym/PALScheduling-v0": {
        "default": "987287fecf66ecfa",
        "num_slots=3": "5bfc01d21c59b4c3",
        "max_tiers=2": "219c432ddb4b299a",
        "cluster=2x8": "8f9fd2b697f2b186",
        "observed_rates": "cd7e55b4e97f75f4",
        "max_gpus_per_node=8": "8f9fd2b697f2b186",
        "work_conserving": "a72d32b787c42703",
    },
    "palgym/PALPlacement-v1": {
        "default": "68dc0a6e9be336f4",
        "num_slots=3": "6bb97d709236cf25",
        "max_tiers=2": "57845174fbe180ad",
        "cluster=2x8": "68dc0a6e9be336f4",
        "observed_rates": "a0ce32ed8016ad55",
        "max_gpus_per_node=8": "53e607af6c15d9f7",
    },
    "palgym/PALScheduling-v1": {
        "default": "00c8ddf073790601",
        "num_slots=3": "188f021113f91421",
        "max_tiers=2": "4d6efb1227a2e09d",
        "cluster=2x8": "00c8ddf073790601",
        "observed_rates": "3213981c3488431b",
        "max_gpus_per_node=8": "acbabad645e0cc0c",
        "work_conserving": "883fdcefec45c120",
    },
    "palgym/PALSelector-v0": {
        "default": "e8a294bef1eba79c",
        "rules=pal,pal+easy": "9a7e946ee8700472",
        "num_slots=3,rules=pal,pm-first": "75426e9ea51da531",
    },
}
"""Committed layout hashes: env id -> probe name (:data:`LAYOUT_PROBES`) -> :func:`layout_hash`.
An id's entries never change; a new layout gets a new id (and its line in docs/ENV.md
"Version history")."""


def _bounds(values: np.ndarray) -> str:
    """A Box bound: the value when uniform, else the SHA-256 of its bytes."""
    flat = np.asarray(values).ravel()
    if flat.size and np.all(flat == flat[0]):
        return repr(float(flat[0]))
    return "sha256:" + hashlib.sha256(np.ascontiguousarray(flat).tobytes()).hexdigest()


def _space_line(space: spaces.Space[Any]) -> str:
    """One space in canonical text (Box: dtype, shape, bounds; Discrete: n and start)."""
    if isinstance(space, spaces.Box):
        return (f"Box dtype={space.dtype.name} shape={tuple(space.shape)} "
                f"low={_bounds(space.low)} high={_bounds(space.high)}")
    if isinstance(space, spaces.Discrete):
        return f"Discrete n={int(space.n)} start={int(space.start)}"
    raise TypeError(f"no canonical text for a {type(space).__name__} space")


def layout_text(env: Any) -> str:
    """The canonical text of a palgym env's layout (see the module docstring).

    Args:
        env: a :class:`~palgym.envs.cluster_env.ClusterEnv` or a
            :class:`~palgym.envs.selector.SelectorEnv` (its ``layout_header`` gives the task
            lines; wrappers are unwrapped).

    Returns:
        Lines of text (``\\n``-separated, ending with one), the same in every process.

    Raises:
        TypeError: an observation or action space of a kind it cannot write.
    """
    env = env.unwrapped
    names, shapes = env.feature_names, env.observation_shapes
    header = getattr(env, "layout_header", None)  # the selector env's own task lines
    lines = [f"palgym env layout {LAYOUT_FORMAT}", *(header() if header is not None else [
        f"task {env.task}",
        f"action {_space_line(env.action_space)} end_round={env.codec.END_ROUND}"
        + (f" reserve={env.codec.RESERVE}" if env.codec.reserve else ""),
        "candidates " + " ".join(env.codec.candidate_kinds())])]
    for key, space in env.observation_space.spaces.items():
        lines.append(f"observation {key} {_space_line(space)} logical={tuple(shapes[key])}")
        lines.append(f"names {key} " + " ".join(names[key]))
    lines.append("scales " + " ".join(f"{name}={getattr(features, name)!r}" for name in SCALES))
    return "\n".join(lines) + "\n"


def layout_hash(env: Any) -> str:
    """The first 16 hex digits of the SHA-256 of :func:`layout_text` (UTF-8)."""
    return hashlib.sha256(layout_text(env).encode("utf-8")).hexdigest()[:16]


def env_layout(env_id: str, kwargs: Mapping[str, Any] | None = None) -> str:
    """The :func:`layout_hash` of registered ``env_id`` built with the
    :data:`LAYOUT_ARGUMENTS` among ``kwargs`` (the others do not change it; the trace is the
    registered default, so no data is read).

    Args:
        env_id: a registered palgym id (e.g. ``"palgym/PALPlacement-v0"``).
        kwargs: env kwargs (e.g. a run's ``env_kwargs``); None: the defaults.

    Raises:
        gymnasium.error.Error: ``env_id`` is not registered.
        palgym.errors.ConfigError: a layout argument is invalid (as the env raises it).
    """
    arguments = layout_arguments(env_id)
    chosen = {k: v for k, v in dict(kwargs or {}).items() if k in arguments}
    # a window: a whole trace is checked against the cluster at construction, a window at
    # reset (never here); the window does not change the layout
    env = gym.make(env_id, disable_env_checker=True, window=8, **chosen)
    try:
        return layout_hash(env)
    finally:
        env.close()


def is_selector(env_id: str) -> bool:
    """Whether ``env_id`` (a ``module:`` prefix allowed) is registered as the selector env
    (False for an id not registered: the caller's own check names it)."""
    spec = gym.registry.get(env_id.split(":", 1)[-1])
    return spec is not None and spec.entry_point == SELECTOR_ENTRY_POINT


def layout_arguments(env_id: str) -> tuple[str, ...]:
    """The arguments that change ``env_id``'s layout: :data:`SELECTOR_LAYOUT_ARGUMENTS` for
    the selector env, else :data:`LAYOUT_ARGUMENTS`."""
    return SELECTOR_LAYOUT_ARGUMENTS if is_selector(env_id) else LAYOUT_ARGUMENTS


def layout_probes(env_id: str) -> dict[str, dict[str, Any]]:
    """The probes :data:`ENV_LAYOUTS` records for ``env_id`` (:data:`SELECTOR_LAYOUT_PROBES`
    for the selector env, :data:`SCHEDULING_LAYOUT_PROBES` for a scheduling id, else
    :data:`LAYOUT_PROBES`)."""
    if is_selector(env_id):
        return SELECTOR_LAYOUT_PROBES
    spec = gym.registry.get(env_id.split(":", 1)[-1])
    task = None if spec is None else spec.kwargs.get("task")
    return SCHEDULING_LAYOUT_PROBES if task == "scheduling" else LAYOUT_PROBES


def probe_layouts(env_id: str) -> dict[str, str]:
    """:func:`env_layout` of ``env_id`` for every :func:`layout_probes` entry (what
    :data:`ENV_LAYOUTS` records)."""
    return {probe: env_layout(env_id, kwargs) for probe, kwargs in layout_probes(env_id).items()}
