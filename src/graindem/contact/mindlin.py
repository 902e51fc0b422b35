"""Tangential law 'mindlin' (placeholder: being written)."""

from .._jit import njit


@njit
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    raise NotImplementedError("tangential law 'mindlin' is not implemented yet")
