"""Keeping a deformed grain's level set current: the seed's four strategies (§3.1), one interface.

Every strategy answers ``query(points) -> (phi, grad)`` for body-frame points of the *current*
(deformed) configuration, after ``update(eps, eps_dot, dt)`` was called with the grain's modal state:

1. `RecomputeLevelSet` (§3.1.1, baseline): the reference surface triangulation is deformed,
   x = X + u(X), and the signed distance to it is recomputed at every grid node (libigl, exact
   point–triangle distance, pseudonormal sign). Grid-wide work every step.
2. `AdvectedLevelSet` (§3.1.2): φ is transported, ∂φ/∂t + v·∇φ = 0, by a first-order upwind scheme
   on a narrow band of grid nodes, with v(x) = Σ ε̇_α Φ_α(x) (the mode field continued outside the
   grain as for the pull-back) and CFL-limited sub-steps. φ is stored clipped to ±(band + 2h): the
   clipped field is transported exactly like the unclipped one (clipping commutes with transport), so
   nodes outside the band hold correct inflow values ±clip and no stale distance leaks into the band.
   Far from the surface φ is therefore only a bound (|φ| >= clip), which no contact query needs.
3. `SemiLagrangianLevelSet` (§3.1.3): no grid-wide update at all. A query at x finds its grid cell,
   pulls each of the 8 corner nodes back, X_c = x_c − u(x_c), samples φ0 there, and interpolates the
   8 values trilinearly at x. u at grid nodes is read from a table of the modes at the nodes, so the
   pull-back needs no interpolation of the mode. Or (``pullback="point"``, not in the seed) x itself
   is pulled back and φ0 sampled at its X, the normal by the chain rule.
4. `TabulatedLevelSet` (§3.1.4): fields φ(ε_α = e_p) recomputed (strategy 1) at sampled amplitudes of
   each mode in a preprocessing step; a query interpolates linearly in ε between the two bracketing
   samples. Several modes superpose their perturbations, φ = φ0 + Σ_α [φ_α(ε_α) − φ0] (the seed's
   eq. 50 with weights that add up to one; exact for one mode, first order for several).

The pull-back x − u(x) (eq. 47) inverts x = X + u(X) only to first order in ∇u: the seed's choice,
kept as the default; ``inverse_iterations=n`` refines it by n fixed-point iterations X ← x − u(X)
(exact inverse where |∇u| < 1, about n + 1 times the query cost) or, with ``inverse_method="newton"``,
n Newton steps with the trilinear field's Jacobian (one step reaches what four to five fixed-point
iterations reach); ``cache=True`` computes each corner once per `update`. The benchmark measures them.
"""

import time

import numpy as np

from graindem._jit import njit
from graindem.core.grid import trilinear_points
from graindem.deform.grid import GridField
from graindem.contact.deformable_contact import displacement_at, inverse_map, pointwise_gradient, pointwise_phi, pullback_phi
from graindem.deform.modes import tabulate_modes


# --------------------------------------------------------------------------------------------------
# kernels


@njit
def _interp_corners(c, tx, ty, tz, h, grad, p):
    """Trilinear value of 8 corner values c[a*4+b*2+d] at (tx, ty, tz), gradient into grad[p]."""
    c00 = c[0] * (1.0 - tx) + c[4] * tx
    c10 = c[2] * (1.0 - tx) + c[6] * tx
    c01 = c[1] * (1.0 - tx) + c[5] * tx
    c11 = c[3] * (1.0 - tx) + c[7] * tx
    c0 = c00 * (1.0 - ty) + c10 * ty
    c1 = c01 * (1.0 - ty) + c11 * ty
    grad[p, 2] = (c1 - c0) / h
    grad[p, 1] = ((c10 - c00) * (1.0 - tz) + (c11 - c01) * tz) / h
    dx0 = (c[4] - c[0]) * (1.0 - ty) + (c[6] - c[2]) * ty
    dx1 = (c[5] - c[1]) * (1.0 - ty) + (c[7] - c[3]) * ty
    grad[p, 0] = (dx0 * (1.0 - tz) + dx1 * tz) / h
    return c0 * (1.0 - tz) + c1 * tz


