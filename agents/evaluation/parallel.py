"""Run a sweep's episodes in a local process pool (``evaluate.py --workers N``) or as Ray tasks
(``evaluate.py --ray [ADDRESS]``); results come back in the serial order.

Both runners are :data:`palgym.sweep.Runner`\\ s: they take the sweep's
:class:`~palgym.sweep.EpisodeRun`\\ s (episodes are built, hashed and their slowdown factors
fitted in this process, as in a serial run), run each with :func:`palgym.sweep.run_one`
elsewhere and yield the results in the runs' order. A run's result depends on its episode,
factors and names only (the episode carries its random streams), so every output file is
byte-identical to the serial run's. A user's policy class a run names (registered in this
process, e.g. by ``--policy MODULE:CLASS``) is imported and registered in each worker by its
``MODULE:QUALNAME`` before the runs start (a class defined in ``__main__`` or in a function is
refused, naming it).

The pool starts its workers with ``spawn``, never ``fork``: a forked child of a process that
has started an OpenMP or numba thread pool can deadlock (see
:mod:`palgym.policies.slowdown`). Workers run heuristics only; learned agents (SB3 models)
run in the calling process (:func:`check_parallel_contenders` refuses them).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from palgym.bench.ray_tasks import import_ray, ray_session
from palgym.errors import ConfigError
from palgym.policies.durations import Durations
from palgym.policies.loader import load_origins, origins_of
from palgym.simulate import EpisodeResult
from palgym.sweep import EpisodeRun, Runner, run_one, serial_runner

POOL_START_METHOD = "spawn"
"""How pool workers start (``spawn``: no inherited thread pools; portable)."""


def _start_worker(origins: Sequence[str]) -> None:
    """Pool initializer: one BLAS / OpenMP thread per worker (the workers are the
    parallelism), and the user's policy classes the runs name imported and registered."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)
    load_origins(origins)


def user_origins(runs: Sequence[EpisodeRun]) -> tuple[str, ...]:
    """``MODULE:QUALNAME`` of every user class the runs name (what a worker imports to run
    them; :func:`palgym.policies.loader.origins_of`).

    Raises:
        ConfigError: for a class another process cannot import (naming it).
    """
    return origins_of([r.policy for r in runs], [r.queue_order for r in runs])


def pool_runner(workers: int) -> Runner:
    """A runner over a pool of ``workers`` local processes.

    Args:
        workers: processes (>= 1; at most as many as there are runs are started).

    Returns:
        The runner (it raises the first failed run's error, in run order, as the serial run
        would, and cancels the runs not started yet).

    Raises:
        ConfigError: if ``workers`` < 1.
    """
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")

    def run(runs: Sequence[EpisodeRun]) -> Iterator[EpisodeResult]:
        if not runs:
            return
        origins = user_origins(runs)
        context = multiprocessing.get_context(POOL_START_METHOD)
        with ProcessPoolExecutor(max_workers=min(workers, len(runs)), mp_context=context,
                                 initializer=_start_worker, initargs=(origins,)) as pool:
            futures: list[Future[EpisodeResult]] = [pool.submit(run_one, item)
                                                    for item in runs]
            try:
                for future in futures:
                    yield future.result()
            finally:
                for future in futures:
                    future.cancel()

    return run


def _ray_run(episode: Any, factors: Any, policy: str, queue_order: str,
             durations: Durations, origins: Sequence[str] = ()) -> EpisodeResult:
    """The Ray task body (Ray resolves ``episode`` / ``factors`` from the object store;
    ``origins``: the user's policy classes to import and register first)."""
    load_origins(origins)
    return run_one(EpisodeRun(episode, factors, policy, queue_order, durations))


def ray_runner(address: str | None = None) -> Runner:
    """A runner of Ray tasks, one task per run (one CPU each).

    Args:
        address: the cluster to join (``ray.init(address)``: ``auto``, ``ray://host:10001``,
            ``host:6379``); None or ``""``: a local Ray started here (``ray.init()``), stopped
            when the sweep ends. An already initialised Ray is used as it is.

    Returns:
        The runner. Each episode and its factors are put in the object store once, whatever
        the number of runs on them; results are fetched in run order.

    Raises:
        ConfigError: if ray is not installed (naming the extra;
            :mod:`palgym.bench.ray_tasks`, which starts or joins the cluster).
    """
    import_ray()  # the missing extra is said now, before any run

    def run(runs: Sequence[EpisodeRun]) -> Iterator[EpisodeResult]:
        if not runs:
            return
        origins = user_origins(runs)
        with ray_session(address) as ray:
            task = ray.remote(num_cpus=1)(_ray_run)
            stored: dict[int, tuple[Any, Any]] = {}
            refs = []
            for item in runs:
                key = id(item.episode)
                if key not in stored:
                    stored[key] = (ray.put(item.episode), ray.put(item.factors))
                refs.append(task.remote(*stored[key], item.policy, item.queue_order,
                                        item.durations, origins))
            for ref in refs:
                yield ray.get(ref)

    return run


def make_runner(workers: int | None, ray_address: str | None, episode_bars: bool = False
                ) -> Runner:
    """The runner that ``--workers`` / ``--ray`` choose (serial when neither is given).

    Args:
        workers: ``--workers`` (None: not given; 1 runs serially here).
        ray_address: ``--ray`` (None: not given; ``""``: a local Ray).
        episode_bars: the serial runner's per-episode progress bars (TTY only).

    Raises:
        ConfigError: for both options at once, ``workers`` < 1, or no ray installed.
    """
    if workers is not None and ray_address is not None:
        raise ConfigError("give --workers or --ray, not both")
    if ray_address is not None:
        return ray_runner(ray_address)
    if workers is not None:
        if workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {workers}")
        if workers > 1:
            return pool_runner(workers)
    return serial_runner(episode_bars)


def check_parallel_contenders(workers: int | None, ray_address: str | None,
                              agents: Sequence[str], heuristics_via: str) -> None:
    """Refuse ``--workers`` > 1 / ``--ray`` with contenders only the calling process runs.

    Raises:
        ConfigError: for learned agents (``--agent``) or ``--heuristics-via env``.
    """
    parallel = ray_address is not None or (workers is not None and workers > 1)
    if not parallel:
        return
    flag = "--ray" if ray_address is not None else f"--workers {workers}"
    if agents:
        raise ConfigError(
            f"{flag} runs heuristic contenders only (on the simulator); learned agents "
            f"(--agent {' '.join(agents)}) run in one process: drop {flag.split()[0]}, or "
            "evaluate the agents and the heuristics in separate commands")
    if heuristics_via != "simulator":
        raise ConfigError(f"{flag} runs heuristics on the simulator only: drop "
                          f"--heuristics-via {heuristics_via} or {flag.split()[0]}")
