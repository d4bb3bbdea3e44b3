"""Compiled (numba) twins of the two samplers Random placement draws from, index for index.

Each ``*_sample`` function draws ``k`` distinct indices of a population of size ``n`` into
``out[:k]`` exactly as the Python sampler would, and leaves the stream where the Python
sampler would leave it:

- :func:`numpy_sample` is ``Generator.choice(n, size=k, replace=False)`` (shuffle on) of
  :class:`palgym.policies.base.NumpySampler`: Floyd's algorithm and a shuffle of the result,
  or a partial tail shuffle of ``arange(n)`` when ``n > 10000`` and ``k > n // 50``; each
  bounded draw is numpy's ``random_bounded_uint64`` (Lemire's method on 32-bit words). It
  draws from the Generator's own bit generator state, so the Python object moves on with it.
- :func:`cpython_sample` is CPython's ``random.Random.sample`` (``Lib/random.py``, 3.9 to
  3.13): the pool branch when ``n <= setsize`` (``setsize`` from :func:`cpython_setsizes`),
  else the set branch with rejection of repeats; each draw is ``_randbelow_with_getrandbits``
  (``getrandbits(n.bit_length())`` until below ``n``) on MT19937's ``genrand_uint32``
  (``Modules/_randommodule.c``). The state is the 624 words and the index of
  ``Random.getstate()``; the caller writes it back with ``Random.setstate``.

Set membership uses ``marks`` (bool, >= n), all False on entry and on return; the set's
layout (numpy's hash table, CPython's set) never changes which indices come out.
``tests/test_random_streams.py`` checks both against the Python samplers on many (n, k, seed).

Source: numpy ``random/_generator.pyx::Generator.choice``, ``_shuffle_int``,
``random/src/distributions/distributions.c::random_bounded_uint64``; CPython ``Lib/random.py``
``Random.sample``, ``Modules/_randommodule.c::genrand_uint32``; M. Matsumoto, T. Nishimura,
"Mersenne Twister", ACM TOMACS 8(1), 1998.
Importing this module imports numba (it needs it: :data:`palgym._numba.AVAILABLE`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from palgym._numba import next_uint32 as _next_uint32
from palgym._numba import njit

next_uint32: Any = _next_uint32  # the bit generator's own next_uint32 (numba's binding)
_MASK32 = np.uint64(0xFFFFFFFF)
_MT_N = 624
_MT_M = 397
_TAIL_SHUFFLE_MIN_POPULATION = 10000
_TAIL_SHUFFLE_CUTOFF = 50  # Generator.choice with shuffle=True


@njit(cache=True, nogil=True)
def _bounded(bitgen, high):  # type: ignore[no-untyped-def]
    """numpy's ``random_bounded_uint64(bitgen, 0, high, 0, 0)`` for ``high < 2**32``: a
    uniform integer in [0, high] (no draw when high is 0)."""
    rng = np.uint64(high)
    if rng == 0:
        return np.int64(0)
    if rng == _MASK32:
        return np.int64(next_uint32(bitgen))
    rng_excl = rng + np.uint64(1)
    m = np.uint64(next_uint32(bitgen)) * rng_excl
    leftover = m & _MASK32
    if leftover < rng_excl:
        threshold = (_MASK32 - rng) % rng_excl
        while leftover < threshold:
            m = np.uint64(next_uint32(bitgen)) * rng_excl
            leftover = m & _MASK32
    return np.int64(m >> np.uint64(32))


@njit(cache=True, nogil=True)
def _shuffle_tail(bitgen, data, n, first):  # type: ignore[no-untyped-def]
    """numpy's ``_shuffle_int(bitgen, n, first, data)``: swaps n-1, n-2, ..., first."""
    for i in range(n - 1, first - 1, -1):
        j = _bounded(bitgen, i)
        data[i], data[j] = data[j], data[i]


