"""One place for the numba compilation options used by every kernel.

`cache=True` is mandatory (a cold compile costs tens of seconds). fastmath is given as an explicit
flag set *without* 'nnan' and 'ninf': kernels test for non-finite input and must keep those tests.
`error_model='numpy'` drops the zero-division check on every '/', and is safe because every
division in the kernels is guarded by the algorithm itself.
"""

import numba

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}


def njit(*args, **kwargs):
    """`numba.njit` with graindem's defaults (cache, safe fastmath, numpy error model)."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("fastmath", FASTMATH)
    kwargs.setdefault("error_model", "numpy")
    if args and callable(args[0]):
        return numba.njit(**kwargs)(args[0])
    return numba.njit(*args, **kwargs)
