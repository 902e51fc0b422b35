"""Trilinear interpolation on a regular grid: the one kernel every level set and grid field uses.

A grid holds values at nodes origin + h (i, j, k), i < nx, j < ny, k < nz, stored flat in C order
from an offset (so many templates share one array). The interpolant inside cell (i, j, k) is the
trilinear polynomial of its 8 corner values; its gradient is that polynomial's gradient.

One rule outside the grid: the polynomial of the nearest boundary cell, evaluated at the point
(linear extrapolation along each axis). Why this rule and not another:
- value and gradient are continuous across the grid's boundary (it is the same polynomial), so a
  point that leaves the grid sees no jump, and Newton iterations near the boundary behave;
- it means the right thing for every field a grid holds: signed distances (they keep growing away
  from a grain whose grid has a margin), and displacement modes, where adding a distance or
  returning infinity would be wrong;
- the kernel also says whether the point was inside, so a caller that needs a different decision
  there (a contact query: a point outside a grain's grid is not in contact with it, since the grid's
  margin holds every penetration) makes it itself, in one visible place.
"""

import math

import numpy as np

from .._jit import njit


@njit(inline="always")
def trilinear(values, off, nx, ny, nz, ox, oy, oz, h, px, py, pz):
    """(value, d/dx, d/dy, d/dz, inside) of the interpolant at point p (module docstring)."""
    ux = (px - ox) / h
    uy = (py - oy) / h
    uz = (pz - oz) / h
    inside = 0.0 <= ux <= nx - 1 and 0.0 <= uy <= ny - 1 and 0.0 <= uz <= nz - 1
    i = min(max(int(math.floor(ux)), 0), nx - 2)
    j = min(max(int(math.floor(uy)), 0), ny - 2)
    k = min(max(int(math.floor(uz)), 0), nz - 2)
    fx = ux - i
    fy = uy - j
    fz = uz - k
    sy = nz
    sx = ny * nz
    b = off + i * sx + j * sy + k
    c000 = values[b]
    c001 = values[b + 1]
    c010 = values[b + sy]
    c011 = values[b + sy + 1]
    c100 = values[b + sx]
    c101 = values[b + sx + 1]
    c110 = values[b + sx + sy]
    c111 = values[b + sx + sy + 1]
    c00 = c000 + (c100 - c000) * fx
    c01 = c001 + (c101 - c001) * fx
    c10 = c010 + (c110 - c010) * fx
    c11 = c011 + (c111 - c011) * fx
    c0 = c00 + (c10 - c00) * fy
    c1 = c01 + (c11 - c01) * fy
    val = c0 + (c1 - c0) * fz
    gz = (c1 - c0) / h
    gy = ((c10 - c00) * (1.0 - fz) + (c11 - c01) * fz) / h
    d00 = c100 - c000
    d01 = c101 - c001
    d10 = c110 - c010
    d11 = c111 - c011
    gx = ((d00 + (d10 - d00) * fy) * (1.0 - fz) + (d01 + (d11 - d01) * fy) * fz) / h
    return val, gx, gy, gz, inside


@njit
def trilinear_points(values, origin, h, points, value_out, gradient_out):
    """The interpolant of the grid `values` (nx, ny, nz) at many points (m, 3): value_out (m,) and
    gradient_out (m, 3); either may be empty (length 0) when it is not wanted."""
    nx, ny, nz = values.shape
    flat = values.reshape(-1)
    want_v = value_out.shape[0] > 0
    want_g = gradient_out.shape[0] > 0
    for m in range(points.shape[0]):
        v, gx, gy, gz, _ = trilinear(flat, 0, nx, ny, nz, origin[0], origin[1], origin[2], h,
                                     points[m, 0], points[m, 1], points[m, 2])
        if want_v:
            value_out[m] = v
        if want_g:
            gradient_out[m, 0] = gx
            gradient_out[m, 1] = gy
            gradient_out[m, 2] = gz


def interpolate(values, origin, spacing, points, with_gradient=False):
    """Python entry: value (m,) (and gradient (m, 3)) of the interpolant at points (m, 3)."""
    grid = np.ascontiguousarray(values, dtype=np.float64)
    pts = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))
    origin = np.ascontiguousarray(np.asarray(origin, dtype=np.float64).reshape(3))
    v = np.empty(pts.shape[0])
    g = np.empty((pts.shape[0] if with_gradient else 0, 3))
    trilinear_points(grid, origin, float(spacing), pts, v, g)
    return (v, g) if with_gradient else v