@njit(cache=True, nogil=True)
def numpy_sample(generator, n, k, out, scratch, marks):  # type: ignore[no-untyped-def]
    """``generator.choice(n, size=k, replace=False)`` into ``out[:k]``.

    Args:
        generator: a ``numpy.random.Generator`` (its state advances in place).
        n: population size (< 2**32); k: sample size, 0 <= k <= n.
        out: int64 (>= k,) out: the indices, in numpy's order.
        scratch: int64 (>= n,) scratch (the tail-shuffle branch).
        marks: bool (>= n,) all False; False again on return.
    """
    bitgen = generator.bit_generator
    if n > _TAIL_SHUFFLE_MIN_POPULATION and k > n // _TAIL_SHUFFLE_CUTOFF:
        for i in range(n):
            scratch[i] = i
        _shuffle_tail(bitgen, scratch, n, max(n - k, 1))
        out[:k] = scratch[n - k : n]
        return
    for j in range(n - k, n):
        value = _bounded(bitgen, j)
        if marks[value]:
            value = j  # Floyd: j itself is never taken yet
        marks[value] = True
        out[j - n + k] = value
    _shuffle_tail(bitgen, out, k, 1)
    for i in range(k):
        marks[out[i]] = False


@njit(cache=True, nogil=True)
def _twist(mt):  # type: ignore[no-untyped-def]
    """MT19937's state refill (``genrand_uint32`` when the index reaches 624)."""
    for kk in range(_MT_N):
        y = (np.int64(mt[kk]) & 0x80000000) | (np.int64(mt[(kk + 1) % _MT_N]) & 0x7FFFFFFF)
        value = np.int64(mt[(kk + _MT_M) % _MT_N]) ^ (y >> 1)
        if y & 1:
            value ^= 0x9908B0DF
        mt[kk] = value


@njit(cache=True, nogil=True)
def genrand_uint32(mt, index):  # type: ignore[no-untyped-def]
    """CPython's ``genrand_uint32``: the next tempered 32-bit word (as int64).

    Args:
        mt: uint32 (624,) the state words (updated).
        index: int64 (1,) the state index, 0..624 (updated).
    """
    if index[0] >= _MT_N:
        _twist(mt)
        index[0] = 0
    y = np.int64(mt[index[0]])
    index[0] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@njit(cache=True, nogil=True)
def randbelow(mt, index, n):  # type: ignore[no-untyped-def]
    """``Random._randbelow_with_getrandbits(n)`` for 1 <= n < 2**32: ``getrandbits(b)``
    (the top b bits of one word, b = n.bit_length()) until it is below n."""
    bits = 0
    while (n >> bits) > 0:
        bits += 1
    r = genrand_uint32(mt, index) >> (32 - bits)
    while r >= n:
        r = genrand_uint32(mt, index) >> (32 - bits)
    return r


@njit(cache=True, nogil=True)
def cpython_sample(mt, index, setsize, n, k, out, scratch, marks):  # type: ignore[no-untyped-def]  # noqa: PLR0913
    """``random.Random.sample(range(n), k)`` into ``out[:k]``.

    Args:
        mt, index: the MT19937 state (as :func:`genrand_uint32`; updated).
        setsize: int64, ``random.sample``'s set-size bound for this k (:func:`cpython_setsizes`).
        n: population size (< 2**32); k: sample size, 0 <= k <= n.
        out: int64 (>= k,) out: the indices, in CPython's order.
        scratch: int64 (>= n,) scratch (the pool).
        marks: bool (>= n,) all False; False again on return.
    """
    if n <= setsize:
        for i in range(n):
            scratch[i] = i
        for i in range(k):
            j = randbelow(mt, index, n - i)
            out[i] = scratch[j]
            scratch[j] = scratch[n - i - 1]
        return
    for i in range(k):
        j = randbelow(mt, index, n)
        while marks[j]:
            j = randbelow(mt, index, n)
        marks[j] = True
        out[i] = j
    for i in range(k):
        marks[out[i]] = False


def cpython_setsizes(max_k: int) -> np.ndarray:
    """``random.sample``'s ``setsize`` for every k in 0..max_k, computed as ``Lib/random.py``
    does (``21 + 4 ** ceil(log(3k, 4))`` for k > 5, else 21), so its float log is CPython's.

    Args:
        max_k: the largest sample size (>= 0).

    Returns:
        int64 (max_k + 1,).

    Raises:
        ValueError: if ``max_k`` is negative.
    """
    if max_k < 0:
        raise ValueError(f"max_k must be >= 0, got {max_k}")
    sizes = [21 + (4 ** math.ceil(math.log(k * 3, 4)) if k > 5 else 0) for k in range(max_k + 1)]
    return np.asarray(sizes, dtype=np.int64)