def grid_query_kernel(values, origin, h, points, out, grad):
    """Plain trilinear φ and ∇φ at points: the query of a rigid grain (and of strategies 1 and 2)."""
    trilinear_points(values, origin, h, points, out, grad)


@njit
def pullback_query_kernel(phi0, origin, h, mode_table, eps, points, out, grad, n_iter, newton, cache, stamp,
                          now):
    """Semi-Lagrangian on-demand remap: φ(x_c) = φ0(X_c), X_c + u(X_c) = x_c, at the 8 corners of x's cell.

    n_iter = 0: the seed's X_c = x_c − u(x_c); n_iter > 0 refines it by fixed-point iterations or Newton
    steps (`graindem.contact.deformable_contact.inverse_map`). With ``now`` > 0, corner values are cached per node
    in ``cache`` with ``stamp`` == now (one update of ε = one stamp), as in the engine.
    """
    for p in range(points.shape[0]):
        v, gx, gy, gz = pullback_phi(phi0, mode_table, eps, origin[0], origin[1], origin[2], h,
                                      points[p, 0], points[p, 1], points[p, 2], n_iter, newton,
                                      cache, stamp, now)
        out[p] = v
        grad[p, 0] = gx
        grad[p, 1] = gy
        grad[p, 2] = gz


@njit
def pointwise_query_kernel(phi0, origin, h, mode_table, eps, points, out, grad, n_iter, newton):
    """Point-wise pull-back: φ(x) = φ0(X), X + u(X) = x, ∇φ(x) = (I + ∇u(X))^{-T} ∇φ0(X)."""
    for p in range(points.shape[0]):
        v, gx, gy, gz, qx, qy, qz = pointwise_phi(phi0, mode_table, eps, origin[0], origin[1], origin[2], h,
                                                  points[p, 0], points[p, 1], points[p, 2], n_iter, newton)
        out[p] = v
        grad[p, 0], grad[p, 1], grad[p, 2] = pointwise_gradient(mode_table, eps, origin[0], origin[1], origin[2],
                                                                h, qx, qy, qz, gx, gy, gz)


@njit
def reference_points_kernel(mode_table, eps, origin, h, points, out, n_iter, newton):
    """X with X + u(X) = x for each point x (first-order start from u at x itself)."""
    inv_h = 1.0 / h
    for p in range(points.shape[0]):
        ux, uy, uz = displacement_at(mode_table, eps, origin[0], origin[1], origin[2], inv_h,
                                     points[p, 0], points[p, 1], points[p, 2])
        out[p, 0], out[p, 1], out[p, 2] = inverse_map(mode_table, eps, origin[0], origin[1], origin[2], inv_h,
                                                      points[p, 0], points[p, 1], points[p, 2], ux, uy, uz,
                                                      n_iter, newton)


@njit
def tabulated_query_kernel(phi0, fields, lower, weight, origin, h, points, out, grad):
    """φ = φ0 + Σ_α [(1 − w_α) φ_α,lower + w_α φ_α,lower+1 − φ0], trilinear in x at each point."""
    nx, ny, nz = phi0.shape
    n_modes = fields.shape[0]
    c = np.empty(8)
    for p in range(points.shape[0]):
        gx = (points[p, 0] - origin[0]) / h
        gy = (points[p, 1] - origin[1]) / h
        gz = (points[p, 2] - origin[2]) / h
        i = min(max(int(np.floor(gx)), 0), nx - 2)
        j = min(max(int(np.floor(gy)), 0), ny - 2)
        k = min(max(int(np.floor(gz)), 0), nz - 2)
        for a in range(2):
            for b in range(2):
                for d in range(2):
                    base = phi0[i + a, j + b, k + d]
                    v = base
                    for m in range(n_modes):
                        lo = lower[m]
                        w = weight[m]
                        v += ((1.0 - w) * fields[m, lo, i + a, j + b, k + d]
                              + w * fields[m, lo + 1, i + a, j + b, k + d] - base)
                    c[a * 4 + b * 2 + d] = v
        out[p] = _interp_corners(c, gx - i, gy - j, gz - k, h, grad, p)


