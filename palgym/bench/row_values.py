"""The values of a results row (:mod:`palgym.bench.results`): its metric fields from an
episode's metrics, and its ``actions`` field, base64 of the zlib-compressed little-endian
int32 env actions (a recorded schedule's flat ints, :mod:`palgym.schedule_record`, the same
way)."""

from __future__ import annotations

import base64
import binascii
import math
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from palgym.errors import ConfigError
from palgym.io.bounded import InflateLimitError, inflate


def row_metrics(metrics: Mapping[str, Any], decisions: int) -> dict[str, Any]:
    """An :class:`EpisodeRow`'s metric fields (:data:`METRIC_FIELDS`) from the env's final
    ``info["episode_metrics"]`` and the number of env steps.

    ``utilization`` is the effective GPU-time fraction (``utilization_effective``: each
    allocated GPU-round weighted by 1 / (its slowdown x locality penalty), so it depends on
    which GPUs each job got, not only how many); a JCT, makespan or utilization that is not
    finite becomes None.
    """
    return {
        "avg_jct_s": finite_or_none(metrics["avg_jct_s"]),
        "p99_jct_s": finite_or_none(metrics["p99_jct_s"]),
        "makespan_s": finite_or_none(metrics["makespan_s"]),
        "utilization": finite_or_none(metrics["utilization_effective"]),
        "num_jobs": int(metrics["num_jobs"]), "completed_jobs": int(metrics["num_completed"]),
        "unfinished_jobs": int(metrics["num_unfinished"]),
        "invalid_actions": int(metrics["num_invalid_actions"]), "decisions": int(decisions),
    }


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite (written as ``null``)."""
    number = float(value)
    return number if math.isfinite(number) else None


def encode_actions(actions: Sequence[int] | np.ndarray) -> str:
    """Base64 (ASCII) of the zlib-compressed little-endian int32 bytes of ``actions``.

    Raises:
        ConfigError: for an action outside int32.
    """
    values = np.asarray(actions, dtype=np.int64)
    if values.size and (values.min() < -(2**31) or values.max() >= 2**31):
        raise ConfigError("an env action does not fit in int32")
    data = values.astype("<i4").tobytes()
    return base64.b64encode(zlib.compress(data, 9)).decode("ascii")


def decode_actions(text: str, max_actions: int | None = None) -> np.ndarray:
    """The actions :func:`encode_actions` wrote: int32 (N,) array.

    Args:
        text: the encoding.
        max_actions: the most actions the text may hold (a row's ``decisions``); the
            decompression is streamed and stops past ``4 * max_actions`` bytes, so a small
            text that inflates to gigabytes costs no more than the ceiling (None: no ceiling,
            for text this palgym wrote).

    Raises:
        ValueError: for text that is not such an encoding, or holds more than ``max_actions``.
    """
    try:
        compressed = base64.b64decode(text.encode("ascii"), validate=True)
        data = (zlib.decompress(compressed) if max_actions is None
                else inflate(compressed, 4 * max_actions))
    except InflateLimitError:
        raise ValueError(f"holds more than {max_actions} actions (the row's decisions): the "
                         "decompression stopped there") from None
    except (binascii.Error, zlib.error, UnicodeEncodeError) as exc:
        raise ValueError(f"not base64 of zlib-compressed int32 actions ({exc})") from None
    if len(data) % 4:
        raise ValueError(f"{len(data)} bytes is not a whole number of int32 actions")
    return np.frombuffer(data, dtype="<i4").astype(np.int32)


__all__ = ["decode_actions", "encode_actions", "finite_or_none", "row_metrics"]
