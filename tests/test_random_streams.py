"""The compiled samplers against the Python ones they twin: numpy's ``Generator.choice(n, k,
replace=False)`` and CPython's ``random.Random.sample(range(n), k)``, on many (n, k, seed),
both branches of each, and the stream's state afterwards (the next Python draw)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from palgym._numba import AVAILABLE

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

# numpy: Floyd + shuffle below 10,001 or for k <= n // 50; tail shuffle above (10001 // 50 = 200)
NUMPY_CASES = [(1, 0), (1, 1), (2, 2), (5, 0), (5, 5), (7, 3), (64, 1), (64, 64), (2048, 1),
               (2048, 3), (2048, 1500), (2048, 2048), (10000, 9000), (10001, 200), (10001, 201),
               (10001, 10001), (12000, 1)]
# CPython: the pool branch when n <= setsize (21 for k <= 5; 85 for 6 <= k <= 21; 277 for
# 22 <= k <= 85), else the set branch
CPYTHON_CASES = [(1, 0), (1, 1), (21, 5), (22, 5), (22, 0), (85, 6), (86, 6), (85, 21),
                 (86, 21), (277, 22), (278, 22), (2048, 1), (2048, 4), (2048, 100),
                 (2048, 2048), (5000, 700), (8192, 3)]


def _scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.full(n, -7, np.int64), np.empty(n, np.int64), np.zeros(n, np.bool_)


def test_setsizes_follow_random_sample_by_hand() -> None:
    from palgym.policies.random_streams import cpython_setsizes

    sizes = cpython_setsizes(86)
    # k <= 5: 21; 3k = 18..63 -> 4**3; 66..255 -> 4**4 (log4(63) = 2.99, log4(66) = 3.02)
    assert sizes[:6].tolist() == [21] * 6
    assert sizes[6] == sizes[21] == 21 + 64
    assert sizes[22] == sizes[85] == 21 + 256
    assert sizes[86] == 21 + 1024
    with pytest.raises(ValueError, match="max_k must be >= 0, got -1"):
        cpython_setsizes(-1)


@pytest.mark.parametrize(("n", "k"), NUMPY_CASES)
def test_numpy_sample_equals_generator_choice(n: int, k: int) -> None:
    from palgym.policies.random_streams import numpy_sample

    out, scratch, marks = _scratch(n)
    for seed in range(6):
        mine, reference = np.random.default_rng(seed), np.random.default_rng(seed)
        mine.integers(2, size=seed)  # also start from a half-used 64-bit word
        reference.integers(2, size=seed)
        numpy_sample(mine, n, k, out, scratch, marks)
        expected = reference.choice(n, size=k, replace=False)
        assert out[:k].tolist() == expected.tolist()
        assert not marks.any()
        assert mine.integers(2**62) == reference.integers(2**62)  # same state afterwards


@pytest.mark.parametrize(("n", "k"), CPYTHON_CASES)
def test_cpython_sample_equals_random_sample(n: int, k: int) -> None:
    from palgym.policies.random_streams import cpython_sample, cpython_setsizes

    setsizes = cpython_setsizes(k)
    out, scratch, marks = _scratch(n)
    for seed in (0, 1, 42, 2**40 + 3):
        mine, reference = random.Random(seed), random.Random(seed)
        version, internal, gauss = mine.getstate()
        mt = np.array(internal[:624], np.uint32)
        index = np.array([internal[624]], np.int64)
        cpython_sample(mt, index, setsizes[k], n, k, out, scratch, marks)
        assert out[:k].tolist() == reference.sample(range(n), k)
        assert not marks.any()
        mine.setstate((version, (*mt.tolist(), int(index[0])), gauss))
        assert mine.getstate() == reference.getstate()
        assert mine.random() == reference.random()


def test_genrand_uint32_equals_getrandbits_across_twists() -> None:
    from palgym.policies.random_streams import genrand_uint32, randbelow

    mine, reference = random.Random(7), random.Random(7)
    _, internal, _ = mine.getstate()
    mt = np.array(internal[:624], np.uint32)
    index = np.array([internal[624]], np.int64)
    words = [genrand_uint32(mt, index) for _ in range(1500)]  # two refills of 624 words
    assert words == [reference.getrandbits(32) for _ in range(1500)]
    # _randbelow on ranges that reject often (just above a power of two) and 1 (no rejection)
    for n in (1, 2, 3, 5, 1025, 2**31 + 1):
        draws = [randbelow(mt, index, n) for _ in range(200)]
        assert draws == [reference._randbelow(n) for _ in range(200)]