@njit
def advect_band_kernel(phi, phi_new, velocity, band, dt, h):
    """One first-order upwind step of ∂φ/∂t + v·∇φ = 0 on the band nodes (others copied)."""
    nx, ny, nz = phi.shape
    phi_new[:, :, :] = phi
    for q in range(band.shape[0]):
        i = band[q, 0]
        j = band[q, 1]
        k = band[q, 2]
        if i < 1 or j < 1 or k < 1 or i > nx - 2 or j > ny - 2 or k > nz - 2:
            continue
        vx = velocity[i, j, k, 0]
        vy = velocity[i, j, k, 1]
        vz = velocity[i, j, k, 2]
        if vx > 0.0:
            dx = (phi[i, j, k] - phi[i - 1, j, k]) / h
        else:
            dx = (phi[i + 1, j, k] - phi[i, j, k]) / h
        if vy > 0.0:
            dy = (phi[i, j, k] - phi[i, j - 1, k]) / h
        else:
            dy = (phi[i, j + 1, k] - phi[i, j, k]) / h
        if vz > 0.0:
            dz = (phi[i, j, k] - phi[i, j, k - 1]) / h
        else:
            dz = (phi[i, j, k + 1] - phi[i, j, k]) / h
        phi_new[i, j, k] = phi[i, j, k] - dt * (vx * dx + vy * dy + vz * dz)


# --------------------------------------------------------------------------------------------------
# strategies


def _points(points):
    return np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))


class _Strategy:
    """Shared state: reference φ0 (a `GridField`), the modes, the current amplitudes."""

    name = "base"

    def __init__(self, phi0, modes):
        if not isinstance(phi0, GridField):
            phi0 = GridField.from_levelset(phi0)
        if len(modes) == 0:
            raise ValueError("modes must contain at least one mode")
        self.phi0 = phi0
        self.modes = list(modes)
        self.eps = np.zeros(len(self.modes))
        self.update_seconds = 0.0

    def update(self, eps, eps_dot=None, dt=None):
        """Bring the level set to amplitudes ``eps`` (strategy 2 also needs ``eps_dot`` and ``dt``)."""
        eps = np.asarray(eps, dtype=np.float64).reshape(-1)
        if eps.size != len(self.modes):
            raise ValueError(f"eps must have {len(self.modes)} entries, got {eps.size}")
        t0 = time.perf_counter()
        self._update(eps, eps_dot, dt)
        self.update_seconds = time.perf_counter() - t0
        self.eps = eps.copy()

    def _update(self, eps, eps_dot, dt):
        pass

    def query(self, points):
        raise NotImplementedError

    def phi(self, points):
        return self.query(points)[0]

    def memory_bytes(self):
        raise NotImplementedError


