"""The compiled loop's lazy waiting account (palgym.driver.waiting) against the eager one
(palgym.sim.step_active.account_waiting), and the running-jobs list against the statuses.

On random episodes of commits (queued jobs started, running ones stopped or moved, jobs
admitted and completed between commits, kernel calls ending and starting again), the lazy
account must promote the same jobs at the same commits and leave the same waiting times in
the job table as the eager one, bit for bit; where it does not apply (a round length that is
not a whole number of seconds, a waiting time it cannot represent) it must say so and write
nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from palgym._numba import AVAILABLE, njit
from palgym.driver import waiting
from palgym.sim.state import ADMITTED, Counters, KernelParams
from palgym.sim.step_active import account_waiting, holders_run, running_of
from palgym.sim.step_numba import compiled_columns_of

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the kernels need numba")
J, QUEUED, RUNNING, COMPLETED = 60, 1, 2, 3
WAITING, PRIORITY = 12, 4  # rows of waiting_s and priority in the float and int blocks


def params_of(round_s: float, threshold_s: float) -> KernelParams:
    return KernelParams(round_s, 0.0, False, 4, np.ones(4), True, threshold_s, 1, J, 10_000)


@njit(cache=True)
def _eager(blocks, params_t, listed, touched, before):  # type: ignore[no-untyped-def]
    return account_waiting(compiled_columns_of(*blocks), KernelParams(*params_t), listed,
                           touched, before)


@njit(cache=True)
def _start(blocks, params_t, counters_t, listed, lazy_t):  # type: ignore[no-untyped-def]
    return waiting.applies(compiled_columns_of(*blocks), KernelParams(*params_t),
                           Counters(*counters_t), listed, waiting.LazyWaiting(*lazy_t))


@njit(cache=True)
def _lazy(blocks, params_t, counters_t, lazy_t, touched):  # type: ignore[no-untyped-def]
    return waiting.account(compiled_columns_of(*blocks), KernelParams(*params_t),
                           Counters(*counters_t), waiting.LazyWaiting(*lazy_t), touched)


@njit(cache=True)
def _write_back(blocks, params_t, listed, lazy_t):  # type: ignore[no-untyped-def]
    waiting.write_back(compiled_columns_of(*blocks), KernelParams(*params_t), listed,
                       waiting.LazyWaiting(*lazy_t))


def new_blocks() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros((13, J)), np.full((5, J), 999, np.int64), np.zeros(J, np.int8)


def test_promotion_rounds_is_the_least_whole_count_reaching_the_threshold() -> None:
    assert waiting.promotion_rounds(360.0, 3.6e6) == 10_000  # 10,000 x 360 s = 3.6e6 s
    assert waiting.promotion_rounds(360.0, 3.6e6 + 1.0) == 10_001
    assert waiting.promotion_rounds(360.0, 0.0) == 1  # promoted at the first count
    assert waiting.promotion_rounds(360.5, 3600.0) == 0  # not whole seconds: eager
    assert waiting.promotion_rounds(360.0, np.inf) == 0


@pytest.mark.parametrize("seed", range(6))
def test_lazy_account_is_the_eager_one_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = params_of(360.0, 360.0 * int(rng.integers(1, 9)))
    due_after = waiting.promotion_rounds(params.round_duration_s, params.starvation_threshold_s)
    eager, lazy_blocks = new_blocks(), new_blocks()
    counters = Counters(np.zeros(3), np.zeros(6, np.int64))
    lazy = waiting.new_lazy_waiting(J, due_after + 1)
    lazy.counts[waiting.DUE_AFTER] = due_after
    admitted = 0
    on = False
    for commit in range(300):
        if admitted < J and rng.random() < 0.4:  # admissions (between commits)
            new = int(rng.integers(1, 4))
            for blocks in (eager, lazy_blocks):
                blocks[2][admitted : admitted + new] = QUEUED
            admitted = min(J, admitted + new)
            counters.ints[ADMITTED] = admitted
        status = eager[2]
        listed = np.flatnonzero(status[:admitted] != COMPLETED).astype(np.int64)
        if not on:  # a kernel call starts
            assert _start(lazy_blocks, tuple(params), tuple(counters), listed, tuple(lazy))
            on = True
        queued, running = listed[status[listed] == QUEUED], listed[status[listed] == RUNNING]
        started = rng.choice(queued, size=min(queued.size, int(rng.integers(0, 3))),
                             replace=False)
        stopped = rng.choice(running, size=min(running.size, int(rng.integers(0, 3))),
                             replace=False)
        moved = np.setdiff1d(running, stopped)[: int(rng.integers(0, 2))]
        touched = np.unique(np.concatenate((started, stopped, moved))).astype(np.int64)
        before = status[touched].copy()
        for blocks in (eager, lazy_blocks):
            blocks[2][started], blocks[2][stopped] = RUNNING, QUEUED
        promoted = _eager(eager, tuple(params), listed, touched, before)
        assert _lazy(lazy_blocks, tuple(params), tuple(counters), tuple(lazy),
                     touched) == promoted, f"commit {commit}"
        assert eager[1][PRIORITY].tolist() == lazy_blocks[1][PRIORITY].tolist()
        running = np.flatnonzero(status == RUNNING)
        if running.size and rng.random() < 0.2:  # a completion (the round's advance)
            for blocks in (eager, lazy_blocks):
                blocks[2][running[0]] = COMPLETED
        if rng.random() < 0.15:  # the kernel call ends: the table is written
            listed = np.flatnonzero(status[:admitted] != COMPLETED).astype(np.int64)
            _write_back(lazy_blocks, tuple(params), listed, tuple(lazy))
            assert eager[0][WAITING].tobytes() == lazy_blocks[0][WAITING].tobytes()
            on = False
    assert eager[1][PRIORITY].min() == 1, "the episode promoted jobs"


def test_lazy_account_declines_what_it_cannot_represent() -> None:
    blocks = new_blocks()
    blocks[2][:3] = QUEUED
    blocks[0][WAITING, 1] = 100.0  # not a multiple of the 360 s round
    counters = Counters(np.zeros(3), np.array([0, 3, 0, 0, 0, 0], np.int64))
    lazy = waiting.new_lazy_waiting(J, 11)
    lazy.counts[waiting.DUE_AFTER] = 10
    listed = np.arange(3, dtype=np.int64)
    params = params_of(360.0, 3600.0)
    assert not _start(blocks, tuple(params), tuple(counters), listed, tuple(lazy))
    blocks[0][WAITING, 1] = 720.0
    assert _start(blocks, tuple(params), tuple(counters), listed, tuple(lazy))
    lazy.counts[waiting.DUE_AFTER] = 0  # promotion_rounds said no
    assert not _start(blocks, tuple(params), tuple(counters), listed, tuple(lazy))


def test_running_jobs_are_the_distinct_holders_ascending() -> None:
    rng = np.random.default_rng(1)
    marks = np.zeros(J, np.bool_)
    for _ in range(50):
        job_of_gpu = np.where(rng.random(16) < 0.3, -1, rng.integers(0, J, 16))
        got = running_of(job_of_gpu, marks, np.empty(16, np.int64))
        assert got.tolist() == sorted(set(job_of_gpu[job_of_gpu >= 0].tolist()))
        assert not marks.any()
        status = np.full(J, QUEUED, np.int8)
        status[got] = RUNNING
        listed = np.arange(J, dtype=np.int64)
        assert holders_run(status, listed, job_of_gpu, marks, np.empty(16, np.int64))
        status[np.setdiff1d(listed, got)[0]] = RUNNING  # a running job holding nothing
        assert not holders_run(status, listed, job_of_gpu, marks, np.empty(16, np.int64))
