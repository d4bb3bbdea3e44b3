"""Straggler migration: a job observed running much slower than its GPUs were profiled is
given a new GPU set, so that it starts a new run.

In the dynamic world (PAL_MODEL section 10) a job's speed is set by the slowest GPU of its set,
and each GPU's run factor is drawn when the job starts there: about 2% of runs are outliers
(2.49x slower), so a job of n GPUs starts on an outlier run with probability about
``1 - 0.979^n`` (40% for 24 GPUs) and keeps it until its set changes. A throttled GPU slows its
job for the episode's throttling rounds. The online belief sees such a job's slowdown after one
round, but PAL only leaves a GPU after the belief's next refit (at most every
``refit_interval_rounds``), and a job that PAL gives the same set keeps its run.

The rule (:func:`migrate_stragglers`), applied to the target of a factor-reading placement
(PAL, PM-First) when ``BeliefOptions.straggler_ratio`` is set: a job flagged by the belief
(its observed slowdown over the last whole round ``o > straggler_ratio x`` the largest profiled
value of its GPUs for its class, :class:`palgym.policies.belief.Belief`) that the target keeps
on exactly its current set has its GPU believed slowest swapped for another GPU: a free GPU
of the target before any GPU of another running job that is not flagged, then the lowest
belief for the straggler's class, then the lowest GPU id, such that neither the straggler nor
the job it swaps with comes to span nodes when it did not (no new locality penalty). Any
change of a job's set starts new runs on all its GPUs (``palgym/sim/truth.py``), so both jobs
of a swap draw new run factors. A straggler with no such GPU keeps its set.

PAL and PM-First rebuild their target from an empty cluster every round, so the next round
often gives the straggler its old set back, with new runs again: a migration acts as a
relaunch. Two variants tried while building this rule measured worse on the validation traces
of the ``dynamic-online`` world, and were not kept: keeping each swap while the placement
would undo it, and taking only GPUs believed faster than the one dropped.

The restart costs nothing where ``restart_cost_s`` is 0 (the ``dynamic`` preset); it is
straggler mitigation by relaunch, as in MapReduce's speculative execution (Dean & Ghemawat,
OSDI 2004), here by migration because a gang job cannot run twice.
"""

from __future__ import annotations

import numpy as np

from palgym.sim.types import FREE, FloatArray, IntArray
from palgym.sim.views import SimView


def flag_stragglers(jobs: IntArray, gpu_sets: list[IntArray], classes: IntArray,
                    observed: FloatArray, profiled: FloatArray, ratio: float) -> IntArray:
    """The jobs observed slower than ``ratio`` x their profiled slowdown.

    Args:
        jobs: int64 (K,), the jobs observed over the last whole round.
        gpu_sets: K int64 arrays, each job's GPUs in that round.
        classes: int64 (K,), their perf classes.
        observed: float64 (K,), their observed slowdowns (``palgym.policies.belief.
            observed_slowdowns``).
        profiled: float64 (C, G), the belief's values at t = 0 (the profiling run).
        ratio: the straggler ratio (> 1).

    Returns:
        int64 (S,), the flagged jobs, ascending.
    """
    if jobs.size == 0:
        return np.empty(0, np.int64)
    expected = np.array([profiled[c, gpus].max() for c, gpus in
                         zip(classes.tolist(), gpu_sets, strict=True)])
    return np.sort(jobs[observed > ratio * expected]).astype(np.int64)


def _spans(gpus: IntArray, node_of_gpu: IntArray) -> bool:
    nodes = node_of_gpu[gpus]
    return bool(nodes.size) and bool((nodes != nodes[0]).any())


def _replacement(target: IntArray, job: int, held: IntArray, drop: int, values: FloatArray,
                 flagged: set[int], node_of_gpu: IntArray) -> int | None:
    """The GPU that replaces ``drop`` in ``job``'s set ``held`` (the module's rule), or None."""
    keep = held[held != drop]
    spans = _spans(held, node_of_gpu)
    best: tuple[int, float, int] | None = None
    for gpu in np.flatnonzero(target != job).tolist():
        other = int(target[gpu])
        if other != FREE and other in flagged:
            continue
        if not spans and _spans(np.append(keep, gpu), node_of_gpu):
            continue
        if other != FREE:
            theirs = np.flatnonzero(target == other)
            if not _spans(theirs, node_of_gpu) and _spans(
                    np.append(theirs[theirs != gpu], drop), node_of_gpu):
                continue
        key = (int(other != FREE), float(values[gpu]), gpu)
        if best is None or key < best:
            best = key
    return None if best is None else best[2]


def migrate_stragglers(view: SimView, target: IntArray, stragglers: IntArray,
                       belief: FloatArray) -> tuple[IntArray, int]:
    """Apply the module's rule to a placement's ``target``.

    Args:
        view: the engine's view before the commit (``job_of_gpu``: the current sets).
        target: int64 (G,), the placement's target (not modified).
        stragglers: int64 (S,), the flagged jobs, ascending (handled in that order).
        belief: float64 (C, G), the belief's current values.

    Returns:
        The target with the swaps (a copy when one was made) and the number of stragglers
        migrated.
    """
    current = np.asarray(view.job_of_gpu)
    node_of_gpu = np.asarray(view.node_of_gpu)
    flagged = set(stragglers.tolist())
    migrated = 0
    for job in stragglers.tolist():
        held = np.flatnonzero(current == job)
        if held.size == 0 or not np.array_equal(np.flatnonzero(target == job), held):
            continue  # not running, or the placement already gives it a new set (new runs)
        values = belief[int(view.jobs.perf_class[job])]
        drop = int(held[np.argmax(values[held])])
        gpu = _replacement(target, job, held, drop, values, flagged, node_of_gpu)
        if gpu is None:
            continue
        if not migrated:
            target = np.array(target, dtype=np.int64, copy=True)
        target[drop], target[gpu] = target[gpu], job
        migrated += 1
    return target, migrated
