"""The blocked silhouette of the slowdown-factor fit: the unblocked sklearn score bit for bit,
in memory bounded by its block size rather than by the G x G distance matrix."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from palgym.policies import slowdown


@pytest.mark.parametrize("num_gpus", [7, 500, 3000])
def test_blocked_silhouette_equals_unblocked(num_gpus: int, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    import sklearn
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(num_gpus)
    values = np.round(rng.lognormal(0.0, 0.1, size=num_gpus), 3)
    labels = np.searchsorted(np.quantile(values, [0.3, 0.8]), values).astype(np.int64)
    with sklearn.config_context(working_memory=4096):  # one block of every row
        whole = float(silhouette_score(values.reshape(-1, 1), labels))
    monkeypatch.setattr(slowdown, "SILHOUETTE_WORKING_MEMORY_MB", 1)  # 3000 GPUs: 44 rows
    assert slowdown.silhouette(values, labels).hex() == whole.hex()


def test_blocked_silhouette_memory_is_bounded() -> None:
    # 6,000 GPUs: the whole distance matrix is 6000^2 x 8 B = 288 MB; blocks of 16 MiB rows,
    # with a few per-row arrays of the same size beside them, stay far below a quarter of it.
    rng = np.random.default_rng(0)
    values = rng.lognormal(0.0, 0.1, size=6000)
    labels = (values > np.median(values)).astype(np.int64)
    tracemalloc.start()
    try:
        slowdown.silhouette(values, labels)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 288e6 / 4
