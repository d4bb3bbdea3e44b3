"""Compiled (numba) kernels of the env's observation: one call per decision fills the
candidate buffers (:func:`palgym.envs.kernel.window_candidates`) and all three observation
arrays, so that the per-decision work in Python is a handful of calls.

The reference implementation is :func:`palgym.envs.decide.decide_numpy`; the compiled one,
:func:`palgym.envs.decide.decide_numba`, calls :func:`decision`. ``tests/test_env_kernel.py``
checks that both give equal decisions. Feature columns come from the tables of
:mod:`palgym.envs.features` (global named tuples: compile-time constants).
"""

from __future__ import annotations

import numpy as np

from palgym.envs.features import CANDIDATE, JOB, LOCALITY_MAX, SLOWDOWN_MAX
from palgym.envs.kernel import njit, window_candidates


@njit(cache=True, nogil=True)
def keeps_gpus(job_of_gpu, jobs, shape_of_slot, shape_gpus, sets, feasible, out):  # type: ignore[no-untyped-def]
    """Fill float32 (>= K', M) ``out``: 1 where candidate m of slot k is exactly the GPUs
    job k holds now.

    Args:
        job_of_gpu: int64 (G,) the engine's allocation (-1 free). jobs: int64 (K',) window jobs.
        shape_of_slot, shape_gpus, sets, feasible: as filled by :func:`window_candidates`.
    """
    num_slots = jobs.size
    out[:num_slots] = 0.0
    for k in range(num_slots):
        held = 0
        for g in range(job_of_gpu.size):
            if job_of_gpu[g] == jobs[k]:
                held += 1
        s = shape_of_slot[k]
        if held == 0 or held != shape_gpus[s]:
            continue
        for m in range(sets.shape[1]):
            if not feasible[s, m]:
                continue
            same = True
            for i in range(held):
                if job_of_gpu[sets[s, m, i]] != jobs[k]:
                    same = False
                    break
            out[k, m] = 1.0 if same else 0.0


@njit(cache=True, nogil=True)
def _features(gpus, num_gpus, sf_c, best_tier, gpus_per_node, lf, larger_rule, row):  # type: ignore[no-untyped-def]
    """The set's features of one candidate (:class:`palgym.envs.features.CandidateFeatures`,
    all but the per-slot ``keeps_gpus``) into float32 ``row`` (F_c,)."""
    worst = 0.0
    on_best = 0
    for i in range(num_gpus):
        value = sf_c[gpus[i]]
        worst = max(worst, value)
        if value <= best_tier:
            on_best += 1
    spans = gpus[0] // gpus_per_node != gpus[num_gpus - 1] // gpus_per_node
    pays = num_gpus > gpus_per_node if larger_rule else spans
    locality = lf if pays else 1.0
    row[CANDIDATE.feasible] = 1.0
    row[CANDIDATE.max_slowdown] = min(worst / SLOWDOWN_MAX, 1.0)
    row[CANDIDATE.spans_nodes] = 1.0 if spans else 0.0
    row[CANDIDATE.locality_penalty] = min((locality - 1.0) / (LOCALITY_MAX - 1.0), 1.0)
    row[CANDIDATE.predicted_speed] = min(0.5 / (worst * locality), 1.0)
    row[CANDIDATE.best_tier_frac] = on_best / num_gpus


@njit(cache=True, nogil=True)
def candidate_features(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    jobs, perf_class, sf, tiers, gpus_per_node, lf_by_class, larger_rule, best0, packed, random,
    shape_of_slot, shape_gpus, num_shapes, sets, feasible, features,
):
    """Fill float32 (>= S, M, F_c) ``features`` of every shape's candidates (as written by
    :func:`palgym.envs.kernel.window_candidates`); ``keeps_gpus`` is left 0 (it is per slot).

    Args:
        jobs: int64 (K',) window jobs. perf_class: the job table's column.
        sf: float64 (C, G). tiers: float64 (C, T). gpus_per_node: G_n.
        lf_by_class: float64 (C,) locality penalty. larger_rule: the penalty is paid by jobs
            larger than a node (else by sets spanning nodes).
        best0, packed: the indices of the tier-0 best-factor and of the Packed candidate: the
            feasible best-factor candidates all hold the same set
            (:func:`palgym.envs.kernel.window_candidates`), whose features are computed once.
        random: the Random candidate's index (its set is drawn when taken).
        shape_of_slot, shape_gpus, num_shapes, sets, feasible: the candidate kernel's output.
    """
    features[:num_shapes] = 0.0
    seen = 0
    for k in range(jobs.size):
        s = shape_of_slot[k]
        if s < seen:  # shapes are numbered in order of first slot
            continue
        seen += 1
        c = perf_class[jobs[k]]
        for m in range(random):
            if not feasible[s, m]:
                continue
            if best0 < m < packed and feasible[s, m - 1]:  # the previous tier's set
                features[s, m] = features[s, m - 1]
            else:
                _features(sets[s, m], shape_gpus[s], sf[c], tiers[c, 0], gpus_per_node,
                          lf_by_class[c], larger_rule, features[s, m])
        features[s, random, CANDIDATE.feasible] = 1.0 if feasible[s, random] else 0.0


