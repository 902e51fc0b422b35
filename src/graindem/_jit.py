"""One place for the numba compilation options used by every kernel.

`cache=True` is mandatory (a cold compile costs tens of seconds). numba invalidates a cached
function only when its *own* file changes, not when a kernel it calls changes, so a cache kept
across edits would run stale code. The cache therefore lives in a directory named by a hash of all
graindem sources: any edit starts a fresh cache (set GRAINDEM_NUMBA_CACHE to override the base).

fastmath is given as an explicit flag set *without* 'nnan' and 'ninf': kernels test for non-finite
input and must keep those tests. `error_model='numpy'` drops the zero-division check on every '/',
safe because every division in the kernels is guarded by the algorithm itself.
"""

import hashlib
import os
import shutil
import time
from pathlib import Path

import numba

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}


def _source_hash():
    root = Path(__file__).resolve().parent
    h = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _prune_stale_caches(base, current, min_age_s=3600.0):
    """Every edit starts a new cache directory; drop those of other source versions once unused for
    an hour (a process still running an older version keeps its cache until then)."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if entry.name != current and entry.is_dir() and now - entry.stat().st_mtime > min_age_s:
            shutil.rmtree(entry.path, ignore_errors=True)


def _configure_cache():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return  # the user chose a cache directory explicitly
    base = os.environ.get("GRAINDEM_NUMBA_CACHE") or str(Path(__file__).resolve().parent / "__pycache__" / "numba")
    current = _source_hash()
    numba.config.CACHE_DIR = os.path.join(base, current)
    _prune_stale_caches(base, current)


_configure_cache()


def njit(*args, **kwargs):
    """`numba.njit` with graindem's defaults (cache, safe fastmath, numpy error model)."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("fastmath", FASTMATH)
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return numba.njit(**kwargs)(args[0])
    return numba.njit(*args, **kwargs)
