"""Deformation modes Φ_α(X) in a grain's body frame, and the generalized mass and stiffness.

A grain deforms as u(X) = Σ_α ε_α Φ_α(X) (Henzel & Karapiperis, eq. 1), with X the undeformed
body-frame position. A mode answers two questions at any set of points: its displacement per unit
amplitude, shape (n, 3), and its gradient ∂Φ_i/∂X_j, shape (n, 3, 3) (for the strain in eq. 4).

Generalized mass and stiffness (their eqs. 8 and 4) are integrated over the grain's reference volume,
described by its signed distance φ0: a cell-centred quadrature grid finer than the level-set grid,
each point weighted by a smoothed Heaviside H(−φ0) of half-width of the order of the quadrature
spacing (so the smoothing error vanishes as the quadrature is refined).
"""

import numpy as np

from graindem.core.grid import trilinear_points
from graindem.deform.grid import GridField, as_points


class Mode:
    """Base class: subclasses provide `displacement` and may override `gradient`."""

    #: step of the central differences used by the default `gradient`, in body-frame length units
    fd_step = 1e-4

    def displacement(self, points):
        raise NotImplementedError

    def __call__(self, points):
        return self.displacement(points)

    def gradient(self, points):
        """∂Φ_i/∂X_j by central differences (exact enough for smooth modes: error O(fd_step²))."""
        pts = as_points(points)
        grad = np.empty((pts.shape[0], 3, 3))
        h = self.fd_step
        for j in range(3):
            step = np.zeros(3)
            step[j] = h
            grad[:, :, j] = (self.displacement(pts + step) - self.displacement(pts - step)) / (2.0 * h)
        return grad


class AnalyticMode(Mode):
    """A mode given as a Python callable ``func(points (n,3)) -> (n,3)``, optionally with its gradient."""

    def __init__(self, func, gradient=None, fd_step=1e-4):
        if not callable(func):
            raise ValueError("func must be callable: points (n, 3) -> displacement (n, 3)")
        if gradient is not None and not callable(gradient):
            raise ValueError("gradient must be None or callable: points (n, 3) -> (n, 3, 3)")
        if not fd_step > 0:
            raise ValueError(f"fd_step must be > 0, got {fd_step}")
        self._func = func
        self._gradient = gradient
        self.fd_step = float(fd_step)

    def displacement(self, points):
        pts = as_points(points)
        out = np.asarray(self._func(pts), dtype=np.float64).reshape(pts.shape[0], 3)
        return out

    def gradient(self, points):
        if self._gradient is None:
            return super().gradient(points)
        pts = as_points(points)
        return np.asarray(self._gradient(pts), dtype=np.float64).reshape(pts.shape[0], 3, 3)


class BeamBendingMode(Mode):
    """First bending mode of a simply supported beam (the seed's eq. 51), normalized to the mid-span.

    The beam lies along body x from ``x_start`` to ``x_start + length``, bends in the x–z plane, and
    its neutral axis is at z = ``z_neutral``. Euler–Bernoulli kinematics (plane sections stay plane
    and normal to the deflected axis) with deflection w(x) = −sin(π ξ / L), ξ = x − x_start:

        Φ_z = w = −sin(π ξ/L),   Φ_x = −(z − z0) w'(x) = (z − z0) (π/L) cos(π ξ/L),   Φ_y = 0,

    the simply supported beam's fundamental vibration mode (sin(π ξ/L) satisfies w = w'' = 0 at both
    ends). Φ_z(mid-span) = −1, so a positive amplitude is a downward mid-span deflection of ε.
    """

    def __init__(self, length, x_start=None, z_neutral=0.0):
        if not length > 0:
            raise ValueError(f"length must be > 0, got {length}")
        self.length = float(length)
        self.x_start = -0.5 * self.length if x_start is None else float(x_start)
        self.z_neutral = float(z_neutral)

    def displacement(self, points):
        pts = as_points(points)
        k = np.pi / self.length
        xi = pts[:, 0] - self.x_start
        out = np.zeros_like(pts)
        out[:, 0] = (pts[:, 2] - self.z_neutral) * k * np.cos(k * xi)
        out[:, 2] = -np.sin(k * xi)
        return out

    def gradient(self, points):
        pts = as_points(points)
        k = np.pi / self.length
        xi = pts[:, 0] - self.x_start
        grad = np.zeros((pts.shape[0], 3, 3))
        grad[:, 0, 0] = -(pts[:, 2] - self.z_neutral) * k * k * np.sin(k * xi)
        grad[:, 0, 2] = k * np.cos(k * xi)
        grad[:, 2, 0] = -k * np.cos(k * xi)
        return grad