@njit(cache=True, nogil=True)
def cluster_summary(free, rank, max_tiers, gpus_per_node, row):  # type: ignore[no-untyped-def]
    """Fill the float32 ``row`` (zero on entry) but its last three entries: free GPUs per
    (class, tier) / G (its first C T entries), the per-node free-count histogram / N_n (the
    next G_n + 1; a histogram padded past G_n keeps its zeros) and the free fraction (entry
    -4) (see :meth:`palgym.envs.observations.ObservationBuilder.cluster_feature_names`)."""
    num_classes = rank.shape[0]
    num_gpus = free.size
    num_nodes = num_gpus // gpus_per_node
    tier_counts = np.zeros((num_classes, max_tiers), np.int64)
    histogram = np.zeros(gpus_per_node + 1, np.int64)
    num_free = 0
    for node in range(num_nodes):
        count = 0
        for g in range(node * gpus_per_node, (node + 1) * gpus_per_node):
            if free[g]:
                count += 1
                for c in range(num_classes):
                    tier_counts[c, rank[c, g]] += 1
        histogram[count] += 1
        num_free += count
    i = 0
    for c in range(num_classes):
        for t in range(max_tiers):
            row[i] = tier_counts[c, t] / num_gpus
            i += 1
    for n in range(gpus_per_node + 1):
        row[i] = histogram[n] / num_nodes
        i += 1
    row[row.size - 4] = num_free / num_gpus


@njit(cache=True, nogil=True)
def _log_time(seconds, log_horizon):  # type: ignore[no-untyped-def]
    return min(max(np.log1p(max(seconds, 0.0)) / log_horizon, 0.0), 1.0)


@njit(cache=True, nogil=True)
def job_rows(  # type: ignore[no-untyped-def]  # noqa: PLR0913
    jobs, num_gpus, perf_class, iteration_time_s, total_iterations, iterations_done,
    submit_time_s, attained_service_s, status, now_s, total_gpus, running, sticky,
    log_horizon, remaining_known, out,
):
    """Fill the rows of the window's jobs in float32 (K, F_j) ``out`` (see
    :class:`palgym.envs.features.JobFeatures`; the queue position is k / K);
    ``running`` is the RUNNING status code and ``log_horizon`` = log1p(TIME_HORIZON_S).
    ``total_iterations`` is the scheduler's view (:mod:`palgym.policies.durations`); with
    ``remaining_known`` False the remaining-time column is left 0 (durations unknown)."""
    for k in range(jobs.size):
        j = jobs[k]
        out[k, JOB.present] = 1.0
        out[k, JOB.selectable] = 0.0 if sticky and k > 0 else 1.0
        out[k, JOB.num_gpus_frac] = min(num_gpus[j] / total_gpus, 1.0)
        out[k, JOB.class_A + perf_class[j]] = 1.0
        if remaining_known:
            remaining = iteration_time_s[j] * max(total_iterations[j] - iterations_done[j], 0.0)
            out[k, JOB.log_remaining_ideal_time] = _log_time(remaining, log_horizon)
        out[k, JOB.log_waiting_time] = _log_time(now_s - submit_time_s[j], log_horizon)
        out[k, JOB.log_attained_service] = _log_time(attained_service_s[j], log_horizon)
        out[k, JOB.was_running] = 1.0 if status[j] == running else 0.0
        out[k, JOB.queue_position] = k / out.shape[0]


