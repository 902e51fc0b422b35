"""A regular grid in a grain's body frame and trilinear sampling of fields stored on it.

This is the smallest piece the deformable grains need from a level-set grain: a signed-distance
array φ (negative inside) on nodes ``origin + spacing * (i, j, k)``, sampled trilinearly. It is kept
local (and tiny) so that `graindem.deform` does not wait for `graindem.particles.levelset`; any object
with ``values``, ``origin`` and ``spacing`` attributes (the shared `LevelSetGrain` has the same
meaning) can be wrapped with `GridField.from_levelset`.
"""

from dataclasses import dataclass

import numpy as np

from graindem._jit import njit


@njit
def trilinear_at(values, ox, oy, oz, h, px, py, pz):
    """Trilinear interpolant of ``values`` (grid origin (ox, oy, oz), spacing h) at one point."""
    nx, ny, nz = values.shape
    gx = (px - ox) / h
    gy = (py - oy) / h
    gz = (pz - oz) / h
    i = min(max(int(np.floor(gx)), 0), nx - 2)
    j = min(max(int(np.floor(gy)), 0), ny - 2)
    k = min(max(int(np.floor(gz)), 0), nz - 2)
    tx = gx - i
    ty = gy - j
    tz = gz - k
    c00 = values[i, j, k] * (1.0 - tx) + values[i + 1, j, k] * tx
    c10 = values[i, j + 1, k] * (1.0 - tx) + values[i + 1, j + 1, k] * tx
    c01 = values[i, j, k + 1] * (1.0 - tx) + values[i + 1, j, k + 1] * tx
    c11 = values[i, j + 1, k + 1] * (1.0 - tx) + values[i + 1, j + 1, k + 1] * tx
    c0 = c00 * (1.0 - ty) + c10 * ty
    c1 = c01 * (1.0 - ty) + c11 * ty
    return c0 * (1.0 - tz) + c1 * tz


@njit
def trilinear_kernel(values, origin, spacing, points, out):
    """Trilinear interpolation of ``values`` (nx, ny, nz) at ``points`` (n, 3) into ``out`` (n,).

    Points outside the grid are extrapolated linearly from the nearest boundary cell: a signed
    distance keeps growing away from the grain, which is what a contact query there expects.
    """
    for p in range(points.shape[0]):
        out[p] = trilinear_at(values, origin[0], origin[1], origin[2], spacing,
                              points[p, 0], points[p, 1], points[p, 2])


@njit
def trilinear_gradient_kernel(values, origin, spacing, points, out):
    """Gradient (n, 3) of the trilinear interpolant of ``values`` at ``points``."""
    nx, ny, nz = values.shape
    for p in range(points.shape[0]):
        gx = (points[p, 0] - origin[0]) / spacing
        gy = (points[p, 1] - origin[1]) / spacing
        gz = (points[p, 2] - origin[2]) / spacing
        i = min(max(int(np.floor(gx)), 0), nx - 2)
        j = min(max(int(np.floor(gy)), 0), ny - 2)
        k = min(max(int(np.floor(gz)), 0), nz - 2)
        tx = gx - i
        ty = gy - j
        tz = gz - k
        v000 = values[i, j, k]
        v100 = values[i + 1, j, k]
        v010 = values[i, j + 1, k]
        v110 = values[i + 1, j + 1, k]
        v001 = values[i, j, k + 1]
        v101 = values[i + 1, j, k + 1]
        v011 = values[i, j + 1, k + 1]
        v111 = values[i + 1, j + 1, k + 1]
        dx = ((v100 - v000) * (1 - ty) * (1 - tz) + (v110 - v010) * ty * (1 - tz)
              + (v101 - v001) * (1 - ty) * tz + (v111 - v011) * ty * tz)
        dy = ((v010 - v000) * (1 - tx) * (1 - tz) + (v110 - v100) * tx * (1 - tz)
              + (v011 - v001) * (1 - tx) * tz + (v111 - v101) * tx * tz)
        dz = ((v001 - v000) * (1 - tx) * (1 - ty) + (v101 - v100) * tx * (1 - ty)
              + (v011 - v010) * (1 - tx) * ty + (v111 - v110) * tx * ty)
        out[p, 0] = dx / spacing
        out[p, 1] = dy / spacing
        out[p, 2] = dz / spacing


def _as_points(points):
    pts = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))
    return pts


@dataclass
class GridField:
    """A scalar field on a regular grid in the body frame (typically the signed distance φ0)."""

    values: np.ndarray
    origin: np.ndarray
    spacing: float

    def __post_init__(self):
        self.values = np.ascontiguousarray(self.values, dtype=np.float64)
        if self.values.ndim != 3 or min(self.values.shape) < 2:
            raise ValueError(f"values must be a 3-D array with at least 2 nodes per axis, got shape "
                             f"{self.values.shape}")
        self.origin = np.ascontiguousarray(np.asarray(self.origin, dtype=np.float64).reshape(3))
        self.spacing = float(self.spacing)
        if not self.spacing > 0.0:
            raise ValueError(f"spacing must be > 0, got {self.spacing}")

    @classmethod
    def from_levelset(cls, grain):
        """Wrap any level-set grain that exposes ``values``/``phi_grid``, ``origin`` and ``spacing``."""
        values = getattr(grain, "values", None)
        if values is None:
            values = getattr(grain, "phi_grid")
        return cls(np.asarray(values), np.asarray(grain.origin), float(grain.spacing))

    @classmethod
    def sample(cls, func, lo, hi, spacing):
        """Tabulate ``func(points)`` on the nodes covering the box [lo, hi] (inclusive, padded up)."""
        lo = np.asarray(lo, dtype=np.float64)
        hi = np.asarray(hi, dtype=np.float64)
        counts = np.ceil((hi - lo) / spacing - 1e-9).astype(int) + 1
        axes = [lo[d] + spacing * np.arange(counts[d]) for d in range(3)]
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
        values = np.asarray(func(mesh.reshape(-1, 3)), dtype=np.float64).reshape(tuple(counts))
        return cls(values, lo, spacing)

    @property
    def shape(self):
        return self.values.shape

    @property
    def upper(self):
        return self.origin + self.spacing * (np.asarray(self.values.shape) - 1)

    def node_positions(self):
        """All node positions, shape (nx, ny, nz, 3)."""
        axes = [self.origin[d] + self.spacing * np.arange(self.values.shape[d]) for d in range(3)]
        return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)

    def __call__(self, points):
        pts = _as_points(points)
        out = np.empty(pts.shape[0])
        trilinear_kernel(self.values, self.origin, self.spacing, pts, out)
        return out

    def gradient(self, points):
        pts = _as_points(points)
        out = np.empty((pts.shape[0], 3))
        trilinear_gradient_kernel(self.values, self.origin, self.spacing, pts, out)
        return out

    @property
    def nbytes(self):
        return self.values.nbytes
