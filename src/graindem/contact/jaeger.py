"""Tangential law 'jaeger' (placeholder: being written)."""

from .._jit import njit


@njit
def step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    raise NotImplementedError("tangential law 'jaeger' is not implemented yet")
