"""Tangential law 'md_incremental' (placeholder: being written)."""

from .._jit import njit


@njit
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    raise NotImplementedError("tangential law 'md_incremental' is not implemented yet")