class GridMode(Mode):
    """A numerical mode tabulated on a regular body-frame grid, interpolated trilinearly.

    ``values`` has shape (nx, ny, nz, 3). Outside the grid the boundary cells are extrapolated
    linearly, which is how the field is continued into the exterior for the level-set pull-back.
    """

    def __init__(self, values, origin, spacing):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 4 or values.shape[-1] != 3:
            raise ValueError(f"values must have shape (nx, ny, nz, 3), got {values.shape}")
        self.components = [GridField(np.ascontiguousarray(values[..., c]), origin, spacing)
                           for c in range(3)]
        self.origin = self.components[0].origin
        self.spacing = self.components[0].spacing

    @property
    def values(self):
        return np.stack([c.values for c in self.components], axis=-1)

    def displacement(self, points):
        pts = as_points(points)
        out = np.empty((pts.shape[0], 3))
        tmp = np.empty(pts.shape[0])
        none = np.empty((0, 3))
        for c, field in enumerate(self.components):
            trilinear_points(field.values, field.origin, field.spacing, pts, tmp, none)
            out[:, c] = tmp
        return out

    def gradient(self, points):
        pts = as_points(points)
        grad = np.empty((pts.shape[0], 3, 3))
        tmp = np.empty((pts.shape[0], 3))
        none = np.empty(0)
        for c, field in enumerate(self.components):
            trilinear_points(field.values, field.origin, field.spacing, pts, none, tmp)
            grad[:, c, :] = tmp
        return grad

    @classmethod
    def from_scattered(cls, points, displacements, origin, shape, spacing):
        """Tabulate a field known at scattered points (e.g. FEM nodes) onto a grid.

        Inside the convex hull of the points the field is interpolated linearly (Delaunay); outside
        it takes the value of the nearest point (a constant extension along the nearest direction,
        used only near the surface for the level-set pull-back).
        """
        from scipy.interpolate import LinearNDInterpolator, NearestNDInterpolator

        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        displacements = np.asarray(displacements, dtype=np.float64).reshape(-1, 3)
        if points.shape[0] != displacements.shape[0]:
            raise ValueError("points and displacements must have the same number of rows")
        shape = tuple(int(s) for s in shape)
        if len(shape) != 3 or min(shape) < 2:
            raise ValueError(f"shape must be three node counts >= 2, got {shape}")
        origin = np.asarray(origin, dtype=np.float64).reshape(3)
        axes = [origin[d] + spacing * np.arange(shape[d]) for d in range(3)]
        nodes = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        linear = LinearNDInterpolator(points, displacements)(nodes)
        missing = np.isnan(linear[:, 0])
        if np.any(missing):
            linear[missing] = NearestNDInterpolator(points, displacements)(nodes[missing])
        return cls(linear.reshape(shape + (3,)), origin, spacing)


def grid_modes_from_file(path, grid):
    """All modes of a graindem mode file (the FEM extraction's HDF5 format, docs/mode-file.md),
    tabulated at the nodes of ``grid`` (a `GridField` in the same body frame) as `GridMode` objects.

    The file's own interpolation is used (barycentric in its tetrahedra, closest-point continuation
    outside the mesh), so the grid modes agree with the file at every grid node.
    """
    from graindem.fem import read_mode_file

    mode_set = read_mode_file(path)
    values = mode_set.evaluate(grid.node_positions().reshape(-1, 3))  # (A, n, 3)
    return [GridMode(v.reshape(grid.shape + (3,)), grid.origin, grid.spacing) for v in values]


def tabulate_modes(modes, grid):
    """Mode values at every node of ``grid`` (a `GridField`): array (n_modes, nx, ny, nz, 3).

    Kernels that evaluate u only at grid nodes (the semi-Lagrangian pull-back at cell corners) read
    this table, so no interpolation of the mode is needed there.
    """
    nodes = grid.node_positions().reshape(-1, 3)
    table = np.empty((len(modes),) + grid.shape + (3,))
    for a, mode in enumerate(modes):
        table[a] = mode.displacement(nodes).reshape(grid.shape + (3,))
    return table


def displacement(modes, amplitudes, points):
    """u(X) = Σ_α ε_α Φ_α(X) at ``points``."""
    pts = as_points(points)
    amplitudes = np.asarray(amplitudes, dtype=np.float64).reshape(-1)
    if amplitudes.size != len(modes):
        raise ValueError(f"amplitudes must have one entry per mode ({len(modes)}), got {amplitudes.size}")
    out = np.zeros_like(pts)
    for eps, mode in zip(amplitudes, modes):
        if eps != 0.0:
            out += eps * mode.displacement(pts)
    return out


# --------------------------------------------------------------------------------------------------
# Generalized mass and stiffness by integration over the level set


def smoothed_heaviside(s, width):
    """H(s) rising from 0 at s = −width to 1 at s = +width (sine-smoothed, C¹)."""
    s = np.asarray(s, dtype=np.float64)
    out = np.where(s > 0.0, 1.0, 0.0)
    band = np.abs(s) < width
    sb = s[band] / width
    out[band] = 0.5 * (1.0 + sb + np.sin(np.pi * sb) / np.pi)
    return out


