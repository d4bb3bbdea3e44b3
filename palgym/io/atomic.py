"""Atomic file output: write a temporary file in the target folder, then rename it over."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask_mode() -> int:
    """File mode a plain ``open()`` would give (0o666 minus the process umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (same-folder temp file + ``os.replace``).

    A crash mid-write leaves any previous file at ``path`` untouched; the new file gets the mode
    a plain ``open()`` would give it.

    Args:
        path: destination file; its folder is created if missing.
        data: the content (e.g. PNG bytes).

    Returns:
        The destination path.

    Raises:
        OSError: if the folder cannot be created or written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, _umask_mode())  # mkstemp creates 0600 files
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """UTF-8 text twin of :func:`atomic_write_bytes` (newlines written as given)."""
    return atomic_write_bytes(path, text.encode("utf-8"))
