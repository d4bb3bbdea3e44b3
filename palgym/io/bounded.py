"""Streamed decompression with a ceiling: a small compressed input can stand for gigabytes (a
decompression bomb), so the output is produced in chunks and refused as soon as it passes the
ceiling the caller derives from what the data may hold; memory stays within the ceiling plus
one chunk, whatever the input claims.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable, Iterable
from functools import partial

CHUNK = 1 << 16
"""Compressed bytes fed to the decompressor at a time."""


class InflateLimitError(ValueError):
    """Decompressed data past its ceiling (``limit``: the ceiling in bytes)."""

    def __init__(self, message: str, limit: int) -> None:
        self.limit = limit
        super().__init__(message)


def inflate(data: bytes, max_bytes: int) -> bytearray:
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
    return out


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




def check_zip_entries(raw: bytes, ceiling: Callable[[str], int], max_total: int,
                      max_entries: int = 64) -> dict[str, int]:
    """Check every entry of the zip ``raw`` against its ceiling in bytes (``ceiling(name)``)
    and all of them against ``max_total``: first the sizes the zip declares, then, since a
    declared size can lie, the bytes each entry actually inflates to, streamed in chunks of
    :data:`CHUNK` and stopped past the ceiling. At most ``max_entries`` entries.

    Returns:
        ``{name: size}`` of every entry.

    Raises:
        InflateLimitError: naming the entry, its declared or inflated size and the ceiling.
        zipfile.BadZipFile: for bytes that are not a zip, or an entry whose CRC or length does
            not match (what a lying declared size produces).
    """
    sizes: dict[str, int] = {}
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        infos = archive.infolist()
        if len(infos) > max_entries:
            raise InflateLimitError(f"{len(infos)} entries, more than {max_entries}",
                                    max_entries)
        for info in infos:
            limit = ceiling(info.filename)
            if info.file_size > limit:
                raise InflateLimitError(f"entry {info.filename!r} declares {info.file_size} "
                                        f"bytes, past its ceiling of {limit} bytes", limit)
        declared = sum(info.file_size for info in infos)
        if declared > max_total:
            raise InflateLimitError(f"the entries declare {declared} bytes in all, past the "
                                    f"ceiling of {max_total} bytes", max_total)
        for info in infos:
            limit = ceiling(info.filename)
            with archive.open(info) as entry:
                try:
                    sizes[info.filename] = count_bounded(iter(partial(entry.read, CHUNK),
                                                              b""), limit)
                except InflateLimitError:
                    raise InflateLimitError(f"entry {info.filename!r} inflates past its "
                                            f"ceiling of {limit} bytes", limit) from None
    return sizes


__all__ = ["CHUNK", "InflateLimitError", "check_zip_entries", "count_bounded", "inflate"]