class SemiLagrangianLevelSet(_Strategy):
    """Strategy 3: on-demand pull-back (no grid-wide update).

    ``pullback="corners"`` (the seed's form): the 8 corners of each query cell are pulled back and their
    φ0 values interpolated at the query point; ``"point"``: the query point itself is pulled back,
    φ(x) = φ0(X), with ∇φ(x) = (I + ∇u(X))^{-T} ∇φ0(X) (one inversion per query instead of eight).
    ``inverse_iterations`` refine the seed's first-order pull-back by fixed-point iterations
    (``inverse_method="fixed_point"``) or Newton steps (``"newton"``); ``cache=True`` (corners only)
    keeps each node's pulled-back value from its first use until the next `update` (lazy, per node).
    """

    name = "semi_lagrangian"

    def __init__(self, phi0, modes, mode_table=None, inverse_iterations=0, inverse_method="fixed_point",
                 cache=False, pullback="corners"):
        super().__init__(phi0, modes)
        if int(inverse_iterations) != inverse_iterations or inverse_iterations < 0:
            raise ValueError(f"inverse_iterations must be an integer >= 0, got {inverse_iterations}")
        if inverse_method not in ("fixed_point", "newton"):
            raise ValueError(f"inverse_method must be 'fixed_point' or 'newton', got {inverse_method!r}")
        if pullback not in ("corners", "point"):
            raise ValueError(f"pullback must be 'corners' or 'point', got {pullback!r}")
        if pullback == "point" and cache:
            raise ValueError("cache applies to pullback='corners' only (a point-wise pull-back has no grid "
                             "node values to reuse)")
        self.inverse_iterations = int(inverse_iterations)
        self.inverse_method = inverse_method
        self.pullback = pullback
        self.cache = bool(cache)
        if pullback == "point":
            self.name = "semi_lagrangian_point"
        if self.inverse_iterations:
            prefix = "iter" if inverse_method == "fixed_point" else "newton"
            self.name += f"_{prefix}{self.inverse_iterations}"
        if self.cache:
            self.name += "_cached"
        table = tabulate_modes(self.modes, self.phi0) if mode_table is None else mode_table
        self.mode_table = np.ascontiguousarray(table, dtype=np.float64)
        if self.mode_table.shape != (len(self.modes),) + self.phi0.shape + (3,):
            raise ValueError(f"mode_table must have shape {(len(self.modes),) + self.phi0.shape + (3,)}")
        cache_shape = self.phi0.shape if self.cache else (2, 2, 2)
        self._cache_values = np.empty(cache_shape)
        self._cache_stamp = np.zeros(cache_shape, dtype=np.int64)
        self._stamp = 0

    def _update(self, eps, eps_dot, dt):
        if self.cache:
            self._stamp += 1

    def query(self, points):
        pts = _points(points)
        out = np.empty(pts.shape[0])
        grad = np.empty((pts.shape[0], 3))
        if self.pullback == "point":
            pointwise_query_kernel(self.phi0.values, self.phi0.origin, self.phi0.spacing, self.mode_table, self.eps,
                                   pts, out, grad, self.inverse_iterations, self.inverse_method == "newton")
            return out, grad
        pullback_query_kernel(self.phi0.values, self.phi0.origin, self.phi0.spacing, self.mode_table,
                              self.eps, pts, out, grad, self.inverse_iterations,
                              self.inverse_method == "newton", self._cache_values, self._cache_stamp,
                              self._stamp if self.cache else 0)
        return out, grad

    def reference_points(self, points):
        """X with X + u(X) = x (the pull-back used at each corner) at arbitrary points."""
        pts = _points(points)
        out = np.empty_like(pts)
        reference_points_kernel(self.mode_table, self.eps, self.phi0.origin, self.phi0.spacing, pts, out,
                                self.inverse_iterations, self.inverse_method == "newton")
        return out

    def memory_bytes(self):
        extra = self._cache_values.nbytes + self._cache_stamp.nbytes if self.cache else 0
        return self.phi0.nbytes + self.mode_table.nbytes + extra


def signed_distance_to_surface(points, vertices, faces):
    """Exact signed distance from points to a closed triangulated surface (libigl, pseudonormal sign)."""
    from ..particles.levelset import signed_distance_to_mesh

    return np.asarray(signed_distance_to_mesh(points, vertices, faces))