def _quadrature(phi, lo, hi, quad_spacing, smoothing_width, chunk=200_000):
    """Yield (points, weights) chunks of the smoothed-Heaviside volume quadrature of {φ < 0}."""
    lo = np.asarray(lo, dtype=np.float64).reshape(3)
    hi = np.asarray(hi, dtype=np.float64).reshape(3)
    if np.any(hi <= lo):
        raise ValueError(f"bounds must satisfy lo < hi on every axis, got lo={lo}, hi={hi}")
    if not quad_spacing > 0:
        raise ValueError(f"quad_spacing must be > 0, got {quad_spacing}")
    counts = np.ceil((hi - lo) / quad_spacing).astype(int)
    axes = [lo[d] + quad_spacing * (np.arange(counts[d]) + 0.5) for d in range(3)]
    cell = quad_spacing ** 3
    # slabs along x keep memory bounded for large grains
    per_slab = max(1, chunk // (counts[1] * counts[2]))
    for start in range(0, counts[0], per_slab):
        xs = axes[0][start:start + per_slab]
        pts = np.stack(np.meshgrid(xs, axes[1], axes[2], indexing="ij"), axis=-1).reshape(-1, 3)
        values = np.asarray(phi(pts), dtype=np.float64)
        if hasattr(phi, "gradient"):
            # A trilinear φ is compressed near edges (|∇φ| < 1 in the cells next to a kink); the
            # distance to the zero set is φ/|∇φ| to first order, which keeps the band width uniform.
            norm = np.linalg.norm(phi.gradient(pts), axis=1)
            values = values / np.maximum(norm, 1e-12)
        h = smoothed_heaviside(-values, smoothing_width)
        keep = h > 0.0
        if np.any(keep):
            yield pts[keep], h[keep] * cell


def _bounds_of(phi, bounds):
    if bounds is not None:
        lo, hi = bounds
        return np.asarray(lo, float), np.asarray(hi, float)
    if isinstance(phi, GridField):
        return phi.origin, phi.upper
    raise ValueError("bounds=(lo, hi) is required when phi is not a GridField")


def _check_quadrature_args(quad_spacing, smoothing_width):
    if not quad_spacing > 0:
        raise ValueError(f"quad_spacing must be > 0, got {quad_spacing}")
    width = 1.5 * quad_spacing if smoothing_width is None else float(smoothing_width)
    if not width > 0:
        raise ValueError(f"smoothing_width must be > 0, got {smoothing_width}")
    return width


def volume(phi, bounds=None, quad_spacing=0.25, smoothing_width=None):
    """Volume of {φ < 0} with the same quadrature as the generalized matrices (a check of it)."""
    width = _check_quadrature_args(quad_spacing, smoothing_width)
    lo, hi = _bounds_of(phi, bounds)
    return sum(w.sum() for _, w in _quadrature(phi, lo, hi, quad_spacing, width))


def generalized_mass(modes, phi, density, bounds=None, quad_spacing=0.25, smoothing_width=None):
    """M_αβ = ∫ ρ Φ_α·Φ_β dV over {φ < 0} (the seed's eq. 8). ``density`` is a number or ρ(points)."""
    width = _check_quadrature_args(quad_spacing, smoothing_width)
    if not callable(density) and not float(density) > 0:
        raise ValueError(f"density must be > 0 (or a callable), got {density}")
    lo, hi = _bounds_of(phi, bounds)
    n = len(modes)
    mass = np.zeros((n, n))
    for pts, w in _quadrature(phi, lo, hi, quad_spacing, width):
        rho = density(pts) if callable(density) else float(density)
        values = np.stack([m.displacement(pts) for m in modes])  # (n, q, 3)
        weighted = values * (rho * w)[None, :, None]
        mass += np.einsum("aqi,bqi->ab", weighted, values)
    return 0.5 * (mass + mass.T)


def lame_parameters(youngs, poisson):
    """(λ, μ) of an isotropic solid; raises for E <= 0 or ν outside (−1, 0.5)."""
    if not youngs > 0:
        raise ValueError(f"youngs must be > 0, got {youngs}")
    if not -1.0 < poisson < 0.5:
        raise ValueError(f"poisson must be in (-1, 0.5), got {poisson}")
    mu = youngs / (2.0 * (1.0 + poisson))
    lam = youngs * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
    return lam, mu


def generalized_stiffness(modes, phi, youngs, poisson, bounds=None, quad_spacing=0.25,
                          smoothing_width=None):
    """K_αβ = ∫ (C:E(Φ_α)):E(Φ_β) dV over {φ < 0} for an isotropic linear-elastic grain (eq. 4).

    With E = sym ∇Φ, (C:E_α):E_β = λ tr E_α tr E_β + 2μ E_α:E_β.
    """
    width = _check_quadrature_args(quad_spacing, smoothing_width)
    lam, mu = lame_parameters(youngs, poisson)
    lo, hi = _bounds_of(phi, bounds)
    n = len(modes)
    stiffness = np.zeros((n, n))
    for pts, w in _quadrature(phi, lo, hi, quad_spacing, width):
        grads = np.stack([m.gradient(pts) for m in modes])  # (n, q, 3, 3)
        strain = 0.5 * (grads + np.swapaxes(grads, -1, -2))
        trace = np.einsum("aqii->aq", strain)
        stiffness += lam * np.einsum("aq,bq,q->ab", trace, trace, w)
        stiffness += 2.0 * mu * np.einsum("aqij,bqij,q->ab", strain, strain, w)
    return 0.5 * (stiffness + stiffness.T)
