"""Output folders and files that are never left half-written.

    check_output_folder(path, what="--out", need_bytes=0) -> Path
        Creates the folder if needed and proves it writable (a probe file is created and removed)
        with at least `need_bytes` free; raises ValueError naming `what` otherwise, before any work.
    with replacing(path) as tmp: ...write the file tmp...
        The one atomic-replacement pattern every writer uses: `tmp` is a temporary name in the
        target's folder (`.NAME.XXXXXXXX.tmp`); on success it is flushed to disk (fsync) and
        renamed over `path`, on any failure removed, so the old file stays intact.
    atomic_write_text(path, text) / atomic_write_bytes(path, data)
        Write under a temporary name in the same folder (`.NAME.XXXXXXXX.tmp`), fsync, rename over
        `path`: a crash or a full disk leaves the old file or the new one, never a mix.
    remove_stale_temp_files(folder, names) -> [removed paths]
        Removes `.NAME.XXXXXXXX.tmp` files that a killed writer of one of `names` left behind (only
        that exact pattern, only for the names given: nothing else in the folder is touched).
"""

import contextlib
import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["replacing", "check_output_folder", "atomic_write_text", "atomic_write_bytes", "remove_stale_temp_files",
           "temp_name_pattern", "is_disk_full"]

# tempfile.mkstemp's random part: 8 characters of [a-z0-9_]
_RANDOM = r"[A-Za-z0-9_]{8}"


def temp_name_pattern(name):
    """The regular expression of the temporary names atomic writes of `name` use."""
    return re.compile(r"^\." + re.escape(name) + r"\." + _RANDOM + r"\.tmp$")


def is_disk_full(exc):
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def check_output_folder(path, what="--out", need_bytes=0):
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} must be a folder (it may not exist yet); {str(path)!r} is a file")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".graindem-probe.", suffix=".tmp", dir=path)
        try:
            os.write(fd, b"probe")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{what} folder {str(path)!r} cannot be written: {exc.strerror or exc}") from None
    if need_bytes:
        free = shutil.disk_usage(path).free
        if free < need_bytes:
            raise ValueError(f"{what} folder {str(path)!r} has {free / 1e6:.1f} MB free; this run needs at least "
                             f"{need_bytes / 1e6:.1f} MB for its checkpoint and outputs")
    return path


@contextlib.contextmanager
def replacing(path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:  # make the rename itself durable; not possible on every platform
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def atomic_write_bytes(path, data):
    with replacing(path) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
    return Path(path)


def atomic_write_text(path, text):
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temp_files(folder, names):
    folder = Path(folder)
    patterns = [temp_name_pattern(n) for n in names]
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if any(p.match(entry.name) for p in patterns) and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
                removed.append(entry.path)
            except OSError:
                pass
    return removed