class RecomputeLevelSet(_Strategy):
    """Strategy 1: deform the reference triangulation and recompute φ at every grid node."""

    name = "recompute"

    def __init__(self, phi0, modes, surface_vertices, surface_faces):
        super().__init__(phi0, modes)
        self.ref_vertices = np.ascontiguousarray(surface_vertices, dtype=np.float64)
        self.faces = np.ascontiguousarray(surface_faces, dtype=np.int64)
        if self.ref_vertices.ndim != 2 or self.ref_vertices.shape[1] != 3:
            raise ValueError("surface_vertices must have shape (n, 3)")
        self.vertex_modes = np.stack([m.displacement(self.ref_vertices) for m in self.modes])
        self.nodes = self.phi0.node_positions().reshape(-1, 3)
        self.values = self.phi0.values.copy()

    def deformed_vertices(self, eps):
        return self.ref_vertices + np.einsum("a,akj->kj", np.asarray(eps, float), self.vertex_modes)

    def exact(self, points, eps=None):
        """Signed distance to the deformed surface at arbitrary points (no grid): the reference."""
        verts = self.deformed_vertices(self.eps if eps is None else eps)
        return signed_distance_to_surface(_points(points), verts, self.faces)

    def _update(self, eps, eps_dot, dt):
        verts = self.deformed_vertices(eps)
        self.values = np.ascontiguousarray(
            signed_distance_to_surface(self.nodes, verts, self.faces).reshape(self.phi0.shape))

    def query(self, points):
        pts = _points(points)
        out = np.empty(pts.shape[0])
        grad = np.empty((pts.shape[0], 3))
        grid_query_kernel(self.values, self.phi0.origin, self.phi0.spacing, pts, out, grad)
        return out, grad

    def memory_bytes(self):
        return (self.phi0.nbytes + self.values.nbytes + self.ref_vertices.nbytes + self.faces.nbytes
                + self.vertex_modes.nbytes)


class AdvectedLevelSet(_Strategy):
    """Strategy 2: first-order upwind transport of φ on a narrow band, CFL-limited sub-steps."""

    name = "advection"

    def __init__(self, phi0, modes, band_width=None, cfl=0.5, mode_table=None):
        super().__init__(phi0, modes)
        h = self.phi0.spacing
        self.band_width = 4.0 * h if band_width is None else float(band_width)
        if not self.band_width > 0:
            raise ValueError(f"band_width must be > 0, got {band_width}")
        if not 0 < cfl <= 1:
            raise ValueError(f"cfl must be in (0, 1], got {cfl}")
        self.cfl = float(cfl)
        table = tabulate_modes(self.modes, self.phi0) if mode_table is None else mode_table
        self.mode_table = np.ascontiguousarray(table, dtype=np.float64)
        self.clip = self.band_width + 2.0 * h
        self.values = np.clip(self.phi0.values, -self.clip, self.clip)
        self._scratch = np.empty_like(self.values)
        self._rebuild_band()
        self.substeps = 0

    def _rebuild_band(self, layers=1):
        from scipy.ndimage import binary_dilation

        # `layers` rings of clipped nodes around the band are advected too (one per sub-step, each
        # moving the surface by at most cfl·h), so the band's upwind neighbours always carry
        # transported, never frozen, values
        inside = binary_dilation(np.abs(self.values) < self.clip, iterations=layers)
        self.band = np.argwhere(inside).astype(np.int64)

    def _update(self, eps, eps_dot, dt):
        if eps_dot is None or dt is None:
            # without a rate, move along the straight path from the previous amplitudes in one step
            dt = 1.0
            eps_dot = eps - self.eps
        eps_dot = np.asarray(eps_dot, dtype=np.float64).reshape(-1)
        if not np.any(eps_dot):
            return
        velocity = np.ascontiguousarray(np.einsum("a,a...->...", eps_dot, self.mode_table))
        speed = np.sqrt((velocity ** 2).sum(axis=-1))
        vmax = speed[np.abs(self.values) < self.clip].max(initial=0.0)
        h = self.phi0.spacing
        n_sub = max(1, int(np.ceil(vmax * dt / (self.cfl * h) - 1e-12)))
        sub_dt = dt / n_sub
        self._rebuild_band(layers=n_sub)
        for _ in range(n_sub):
            advect_band_kernel(self.values, self._scratch, velocity, self.band, sub_dt, h)
            self.values, self._scratch = self._scratch, self.values
        self.substeps += n_sub

    def query(self, points):
        pts = _points(points)
        out = np.empty(pts.shape[0])
        grad = np.empty((pts.shape[0], 3))
        grid_query_kernel(self.values, self.phi0.origin, self.phi0.spacing, pts, out, grad)
        return out, grad

    def memory_bytes(self):
        return (self.phi0.nbytes + 2 * self.values.nbytes + self.mode_table.nbytes + self.band.nbytes)


