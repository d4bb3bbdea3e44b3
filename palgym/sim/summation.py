"""numpy's pairwise summation of float64 values, compiled (numba), for bit-exact kernels.

``np.sum`` of a contiguous float64 array does not add its values left to right: it starts from
0.0 and adds numpy's ``pairwise_sum`` of the values (``numpy/_core/src/umath/loops_utils.h.src``).
A compiled kernel that must reproduce a numpy reduction bit for bit calls :func:`pairwise_sum`
(``tests/test_engine_kernels.py`` compares it with ``np.sum`` over many lengths and values).
"""

from __future__ import annotations

import numpy as np

from palgym._numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def pairwise_sum(values, size):  # type: ignore[no-untyped-def]
    """Sum of float64 ``values[:size]`` in numpy's pairwise order: ``np.sum(a)`` of a contiguous
    float64 array ``a`` is ``0.0 + pairwise_sum(a, a.size)``.

    numpy's ``pairwise_sum`` splits a range of more than 128 values in two (the first part a
    multiple of 8 long, about half) and adds the two parts' sums; shorter ranges are summed by
    :func:`_block_sum`. The recursion is walked with an explicit stack (a self-recursive kernel
    crashed when numba loaded it from its on-disk cache): ``phase`` 0 / 1 / 2 = next visit the
    first part / the second part / add them.
    """
    if size <= 128:
        return _block_sum(values, 0, size)
    start = np.zeros(64, np.int64)  # split depth <= log2(size)
    length = np.zeros(64, np.int64)
    phase = np.zeros(64, np.int64)
    first = np.zeros(64)
    second = np.zeros(64)
    top = 0
    length[0] = size
    while True:
        n = length[top]
        if n > 128 and phase[top] < 2:
            half = n // 2 - (n // 2) % 8
            offset = 0 if phase[top] == 0 else half
            phase[top] += 1
            top += 1
            start[top] = start[top - 1] + offset
            length[top] = half if offset == 0 else n - half
            phase[top] = 0
            continue
        value = _block_sum(values, start[top], n) if n <= 128 else first[top] + second[top]
        top -= 1
        if top < 0:
            return value
        if phase[top] == 1:
            first[top] = value
        else:
            second[top] = value


@njit(cache=True, nogil=True, error_model="numpy")
def _block_sum(values, start, size):  # type: ignore[no-untyped-def]
    """numpy's ``pairwise_sum`` of ``values[start:start + size]``, ``size`` <= 128: a plain
    loop below 8 values, else 8 interleaved partial sums added as a tree, then the rest."""
    if size < 8:
        total = 0.0
        for i in range(start, start + size):
            total += values[i]
        return total
    partial = values[start : start + 8].copy()
    i = start + 8
    while i < start + size - size % 8:
        for k in range(8):
            partial[k] += values[i + k]
        i += 8
    total = ((partial[0] + partial[1]) + (partial[2] + partial[3])) + (
        (partial[4] + partial[5]) + (partial[6] + partial[7]))
    while i < start + size:
        total += values[i]
        i += 1
    return total
