"""A regular grid in a grain's body frame and trilinear sampling of fields stored on it.

This is the smallest piece the deformable grains need from a level-set grain: a signed-distance
array φ (negative inside) on nodes ``origin + spacing * (i, j, k)``, sampled trilinearly
(`graindem.core.grid`, which also fixes the rule outside the grid). It is kept
local (and tiny) so that `graindem.deform` does not wait for `graindem.particles.levelset`; any object
with ``values``, ``origin`` and ``spacing`` attributes (the shared `LevelSetGrain` has the same
meaning) can be wrapped with `GridField.from_levelset`.
"""

from dataclasses import dataclass

import numpy as np

from graindem.core.grid import interpolate


def as_points(points):
    """points as a C-contiguous float64 (m, 3) array."""
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
        pts = as_points(points)
        return interpolate(self.values, self.origin, self.spacing, pts)

    def gradient(self, points):
        pts = as_points(points)
        return interpolate(self.values, self.origin, self.spacing, pts, with_gradient=True)[1]

    @property
    def nbytes(self):
        return self.values.nbytes