@njit(cache=True, nogil=True)
def decision(  # type: ignore[no-untyped-def]
    free, job_of_gpu, columns, tables, index, buffers, constants, jobs, pending_frac, obs, mask,
):
    """Everything one decision needs, in one call.

    Fills the candidate buffers (as :func:`palgym.envs.kernel.window_candidates`,
    :func:`candidate_features` and :func:`keeps_gpus`), the observation ``obs``, float32
    (K x F_j + K x M x F_c + F_k,): the ``jobs`` (K, F_j), ``candidates`` (K, M, F_c) and
    ``cluster`` (F_k,) keys one after the other (K = (mask.size - 1) / M), and the action mask
    ``mask`` bool (K * M + 1,), both zero on entry. In a work-conserving env the caller passes
    the buffer without the ``cluster`` row's trailing reservation entries and fills those
    itself (:meth:`palgym.envs.observations.ObservationBuilder.reservation_features`).

    The mask is :func:`palgym.envs.decide.action_mask`: the selectable slots' feasibility, and
    "end round" when the task is scheduling or nothing else is valid. (In the placement task a
    decision is open only while some pending job fits, and a fitting job of a selectable slot
    always has its Random candidate, so "no pending job fits" adds nothing.)

    The arguments up to ``constants`` are constant during a round (the engine moves only
    between rounds; ``free`` is the round's array, changed in place by its placements), the
    last four change with every decision.

    Args:
        free: bool (G,). job_of_gpu: int64 (G,).
        columns: :class:`palgym.envs.kernel_args.JobColumns`, the job table's columns.
        tables: :class:`~palgym.envs.kernel_args.TableArgs`, the episode tables.
        index: :class:`~palgym.envs.kernel_args.CandidateIndex`: the codec's candidate
            indices and M; action k * M + m is slot k's candidate m and the last action ends
            the round.
        buffers: :class:`~palgym.envs.kernel_args.BufferArgs`, the kernel buffers (out).
        constants: :class:`~palgym.envs.kernel_args.RoundArgs`, the round's constants.
        jobs: int64 (K',) window jobs. pending_frac: the cluster feature pending / K.
        obs, mask: out, as above.

    Returns:
        S, the number of window shapes.
    """
    perf_class, num_gpus = columns.perf_class, columns.num_gpus
    sf, rank, tiers = tables.sf, tables.rank, tables.tiers
    max_tiers, gpus_per_node = tables.max_tiers, tables.gpus_per_node
    best0, packed, random = index.best0, index.packed, index.random
    num_candidates = index.num_candidates
    shape_of_slot, shape_gpus, sets = buffers.shape_of_slot, buffers.shape_gpus, buffers.sets
    feasible, features, keeps = buffers.feasible, buffers.features, buffers.keeps
    sticky = constants.sticky
    num_slots = (mask.size - 1) // num_candidates
    jobs_end = num_slots * len(JOB)
    candidates_end = jobs_end + num_slots * num_candidates * len(CANDIDATE)
    obs_jobs = obs[:jobs_end].reshape((num_slots, len(JOB)))
    obs_candidates = obs[jobs_end:candidates_end].reshape((num_slots, num_candidates,
                                                           len(CANDIDATE)))
    obs_cluster = obs[candidates_end:]
    num_shapes = window_candidates(
        free, jobs, perf_class, num_gpus, sf, rank, tables.labels, tiers, tables.num_tiers,
        max_tiers, gpus_per_node, tables.strict_total, best0, packed, random,
        shape_of_slot, shape_gpus, sets, feasible,
    )
    candidate_features(jobs, perf_class, sf, tiers, gpus_per_node, tables.lf_by_class,
                       tables.larger_rule, best0, packed, random, shape_of_slot, shape_gpus,
                       num_shapes, sets, feasible, features)
    keeps_gpus(job_of_gpu, jobs, shape_of_slot, shape_gpus, sets, feasible, keeps)
    job_rows(jobs, num_gpus, perf_class, columns.iteration_time_s, columns.total_iterations,
             columns.iterations_done, columns.submit_time_s, columns.attained_service_s,
             columns.status, constants.now_s, free.size, constants.running, sticky,
             constants.log_horizon, constants.remaining_known, obs_jobs)
    num_features = len(CANDIDATE)
    for k in range(jobs.size):
        s = shape_of_slot[k]
        for m in range(num_candidates):
            for f in range(num_features):
                obs_candidates[k, m, f] = features[s, m, f]
            obs_candidates[k, m, CANDIDATE.keeps_gpus] = keeps[k, m]
    cluster_summary(free, rank, max_tiers, gpus_per_node, obs_cluster)
    size = obs_cluster.size
    obs_cluster[size - 3] = pending_frac
    obs_cluster[size - 2] = constants.queued_frac
    obs_cluster[size - 1] = constants.log_now
    selectable = min(jobs.size, 1) if sticky else jobs.size
    valid = False
    for k in range(selectable):
        s = shape_of_slot[k]
        for m in range(num_candidates):
            if feasible[s, m]:
                mask[k * num_candidates + m] = True
                valid = True
    mask[mask.size - 1] = constants.scheduling or not valid
    return num_shapes
