"""palgym._numba.entry_point: the compiled entry of a kernel gives the kernel's own results."""

from __future__ import annotations

import numpy as np
import pytest

from palgym._numba import AVAILABLE, entry_point, njit

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


@njit(cache=False)
def _scaled_sum(values, scale, out):  # type: ignore[no-untyped-def]
    total = 0.0
    for value in values:
        total += value
    out[0] = total * scale
    return values.size


def test_the_entry_computes_what_the_kernel_computes() -> None:
    values = np.array([1.0, 2.0, 4.0])
    out = np.zeros(1)
    entry = entry_point(_scaled_sum, (values, 0.5, out))
    assert entry(values, 0.5, out) == 3
    assert out[0] == 3.5  # (1 + 2 + 4) / 2, by hand
    other = np.array([8.0])
    assert entry(other, 2.0, out) == 1 and out[0] == 16.0
