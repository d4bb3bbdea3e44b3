"""Streamed decompression with a ceiling: a small compressed input can stand for gigabytes (a
decompression bomb), so the output is produced in chunks and refused as soon as it passes the
ceiling the caller derives from what the data may hold; memory stays within the ceiling plus
one chunk, whatever the input claims.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

CHUNK = 1 << 16
"""Compressed bytes fed to the decompressor at a time."""


class InflateLimitError(ValueError):
    """Decompressed data past its ceiling (``limit``: the ceiling in bytes)."""

    def __init__(self, message: str, limit: int) -> None:
        self.limit = limit
        super().__init__(message)


def inflate(data: bytes, max_bytes: int) -> bytes:
    """zlib-decompress ``data`` into at most ``max_bytes`` bytes.

    Raises:
        InflateLimitError: when the output would pass ``max_bytes`` (nothing past the ceiling
            is produced).
        zlib.error: for data that is not a complete zlib stream, or has bytes after its end.
    """
    decompressor = zlib.decompressobj()
    out = bytearray()
    for start in range(0, len(data), CHUNK):
        out += decompressor.decompress(data[start:start + CHUNK], max_bytes + 1 - len(out))
        while decompressor.unconsumed_tail and len(out) <= max_bytes:
            out += decompressor.decompress(decompressor.unconsumed_tail,
                                           max_bytes + 1 - len(out))
        if len(out) > max_bytes:
            raise InflateLimitError(f"inflates past the ceiling of {max_bytes} bytes", max_bytes)
    out += decompressor.flush()
    if len(out) > max_bytes:
        raise InflateLimitError(f"inflates past the ceiling of {max_bytes} bytes", max_bytes)
    if not decompressor.eof:
        raise zlib.error("incomplete or truncated stream")
    if decompressor.unused_data:
        raise zlib.error(f"{len(decompressor.unused_data)} bytes after the end of the stream")
    return bytes(out)


def count_bounded(chunks: Iterable[bytes], max_bytes: int) -> int:
    """The total length of ``chunks`` (e.g. a zip entry read in pieces), stopping as soon as it
    passes ``max_bytes``.

    Raises:
        InflateLimitError: when the total passes ``max_bytes``.
    """
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise InflateLimitError(f"holds more than the ceiling of {max_bytes} bytes",
                                    max_bytes)
    return total


__all__ = ["CHUNK", "InflateLimitError", "count_bounded", "inflate"]