class TabulatedLevelSet(_Strategy):
    """Strategy 4: fields precomputed at sampled amplitudes of each mode, interpolated linearly in ε.

    ``samples``: per mode, increasing amplitudes that must include 0; φ at each is recomputed from the
    deformed surface (strategy 1) once, here.
    """

    name = "tabulated"

    def __init__(self, phi0, modes, samples, surface_vertices, surface_faces):
        super().__init__(phi0, modes)
        samples = [np.asarray(s, dtype=np.float64).reshape(-1) for s in samples]
        if len(samples) != len(self.modes):
            raise ValueError("samples must give one array of amplitudes per mode")
        n_p = samples[0].size
        for s in samples:
            if s.size != n_p or s.size < 2 or np.any(np.diff(s) <= 0) or not np.any(s == 0.0):
                raise ValueError("each mode's samples must be increasing, contain 0, have the same "
                                 "length >= 2")
        self.samples = np.stack(samples)
        builder = RecomputeLevelSet(self.phi0, self.modes, surface_vertices, surface_faces)
        t0 = time.perf_counter()
        fields = np.empty((len(self.modes), n_p) + self.phi0.shape)
        for a in range(len(self.modes)):
            for p in range(n_p):
                e = np.zeros(len(self.modes))
                e[a] = self.samples[a, p]
                builder.update(e)
                fields[a, p] = builder.values
        self.preprocess_seconds = time.perf_counter() - t0
        self.fields = np.ascontiguousarray(fields)
        self.lower = np.zeros(len(self.modes), dtype=np.int64)
        self.weight = np.zeros(len(self.modes))
        self._set_weights(np.zeros(len(self.modes)))

    def _set_weights(self, eps):
        for a, e in enumerate(eps):
            s = self.samples[a]
            lo = int(np.clip(np.searchsorted(s, e, side="right") - 1, 0, s.size - 2))
            self.lower[a] = lo
            # beyond the sampled range the end segment is extrapolated linearly
            self.weight[a] = (e - s[lo]) / (s[lo + 1] - s[lo])

    def _update(self, eps, eps_dot, dt):
        self._set_weights(eps)

    def query(self, points):
        pts = _points(points)
        out = np.empty(pts.shape[0])
        grad = np.empty((pts.shape[0], 3))
        tabulated_query_kernel(self.phi0.values, self.fields, self.lower, self.weight, self.phi0.origin,
                               self.phi0.spacing, pts, out, grad)
        return out, grad

    def memory_bytes(self):
        return self.phi0.nbytes + self.fields.nbytes


# --------------------------------------------------------------------------------------------------
# reference surfaces


def cuboid_surface_mesh(half_extents, target_spacing):
    """Closed, outward-oriented triangulation of the box |x_i| <= half_i (shared vertices)."""
    half = np.asarray(half_extents, dtype=np.float64).reshape(3)
    if np.any(half <= 0) or not target_spacing > 0:
        raise ValueError("half_extents and target_spacing must be > 0")
    n = np.maximum(1, np.ceil(2 * half / target_spacing).astype(int))
    index = -np.ones(tuple(n + 1), dtype=np.int64)
    ii, jj, kk = np.meshgrid(*[np.arange(m + 1) for m in n], indexing="ij")
    on_surface = (ii == 0) | (ii == n[0]) | (jj == 0) | (jj == n[1]) | (kk == 0) | (kk == n[2])
    index[on_surface] = np.arange(on_surface.sum())
    lattice = np.stack([ii[on_surface], jj[on_surface], kk[on_surface]], axis=1)
    vertices = -half + lattice * (2 * half / n)
    faces = []
    for axis in range(3):
        u, v = [d for d in range(3) if d != axis]
        for side in (0, n[axis]):
            a_idx, b_idx = np.meshgrid(np.arange(n[u]), np.arange(n[v]), indexing="ij")
            a_idx = a_idx.ravel()
            b_idx = b_idx.ravel()

            def vid(da, db):
                lat = np.zeros((a_idx.size, 3), dtype=np.int64)
                lat[:, axis] = side
                lat[:, u] = a_idx + da
                lat[:, v] = b_idx + db
                return index[lat[:, 0], lat[:, 1], lat[:, 2]]
            q00, q10, q11, q01 = vid(0, 0), vid(1, 0), vid(1, 1), vid(0, 1)
            tris = np.concatenate([np.stack([q00, q10, q11], 1), np.stack([q00, q11, q01], 1)])
            # orient outward: the normal of (u, v) is +axis for a cyclic (u, v, axis) order
            normal_sign = np.cross(np.eye(3)[u], np.eye(3)[v])[axis]
            outward = 1 if side == n[axis] else -1
            if normal_sign * outward < 0:
                tris = tris[:, [0, 2, 1]]
            faces.append(tris)
    return vertices, np.concatenate(faces)


