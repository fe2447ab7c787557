"""Writing a file so that a reader never sees it half-written (:func:`atomic_write`), and the fallback for a
disk too full for that (:func:`rewrite_in_place`)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path


def atomic_write(path: Path, data: str | bytes, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` through a fsync-ed temporary file in the same folder, rename, fsync the folder.

    Until the rename the old file stays whole; the temporary file is removed whatever fails. ``mode``: the
    new file's permissions (the umask applies), set before the rename, e.g. ``0o700`` for a script.
    """
    raw = data.encode() if isinstance(data, str) else data
    staging = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        handle = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)  # the umask applies
    except OSError as error:  # named by the file the caller asked for, not the temporary one
        raise type(error)(error.errno, error.strerror, str(path)) from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(raw)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(staging, path)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:  # the rename itself survives a power loss
            os.fsync(folder)
        finally:
            os.close(folder)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
        if isinstance(error, OSError) and error.errno is not None and error.filename in (None, staging, str(staging)):
            # the file the caller named (a full disk gives none, a read-only folder the temporary one)
            raise type(error)(error.errno, error.strerror, str(path)) from error
        raise


def rewrite_in_place(path: Path, texts: Sequence[str]) -> bool:
    """Overwrite the existing file ``path`` where it lies with the first of ``texts`` that fits (no new file: the
    blocks it held take the new text); whether one did.

    The last resort when :func:`atomic_write` failed (a full disk) and leaving the old text would be worse
    than a write that is not atomic: an ended run's status (:meth:`stamen.server.rundir.RunDirectory.set_status`).
    """
    for text in texts:
        try:
            handle = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
            with os.fdopen(handle, "wb") as stream:
                stream.truncate(0)
                stream.write(text.encode())
                stream.flush()
                os.fsync(stream.fileno())
            return True
        except OSError:
            continue
    return False
