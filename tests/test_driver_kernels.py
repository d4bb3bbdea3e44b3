"""The compiled queue orders (palgym.policies.order_kernel) against np.lexsort.

Every order sorts the active jobs by (priority, key 1, key 2), ties by job index: the numpy
orders of palgym.policies.ordering do it with a stable np.lexsort. On random job columns with
many ties, the kernel's ordering, from scratch and kept up from one round to the next (the
jobs that ran re-keyed, new ones admitted, promoted ones), must be that lexsort's.
"""

from __future__ import annotations

import numpy as np
import pytest

from palgym._numba import AVAILABLE, njit
from palgym.policies import order_kernel as codes
from palgym.sim.state import columns_of
from palgym.sim.step_numba import compiled_columns_of

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the kernels need numba")
J, G = 80, 16


@njit(cache=True)
def _order(code, floats, ints, status, listed, admitted, thresholds, memo_t):  # type: ignore[no-untyped-def]  # noqa: PLR0913
    jobs = compiled_columns_of(floats, ints, status)
    memo = codes.OrderMemo(*memo_t)
    return codes.sorted_order((code, thresholds), jobs, listed, admitted, memo).copy()


@njit(cache=True)
def _note(memo_t, job_of_gpu, promoted):  # type: ignore[no-untyped-def]
    codes.note_round(codes.OrderMemo(*memo_t), job_of_gpu, promoted)


def expected(code: int, floats: np.ndarray, ints: np.ndarray, status: np.ndarray,
             listed: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    jobs = columns_of(floats, ints, status)
    second = np.zeros(listed.size)
    if code == codes.FIFO_KEY:
        first = jobs.submit_time_s[listed]
    elif code == codes.LAS_WALL_KEY:
        first = jobs.attained_service_s[listed]
    elif code == codes.LAS_GPU_KEY:
        first = jobs.gpu_service_s[listed]
    elif code == codes.TIRESIAS_2D_KEY:
        first = np.searchsorted(thresholds, jobs.gpu_service_s[listed], side="right")
        first, second = first.astype(np.float64), jobs.submit_time_s[listed]
    else:
        nominal = code in (codes.SRTF_NOMINAL_KEY, codes.SRSF_NOMINAL_KEY)
        first = (jobs.iteration_time_s[listed] * jobs.total_iterations[listed]
                 - jobs.attained_service_s[listed]) if nominal else (
            jobs.iteration_time_s[listed] * np.maximum(
                jobs.total_iterations[listed] - jobs.iterations_done[listed], 0.0))
        if code in (codes.SRSF_NOMINAL_KEY, codes.SRSF_IDEAL_KEY):
            first = first * jobs.num_gpus[listed]
    return listed[np.lexsort((second, first, jobs.priority[listed]))]


def random_columns(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    floats = rng.integers(0, 4, size=(13, J)).astype(np.float64) * 360.0  # many ties
    ints = np.zeros((5, J), np.int64)
    ints[1] = rng.integers(1, 5, J)  # num_gpus
    ints[4] = np.where(rng.random(J) < 0.2, 1, 999)  # priority
    return floats, ints, np.ones(J, np.int8)


@pytest.mark.parametrize("code", range(8))
def test_kernel_order_is_the_stable_lexsort_from_round_to_round(code: int) -> None:
    rng = np.random.default_rng(code)
    floats, ints, status = random_columns(rng)
    thresholds = np.array([360.0, 1080.0])
    memo = codes.new_order_memo(J, G)
    admitted = J // 2
    for step in range(40):
        listed = np.flatnonzero(status[:admitted] != 3).astype(np.int64)
        got = _order(code, floats, ints, status, listed, admitted, thresholds, tuple(memo))
        want = expected(code, floats, ints, status, listed, thresholds)
        assert got.tolist() == want.tolist(), f"code {code}, step {step}"
        # a round: some listed jobs run (their service grows), one may complete, jobs arrive
        running = rng.choice(listed, size=min(4, listed.size), replace=False)
        job_of_gpu = np.full(G, -1, np.int64)
        job_of_gpu[: running.size] = running
        promoted = bool(step % 5 == 4)
        if promoted:  # a queued job promoted
            queued = np.setdiff1d(listed, running)
            ints[4, queued[:1]] = 1
        _note(tuple(memo), job_of_gpu, promoted)
        floats[[4, 5, 3], running[:, None]] += rng.integers(0, 2, (running.size, 3)) * 360.0
        if rng.random() < 0.3:
            status[running[0]] = 3
        admitted = min(J, admitted + int(rng.integers(0, 3)))