def sphere_surface_mesh(radius, n_vertices=4000):
    """Closed outward triangulation of a sphere with vertices on it (convex hull of Fibonacci points)."""
    from scipy.spatial import ConvexHull

    if not radius > 0 or n_vertices < 12:
        raise ValueError("radius must be > 0 and n_vertices >= 12")
    i = np.arange(n_vertices) + 0.5
    z = 1.0 - 2.0 * i / n_vertices
    r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    theta = np.pi * (1.0 + 5.0 ** 0.5) * i
    d = np.stack([r * np.cos(theta), r * np.sin(theta), z], axis=1)
    faces = ConvexHull(d).simplices.astype(np.int64)
    a, b, c = d[faces[:, 0]], d[faces[:, 1]], d[faces[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), a + b + c) < 0
    faces[flip] = faces[flip][:, [0, 2, 1]]
    return radius * d, faces


def octahedral_sphere_mesh(radius, frequency):
    """Closed outward triangulation of a sphere with the cube's symmetry: each face of the octahedron
    split into frequency² triangles on a regular lattice, vertices projected radially (4f² + 2 of them).

    The six poles ±R e_i are vertices and the node set maps onto itself under every rotation and
    reflection of the cube, so six walls or six neighbours closing along the axes all meet the same
    node pattern (a Fibonacci set has no node at the poles and differs from axis to axis).
    """
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    if int(frequency) != frequency or frequency < 1:
        raise ValueError(f"frequency must be an integer >= 1, got {frequency}")
    n = int(frequency)
    index = {}
    faces = []

    def vertex(lattice):
        key = tuple(int(v) for v in lattice)
        if key not in index:
            index[key] = len(index)
        return index[key]
    for sx in (1, -1):
        for sy in (1, -1):
            for sz in (1, -1):
                # integer lattice coordinates (sum of |components| = n) make shared edges coincide exactly
                a = np.array([sx * n, 0, 0])
                b = np.array([0, sy * n, 0])
                c = np.array([0, 0, sz * n])
                ids = {}
                for i in range(n + 1):
                    for j in range(n + 1 - i):
                        ids[i, j] = vertex((a * (n - i - j) + b * i + c * j) // n)
                for i in range(n):
                    for j in range(n - i):
                        faces.append((ids[i, j], ids[i + 1, j], ids[i, j + 1]))
                        if i + j < n - 1:
                            faces.append((ids[i + 1, j], ids[i + 1, j + 1], ids[i, j + 1]))
    d = np.zeros((len(index), 3))
    for key, v in index.items():
        d[v] = key
    d /= np.linalg.norm(d, axis=1)[:, None]
    faces = np.array(faces, dtype=np.int64)
    p, q, r = d[faces[:, 0]], d[faces[:, 1]], d[faces[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(q - p, r - p), p + q + r) < 0
    faces[flip] = faces[flip][:, [0, 2, 1]]
    return radius * d, faces


STRATEGIES = {"recompute": RecomputeLevelSet, "advection": AdvectedLevelSet,
              "semi_lagrangian": SemiLagrangianLevelSet, "tabulated": TabulatedLevelSet}
