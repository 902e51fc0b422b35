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
import warnings
from pathlib import Path

import numba
from llvmlite import binding as ll
from numba.core import codegen as _codegen

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


def _own_copies_of_callees(optimize_final_module):
    """Wrap numba's CPUCodeLibrary._optimize_final_module: once a graindem library's module is
    optimised, the callees linked into it (linkonce_odr: one name shared across the JIT's modules)
    become internal to its machine code; the module that callers link in keeps numba's linkage.

    Why: numba links the optimised module of every njit callee into its caller's module and
    optimises the whole again, so each kernel exists twice: in its own library and as the caller's
    copy, and with fastmath flags the two copies can round differently. Which copy a call reached
    depended on the process: one that compiles afresh loads each callee's own library first, and
    the JIT bound the caller's calls to that earlier definition of the shared name; one that loads
    the caller from numba's cache ran the caller's copies. So a run and its restart in a new process
    parted (session 7: a walled box with a moving lid, first in the last bits of a pair frame from
    _pair_kinematics_orthogonal at step 527; fastmath off there did not help, its inlined helpers
    keep their flags). With internal copies every process runs the caller's copies, the code the
    cache holds; optimisation is untouched (internalised after it), so is the speed."""
    def optimize(self):
        optimize_final_module(self)
        module = self._final_module
        if not any(fn.name.startswith("_ZN8graindem") and fn.linkage == ll.Linkage.external
                   and not fn.is_declaration for fn in module.functions):
            return
        # what numba's _get_module_for_linking would give callers, made now, before the change
        shared = module.clone()
        for fn in shared.functions:
            if not fn.is_declaration and fn.linkage == ll.Linkage.external:
                fn.linkage = "linkonce_odr"
        self._shared_module = shared
        for fn in module.functions:
            if not fn.is_declaration and fn.linkage == ll.Linkage.linkonce_odr:
                fn.linkage = "internal"
    optimize.__wrapped__ = optimize_final_module
    return optimize


if not hasattr(getattr(_codegen, "CPUCodeLibrary", None), "_optimize_final_module"):
    # numba internals (of long standing; checked with numba 0.68.1); without the hook a run and its
    # restart in a new process may part
    warnings.warn("graindem: this numba has no CPUCodeLibrary._optimize_final_module; freshly compiled "
                  "and cached kernels may round differently", RuntimeWarning)
elif not hasattr(_codegen.CPUCodeLibrary._optimize_final_module, "__wrapped__"):
    _codegen.CPUCodeLibrary._optimize_final_module = _own_copies_of_callees(
        _codegen.CPUCodeLibrary._optimize_final_module)


def njit(*args, **kwargs):
    """`numba.njit` with graindem's defaults (cache, safe fastmath, numpy error model)."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("fastmath", FASTMATH)
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return numba.njit(**kwargs)(args[0])
    return numba.njit(*args, **kwargs)
