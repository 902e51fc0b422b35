"""One place for the numba compilation options used by every kernel.

`cache=True` is mandatory (a cold compile costs tens of seconds). numba invalidates a cached
function only when its *own* file changes, not when a kernel it calls changes, so a cache kept
across edits would run stale code. The cache therefore lives in a folder named by a hash of all
graindem sources, under a base folder:

- NUMBA_CACHE_DIR, if set, is used as it is (the user chose it; graindem neither adds a hash
  folder nor removes anything there);
- else GRAINDEM_NUMBA_CACHE, if set, is the base;
- else the user's cache directory (platformdirs: ~/.cache/graindem/numba on Linux), because the
  installed package folder is often read-only and is shared by every user of an environment.

If the base cannot be written, a per-user folder under the system's temporary directory is used;
if that fails too, numba's own default applies.

Each hash folder graindem creates holds a marker file (MARKER). Folders of other source versions
are removed once unused for an hour, and only if they carry that marker: the base may be a shared
folder (GRAINDEM_NUMBA_CACHE=~/.cache), whose other contents belong to other programs.

fastmath is given as an explicit flag set *without* 'nnan' and 'ninf': kernels test for non-finite
input and must keep those tests. `error_model='numpy'` drops the zero-division check on every '/',
safe because every division in the kernels is guarded by the algorithm itself.
"""

import hashlib
import os
import shutil
import stat
import tempfile
import time
import warnings
from pathlib import Path

import numba
import numba.core.event
from llvmlite import binding as ll
from numba.core import codegen as _codegen

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}

# The file that marks a cache folder as graindem's own (only such folders are ever removed).
MARKER = ".graindem-numba-cache"
MARKER_TEXT = "numba cache of graindem; this folder may be removed by graindem when its sources change\n"
STALE_AFTER_S = 3600.0


def _source_hash():
    root = Path(__file__).resolve().parent
    h = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def default_cache_base():
    """The base folder of graindem's numba caches when no environment variable chooses one."""
    from platformdirs import user_cache_dir
    return Path(user_cache_dir("graindem", appauthor=False)) / "numba"


def _is_marked(path):
    """True if `path` is a real folder (not a link) holding graindem's marker as a regular file."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        return stat.S_ISREG(os.lstat(os.path.join(path, MARKER)).st_mode)
    except OSError:
        return False


def prune_stale_caches(base, current, min_age_s=STALE_AFTER_S):
    """Remove the cache folders of other source versions under `base` that graindem created
    (marked with MARKER) and that have been unused for `min_age_s` (a process still running an
    older version keeps its cache until then). Returns the removed paths. Anything unmarked, links
    included, is left alone."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    now = time.time()
    removed = []
    for entry in entries:
        if entry.name == current or not _is_marked(entry.path):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if age > min_age_s:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def prepare_cache_folder(base, current):
    """Create base/current with its marker; returns the folder, or None if it cannot be written."""
    folder = Path(base) / current
    try:
        folder.mkdir(parents=True, exist_ok=True)
        marker = folder / MARKER
        if not marker.is_file():
            marker.write_text(MARKER_TEXT)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".probe.", delete=True)
        probe.close()
    except OSError:
        return None
    return folder


def _configure_cache():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return  # the user chose a cache directory explicitly
    current = _source_hash()
    bases = []
    if os.environ.get("GRAINDEM_NUMBA_CACHE"):
        bases.append(Path(os.environ["GRAINDEM_NUMBA_CACHE"]).expanduser())
    else:
        try:
            bases.append(default_cache_base())
        except Exception:  # platformdirs missing or no home directory: the temporary folder below
            pass
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    bases.append(Path(tempfile.gettempdir()) / f"graindem-numba-{uid}")
    for base in bases:
        folder = prepare_cache_folder(base, current)
        if folder is not None:
            numba.config.CACHE_DIR = str(folder)
            prune_stale_caches(base, current)
            return
    # nothing writable: numba's default (next to the sources, or its own user-wide fallback)


_configure_cache()


COMPILATION_NOTICE = ("graindem: compiling numba kernels for this version (a few minutes on 2 cores, once; "
                      "later runs load them from the cache)")


class _FirstCompilation(numba.core.event.Listener):
    def __init__(self, say):
        self.say = say
        self.said = False

    def on_start(self, event):
        if not self.said:
            self.said = True
            self.say(COMPILATION_NOTICE)

    def on_end(self, event):
        pass


def announce_first_compilation(say):
    """Call say(COMPILATION_NOTICE) once, when numba starts compiling a kernel that its cache does not
    hold (numba's "numba:compile" event comes after the cache lookup, so loading says nothing).
    Returns the listener (numba.core.event.unregister("numba:compile", it) removes it)."""
    listener = _FirstCompilation(say)
    numba.core.event.register("numba:compile", listener)
    return listener


def _own_copies_of_callees(optimize_final_module):
    """Wrap numba's CPUCodeLibrary._optimize_final_module: once a graindem library's module is
    optimised, the callees linked into it (linkonce_odr: one name shared across the JIT's modules)
    become internal to its machine code; the module that callers link in keeps numba's linkage.

    Why: numba links the optimised module of every njit callee into its caller's module and
    optimises the whole again, so each kernel exists twice: in its own library and as the caller's
    copy, and with fastmath flags the two copies can round differently. Which copy a call reaches
    would depend on the process: one that compiles afresh loads each callee's own library first, and
    the JIT binds the caller's calls to that earlier definition of the shared name; one that loads
    the caller from numba's cache runs the caller's copies. A run and its restart in a new process
    would then part in the last bits (turning fastmath off in one kernel does not prevent it: its
    inlined helpers keep their flags). With internal copies every process runs the caller's copies,
    the code the cache holds; optimisation is untouched (internalised after it), so is the speed."""
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
