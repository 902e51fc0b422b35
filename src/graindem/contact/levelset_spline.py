"""A twice-differentiable interpolant of a level-set grid: the tricubic B-spline through the samples.

The trilinear interpolant the node law uses has no second derivatives (its Hessian is zero inside a
cell and undefined on cell faces) and its zero level set is off the sampled surface by ~h^2/(8R),
which is of the order of a DEM overlap at h = R/12. The cubic B-spline that interpolates the grid
values is C2, reproduces cubics, and is fourth-order accurate in the value and second-order in the
Hessian, which is what the contact point (position to a small fraction of the overlap) and the
principal curvatures need.

Coefficients: `spline_coefficients(phi_grid, grid_origin, spacing)`, computed once per template. The
grid is first extended by PAD_CELLS cells on every side by odd reflection about its faces (2 f_0 - f_k,
which continues a signed distance with its slope) and then prefiltered (scipy.ndimage.spline_filter,
order 3, mirror boundary). Prefiltering is a recursive filter whose influence decays as 0.268^k
cells: a mirror boundary right at the grid face puts a slope kink there (phi grows outward on both
sides), which measured 2e-5 R in phi and 2.5 % in the curvature of a sphere at h = R/12; the padding
moves the kink away (then 6e-7 R and 0.13 %, falling as h^4 and h^2).
Evaluation (`spline_eval`) uses the 4 x 4 x 4 coefficients around a point; it is defined where that
support lies inside the (padded) coefficient grid, i.e. for coefficient-grid coordinates u in
[1, n - 2) on each axis.
"""

import numpy as np
from scipy import ndimage

from .._jit import njit


PAD_CELLS = 8


def spline_coefficients(phi_grid, grid_origin, spacing):
    """(coef, coef_origin): B-spline coefficients (C-contiguous float64, the grid padded by PAD_CELLS
    per side) of the interpolating tricubic spline through the grid values, and the body point of
    coefficient index (0, 0, 0)."""
    phi = np.asarray(phi_grid, dtype=np.float64)
    if phi.ndim != 3 or min(phi.shape) <= PAD_CELLS:
        raise ValueError(f"phi_grid must be a 3-D array with > {PAD_CELLS} points per axis, got shape {phi.shape}")
    padded = np.pad(phi, PAD_CELLS, mode="reflect", reflect_type="odd")
    coef = np.ascontiguousarray(ndimage.spline_filter(padded, order=3, mode="mirror", output=np.float64))
    origin = np.asarray(grid_origin, dtype=np.float64).reshape(3) - PAD_CELLS * float(spacing)
    return coef, origin


@njit(inline="always")
def _weights(t):
    """Cubic B-spline weights of the 4 coefficients i-1..i+2 at fraction t."""
    s = 1.0 - t
    t2 = t * t
    t3 = t2 * t
    return ((s * s * s) / 6.0, (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0, (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0,
            t3 / 6.0)


@njit(inline="always")
def _all_weights(t, W, axis):
    """Weights (W[axis, 0]) and their first (W[axis, 1]) and second (W[axis, 2]) derivatives in t."""
    s = 1.0 - t
    t2 = t * t
    t3 = t2 * t
    W[axis, 0, 0] = s * s * s / 6.0
    W[axis, 0, 1] = (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0
    W[axis, 0, 2] = (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0
    W[axis, 0, 3] = t3 / 6.0
    W[axis, 1, 0] = -0.5 * s * s
    W[axis, 1, 1] = 1.5 * t2 - 2.0 * t
    W[axis, 1, 2] = -1.5 * t2 + t + 0.5
    W[axis, 1, 3] = 0.5 * t2
    W[axis, 2, 0] = s
    W[axis, 2, 1] = 3.0 * t - 2.0
    W[axis, 2, 2] = 1.0 - 3.0 * t
    W[axis, 2, 3] = t


@njit
def spline_value(coef, ox, oy, oz, h, px, py, pz):
    """(phi, inside) of the spline at body point p; inside = False where it is not defined (phi = inf)."""
    nx, ny, nz = coef.shape
    ux = (px - ox) / h
    uy = (py - oy) / h
    uz = (pz - oz) / h
    if not (1.0 <= ux < nx - 2.0 and 1.0 <= uy < ny - 2.0 and 1.0 <= uz < nz - 2.0):
        return np.inf, False
    i = int(ux)
    j = int(uy)
    k = int(uz)
    wx = _weights(ux - i)
    wy = _weights(uy - j)
    wz = _weights(uz - k)
    v = 0.0
    for a in range(4):
        for b in range(4):
            s = 0.0
            for c in range(4):
                s += wz[c] * coef[i - 1 + a, j - 1 + b, k - 1 + c]
            v += wx[a] * wy[b] * s
    return v, True


@njit
def spline_eval(coef, ox, oy, oz, h, px, py, pz):
    """phi of the spline at body point p with its gradient and Hessian:
    (phi, gx, gy, gz, hxx, hyy, hzz, hxy, hxz, hyz, inside); where the spline is not defined
    (inside = False) phi = inf and the derivatives are 0.
    """
    nx, ny, nz = coef.shape
    ux = (px - ox) / h
    uy = (py - oy) / h
    uz = (pz - oz) / h
    if not (1.0 <= ux < nx - 2.0 and 1.0 <= uy < ny - 2.0 and 1.0 <= uz < nz - 2.0):
        return np.inf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False
    i = int(ux)
    j = int(uy)
    k = int(uz)
    # weights in an array: numba indexes a small array with a loop variable far faster than a tuple
    W = np.empty((3, 3, 4))
    _all_weights(ux - i, W, 0)
    _all_weights(uy - j, W, 1)
    _all_weights(uz - k, W, 2)
    flat = coef.reshape(nx * ny * nz)
    sy = nz
    sx = ny * nz
    base = (i - 1) * sx + (j - 1) * sy + (k - 1)
    v = gx = gy = gz = hxx = hyy = hzz = hxy = hxz = hyz = 0.0
    for a in range(4):
        wxa = W[0, 0, a]
        dxa = W[0, 1, a]
        ddxa = W[0, 2, a]
        for b in range(4):
            o = base + a * sx + b * sy
            q0 = flat[o]
            q1 = flat[o + 1]
            q2 = flat[o + 2]
            q3 = flat[o + 3]
            s0 = W[2, 0, 0] * q0 + W[2, 0, 1] * q1 + W[2, 0, 2] * q2 + W[2, 0, 3] * q3
            s1 = W[2, 1, 0] * q0 + W[2, 1, 1] * q1 + W[2, 1, 2] * q2 + W[2, 1, 3] * q3
            s2 = W[2, 2, 0] * q0 + W[2, 2, 1] * q1 + W[2, 2, 2] * q2 + W[2, 2, 3] * q3
            wyb = W[1, 0, b]
            dyb = W[1, 1, b]
            wab = wxa * wyb
            v += wab * s0
            gx += dxa * wyb * s0
            gy += wxa * dyb * s0
            gz += wab * s1
            hxx += ddxa * wyb * s0
            hyy += wxa * W[1, 2, b] * s0
            hzz += wab * s2
            hxy += dxa * dyb * s0
            hxz += dxa * wyb * s1
            hyz += wxa * dyb * s1
    inv = 1.0 / h
    inv2 = inv * inv
    return (v, gx * inv, gy * inv, gz * inv, hxx * inv2, hyy * inv2, hzz * inv2, hxy * inv2, hxz * inv2,
            hyz * inv2, True)
