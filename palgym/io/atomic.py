"""Atomic file output: write a temporary file in the target folder, then rename it over
(:func:`atomic_write_bytes`); :func:`check_destination` refuses a destination that could not be
written before a command does its work."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from palgym.errors import ConfigError


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
        OSError: if the folder cannot be created or written (a full disk, no permission, the
            destination is a folder, ...): the error's ``filename`` is always ``path`` (not the
            temporary file), with the original errno and reason, e.g. ``[Errno 28] No space
            left on device: 'out/results.csv'``; the original error is its ``__cause__``.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _naming(exc, target, f" (creating its folder {exc.filename})") from exc
    try:
        handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                            suffix=".tmp")
    except OSError as exc:
        raise _naming(exc, target) from exc
    try:
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, _umask_mode())  # mkstemp creates 0600 files
        os.replace(tmp_name, target)
    except BaseException as exc:
        Path(tmp_name).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _naming(exc, target) from exc
        raise
    return target


def _naming(error: OSError, target: Path, note: str = "") -> OSError:
    """``error`` (same errno, hence the same OSError subclass) about ``target``."""
    if error.errno is None:
        return OSError(f"cannot write {target}: {error}{note}")
    return OSError(error.errno, f"{error.strerror or error}{note}", str(target))


def atomic_write_text(path: str | Path, text: str) -> Path:
    """UTF-8 text twin of :func:`atomic_write_bytes` (newlines written as given)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def check_destination(path: str | Path, argument: str, *, folder: bool = False) -> Path:
    """Refuse, before any work is done, a destination :func:`atomic_write_bytes` could not
    write: a file path that is a folder (or a folder path that is a file), or whose nearest
    existing ancestor is not a folder or cannot be written in.

    Args:
        path: the destination file (``folder``: the destination folder; missing folders are
            created when written).
        argument: what names it, for the error (e.g. ``"--output"``).
        folder: ``path`` is a folder of outputs.

    Returns:
        ``path`` as a Path.

    Raises:
        ConfigError: ``"{argument} {path}: ..."`` saying what is wrong.
    """
    target = Path(path)
    if folder and target.exists() and not target.is_dir():
        raise ConfigError(f"{argument} {target}: exists and is not a folder")
    if not folder and target.is_dir():
        raise ConfigError(f"{argument} {target}: is a folder; give a file path")
    existing = target if folder else target.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{argument} {target}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{argument} {target}: cannot write in {existing} (permission denied)")
    return target
