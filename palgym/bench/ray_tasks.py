"""Ray, the optional ``ray`` extra, for every ``--ray [ADDRESS]`` of palgym: the one place that
imports it and starts or joins a cluster (``evaluate.py --ray``, ``agents.evaluation.parallel``;
``python -m palgym.bench run --ray``, ``agents.bench.runner`` and
:mod:`palgym.bench.reference_entry`).

``ADDRESS`` is what ``ray.init(address)`` takes (``auto``, ``ray://host:10001``,
``host:6379``); ``""`` (or None) starts a local Ray for the run, whose workers get this
process's ``PYTHONPATH`` and one OpenMP thread (:func:`local_worker_env`), and stops it when the
run ends. An already initialised Ray is used as it is and left running. Ray is imported lazily:
``import palgym`` never imports it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from palgym.errors import ConfigError

RAY_EXTRA_HINT = "pip install -e '.[ray]'"
"""How to install the optional ``ray`` extra."""


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        ConfigError: naming the ``ray`` extra when ray is not installed.
    """
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"--ray needs the optional 'ray' extra ({exc}): "
                          f"{RAY_EXTRA_HINT}") from None
    return ray


def local_worker_env() -> dict[str, str]:
    """Environment of a local Ray's workers: this process's ``PYTHONPATH`` (so that they
    import the same palgym) and one OpenMP thread. (A cluster's nodes have their own
    installation, docs/SCALE.md "Parallel sweeps".)"""
    env = {"OMP_NUM_THREADS": "1"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@contextmanager
def ray_session(address: str | None) -> Iterator[Any]:
    """The ``ray`` module, initialised for ``address`` (module docstring) while the block runs.

    Raises:
        ConfigError: if ray is not installed (naming the extra).
    """
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address or None, include_dashboard=False, logging_level="WARNING",
                 log_to_driver=False,
                 runtime_env=None if address else {"env_vars": local_worker_env()})
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def ray_map(function: Callable[..., Any], calls: Sequence[tuple[Any, ...]],
            address: str | None) -> Generator[Any, None, None]:
    """``function(*args)`` for each ``args`` of ``calls`` as Ray tasks (one CPU each), all
    submitted at once; yields the results in ``calls``' order (the first failed task's error
    is raised when its turn comes, as the serial loop would raise it). A local Ray started
    for the calls stops when the generator is exhausted or closed.

    Raises:
        ConfigError: if ray is not installed (naming the extra), before any task is submitted.
    """
    with ray_session(address) as ray:
        task = ray.remote(num_cpus=1)(function)
        refs = [task.remote(*args) for args in calls]
        for ref in refs:
            yield ray.get(ref)


__all__ = ["RAY_EXTRA_HINT", "import_ray", "local_worker_env", "ray_map", "ray_session"]
