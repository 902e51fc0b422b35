"""Level-set grains (LS-DEM, Kawamoto et al. 2016): a signed-distance grid plus surface nodes.

A `LevelSetGrain` is a *template*: geometry and mass properties per unit density, in its body frame.
Many simulated grains may share one template (the engine keeps only pose and velocity per grain).

Body frame
    Origin at the centroid computed from phi (smoothed-Heaviside integration, below); axes along the
    principal axes of inertia. Analytic shapes are built centred and axis-aligned, so their axes are
    principal by symmetry and keep the user's order (ellipsoid(a, b, c): a along body x). Meshes and
    voxel images are rotated onto the principal axes of their *exact* polyhedron / voxel-union moments
    (ascending moments along x, y, z) before phi is sampled, so only translation ever adjusts the grid.
    The residual off-diagonal inertia of the phi integral is kept in `frame_residual` (relative).

Grid layout (kept flat-array friendly for numba kernels and for the deformable extension)
    phi_grid[i, j, k] is phi at body point origin + h * (i, j, k); C-contiguous float64.
    Node positions are stored separately (`nodes`) so a deformed copy can be handed to the kernels
    while the reference grid stays untouched (pull-back phi(x) = phi0(x - u(x)) works on this grid).

Mass properties (per unit density)
    V = sum W(-phi) h^3 with W = (4 H_eps - H_2eps)/3, eps = 1.5 h, and the smoothed Heaviside
    H_eps(s) = 0 (s < -eps), 1 (s > eps), (1 + s/eps + sin(pi s/eps)/pi)/2 otherwise; first and second
    moments likewise. A single H_eps is biased by 2 (eps^2/6 - eps^2/pi^2) per unit area and unit mean
    curvature (0.9 % of a sphere's volume at R = 10 h); the combination cancels that eps^2 term
    (Richardson extrapolation in the smoothing width), leaving O(eps^4) and grid-sampling errors.

Surface nodes
    The zero level set of the grid is triangulated by marching cubes (scikit-image); each triangle is
    split into 4^s sub-triangles, giving a dense area-weighted sample. n_nodes seeds are taken from it
    one per occupied cell of a cubic grid sized to give ~n_nodes cells (fixed seed for the ties), and
    relaxed by Lloyd iterations on the surface (each node moves to the
    area-weighted centroid of the samples nearest to it). A node's area weight is the area of its
    samples, so the weights partition the triangulated surface exactly; nodes are then projected onto
    the trilinear zero level set (Newton steps along grad phi) and their normals are grad phi / |grad phi|.
    Default n_nodes: surface area / h^2 (about one node per grid cell of surface).

Signed distances
    sphere, rounded cuboid, cylinder: exact closed forms. ellipsoid, superquadric: a fine star-shaped
    triangulation of the exact surface (convex hull of Fibonacci directions mapped by the shape's gauge
    function) and libigl's exact point-triangle signed distance (pseudonormal sign).
    from_mesh: libigl signed distance to the closed mesh. from_voxels: scipy.ndimage Euclidean distance
    transforms of the inside and outside masks (half-voxel corrected), resampled trilinearly onto the
    principal-axis grid.

Attributes
    phi_grid (nx, ny, nz), grid_origin (3,) (alias origin), spacing h, grid_shape (3,)
    nodes (n, 3), normals (n, 3), areas (n,), n_nodes, surface_area
    volume, centroid (3, input coordinates), rotation (3x3: x_input = centroid + rotation @ x_body)
    inertia_tensor (3x3 about the centroid, body frame, per unit density), inertia (its diagonal, the
    body-axis moments used by the dynamics), principal_inertia (eigenvalues, ascending)
    bounding_radius (max |node|), frame_residual, surface_vertices / surface_faces (marching-cubes mesh)
"""

from __future__ import annotations

import math

from pathlib import Path

import numpy as np
from scipy import ndimage
from scipy.spatial import ConvexHull, cKDTree

from ..core.grid import interpolate

__all__ = ["LevelSetGrain"]

_EPS_CELLS = 1.5  # smoothed-Heaviside half-width in grid spacings
_PAD_CELLS = 5  # grid margin beyond the shape: 2 eps (mass integral) + room for queries just outside


# input limits of the mesh and voxel constructors: a grain template is meant to be small (its grid and
# nodes are kept in memory once per shape); larger inputs are refused before they are read
MAX_MESH_FILE_BYTES = 256 * 2**20
MAX_VOXELS = 512**3

# what building a template does, in order (the steps of its progress bar)
TEMPLATE_STAGES = ("signed distance", "mass properties", "marching cubes", "surface nodes")


def template_progress(name, progress=None, done=0):
    """The progress bar of building a template: shown when `progress` is True, or when it is None and
    a person watches (stderr is a terminal); `done` stages are finished already."""
    from ..io.progress import Progress, interactive

    show = interactive() if progress is None else bool(progress)
    bar = Progress(len(TEMPLATE_STAGES), desc=f"level-set template {name}", quiet=not show, unit="stage")
    bar.update(done, stage=TEMPLATE_STAGES[done])
    return bar

def _positive(name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def _check_n_nodes(n_nodes):
    if n_nodes is None:
        return None
    if isinstance(n_nodes, bool) or int(n_nodes) != n_nodes or int(n_nodes) < 4:
        raise ValueError(f"n_nodes must be an integer >= 4 (or None for area/spacing^2), got {n_nodes!r}")
    return int(n_nodes)


def _check_resolution(min_half_extent, spacing, what):
    # Fewer than two cells across a half-width and the zero level set is not resolved (phi smears
    # over eps = 1.5 h, marching cubes may drop parts): refuse rather than give wrong mass properties.
    if min_half_extent < 2.0 * spacing:
        raise ValueError(
            f"spacing={spacing!r} is too coarse for {what}: the smallest half-width {min_half_extent:.4g} "
            f"must be >= 2 * spacing (allowed spacing <= {min_half_extent / 2.0:.4g})"
        )


def smoothed_heaviside(s, eps):
    """H(s) with half-width eps: 0 below -eps, 1 above eps, C1 in between."""
    s = np.asarray(s, dtype=np.float64)
    out = 0.5 * (1.0 + s / eps + np.sin(np.pi * s / eps) / np.pi)
    return np.where(s < -eps, 0.0, np.where(s > eps, 1.0, out))


def _grid_axes(half_extent, spacing):
    """Body-frame grid symmetric about 0 covering +-(half_extent + pad)."""
    half_extent = np.asarray(half_extent, dtype=np.float64)
    n_half = np.ceil(half_extent / spacing).astype(np.int64) + _PAD_CELLS
    origin = -n_half * spacing
    shape = 2 * n_half + 1
    return origin, shape


def _grid_points(origin, shape, spacing):
    axes = [origin[d] + spacing * np.arange(shape[d]) for d in range(3)]
    X, Y, Z = np.meshgrid(*axes, indexing="ij")
    return np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)


# ---------------------------------------------------------------- meshes


def _fibonacci_directions(n):
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    r = np.sqrt(np.maximum(0.0, 1.0 - z * z))
    theta = np.pi * (1.0 + 5.0**0.5) * i
    return np.stack([r * np.cos(theta), r * np.sin(theta), z], axis=1)


def _star_mesh(gauge, n_vertices):
    """Closed outward-oriented triangulation of the star-shaped surface {x : gauge(x) = 1}."""
    d = _fibonacci_directions(n_vertices)
    faces = ConvexHull(d).simplices.astype(np.int64)
    a, b, c = d[faces[:, 0]], d[faces[:, 1]], d[faces[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), a + b + c) < 0
    faces[flip] = faces[flip][:, [0, 2, 1]]
    verts = d / gauge(d)[:, None]
    return verts, faces


def _check_closed(faces, n_vertices):
    """Raise unless every edge is shared by exactly two faces with opposite orientation."""
    f = np.asarray(faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or len(f) < 4:
        raise ValueError("mesh must contain at least 4 triangles (a closed surface)")
    if f.min() < 0 or f.max() >= n_vertices:
        raise ValueError("mesh faces reference vertices that do not exist")
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    key = directed[:, 0] * n_vertices + directed[:, 1]
    rev = directed[:, 1] * n_vertices + directed[:, 0]
    uniq, counts = np.unique(key, return_counts=True)
    if np.any(counts > 1):
        raise ValueError("mesh is not closed: an edge is used twice in the same direction "
                         "(inconsistent orientation or non-manifold edge)")
    if not np.all(np.isin(rev, uniq, assume_unique=False)):
        raise ValueError("mesh is not closed: some edges belong to only one triangle (holes)")


def _polyhedron_moments(verts, faces):
    """Exact volume, centroid and inertia tensor (about the centroid) of a closed oriented mesh."""
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    det = np.einsum("ij,ij->i", a, np.cross(b, c))  # 6 x signed volume of tetra (0, a, b, c)
    vol = det.sum() / 6.0
    if abs(vol) <= 0:
        raise ValueError("mesh encloses zero volume")
    first = (det[:, None] * (a + b + c)).sum(axis=0) / 24.0
    # second moments of a tetra with a vertex at the origin: det/120 * (sum_i x_i x_i^T + s s^T)
    s = a + b + c
    second = (det[:, None, None] * (np.einsum("ni,nj->nij", a, a) + np.einsum("ni,nj->nij", b, b)
                                   + np.einsum("ni,nj->nij", c, c) + np.einsum("ni,nj->nij", s, s))).sum(0) / 120.0
    if vol < 0:  # inward-oriented: every moment flips sign
        vol, first, second = -vol, -first, -second
    centroid = first / vol
    second_c = second - vol * np.outer(centroid, centroid)
    inertia = np.trace(second_c) * np.eye(3) - second_c
    return vol, centroid, inertia


def _principal_rotation(inertia):
    """Rotation whose columns are principal axes (ascending moments); identity if already diagonal."""
    off = np.abs(inertia - np.diag(np.diag(inertia))).max()
    if off <= 1e-10 * np.trace(inertia):
        return np.eye(3)  # keep the input axes: degenerate moments would make eigh pick arbitrary ones
    w, v = np.linalg.eigh(inertia)
    if np.linalg.det(v) < 0:
        v[:, 2] = -v[:, 2]
    return v


def signed_distance_to_mesh(points, verts, faces):
    import igl

    s, *_ = igl.signed_distance(
        np.ascontiguousarray(points, dtype=np.float64),
        np.ascontiguousarray(verts, dtype=np.float64),
        np.ascontiguousarray(faces, dtype=np.int64),
        igl.SignedDistanceType.SIGNED_DISTANCE_TYPE_PSEUDONORMAL,
    )
    return s


def _subdivided_samples(a, b, c, tri_area, m):
    """Centroids and areas of the m^2 equal sub-triangles of each triangle (a, b, c)."""
    bary = [((i + 1 / 3) / m, (j + 1 / 3) / m) for i in range(m) for j in range(m - i)]
    bary += [((i + 2 / 3) / m, (j + 2 / 3) / m) for i in range(m) for j in range(m - i - 1)]
    bary = np.array(bary)
    samples = (a[:, None, :] + bary[None, :, 0, None] * (b - a)[:, None, :]
               + bary[None, :, 1, None] * (c - a)[:, None, :]).reshape(-1, 3)
    return samples, np.repeat(tri_area / len(bary), len(bary))


def _stratified_seeds(samples, n, rng):
    """n well-spread samples: one per occupied cell of a cubic grid sized to give ~n occupied cells.

    A far more even start for Lloyd's iterations than area-weighted random draws, which cluster.
    """
    perm = rng.permutation(len(samples))
    pts = samples[perm]
    rel = pts - pts.min(axis=0)

    def cell_keys(c):
        ijk = np.floor(rel / c).astype(np.int64)
        span = ijk.max(axis=0) + 1
        return (ijk[:, 0] * span[1] + ijk[:, 1]) * span[2] + ijk[:, 2]

    lo, hi = 1e-9, np.ptp(pts, axis=0).max()
    for _ in range(40):  # bisection on the cell size (occupied cells decrease with it)
        c = 0.5 * (lo + hi)
        k = len(np.unique(cell_keys(c)))
        if k > n:
            lo = c
        else:
            hi = c
        if abs(k - n) <= max(1, n // 100):
            break
    _, first = np.unique(cell_keys(c), return_index=True)
    chosen = first
    if len(chosen) > n:
        chosen = rng.choice(chosen, size=n, replace=False)
    elif len(chosen) < n:
        rest = np.setdiff1d(np.arange(len(pts)), chosen)
        chosen = np.concatenate([chosen, rng.choice(rest, size=n - len(chosen), replace=False)])
    return pts[chosen].copy()


def _voxel_signed_distance(solid):
    """Signed distance (voxel units) from each voxel centre to the staircase surface of `solid`."""
    out = np.zeros(solid.shape)
    grid = np.indices(solid.shape)
    for phase, sign in ((solid, -1.0), (~solid, 1.0)):
        # for voxels of `phase`, the nearest voxel of the other phase
        _, nearest = ndimage.distance_transform_edt(phase, return_indices=True)
        gap = np.maximum(np.abs(grid - nearest) - 0.5, 0.0)
        d = np.sqrt((gap**2).sum(axis=0))
        out[phase] = sign * d[phase]
    return out


# ---------------------------------------------------------------- the grain


class LevelSetGrain:
    """A rigid level-set grain template: geometry and mass properties per unit density, body frame.

    Construct with the classmethods (sphere, ellipsoid, superquadric, rounded_cuboid, cylinder,
    from_mesh, from_triangles, from_voxels) or directly from a body-frame grid:
    LevelSetGrain(phi_grid, grid_origin, spacing, n_nodes=None) (the grid is translated so that the body
    origin is the phi centroid; its axes must already be principal).

    Attributes (stable names; arrays are float64, C-contiguous)
        phi_grid (nx, ny, nz)   signed distance, negative inside, at grid_origin + spacing * (i, j, k)
        grid_origin (3,)        body-frame position of grid point (0, 0, 0); alias `origin`
        spacing                 grid spacing h;  grid_shape (3,) int64
        nodes (n, 3)            surface nodes, body frame, on the trilinear zero level set
        normals (n, 3)          outward unit normals (grad phi / |grad phi| at the nodes)
        areas (n,)              node area weights, summing to surface_area
        n_nodes, surface_area, bounding_radius (max |node|)
        volume                  per unit density = volume
        centroid (3,)           centre of mass in the input coordinates (0 for analytic shapes)
        rotation (3, 3)         x_input = centroid + rotation @ x_body
        inertia_tensor (3, 3)   about the centroid, body frame, per unit density
        inertia (3,)            its diagonal: the body-axis moments used by the dynamics
        principal_inertia (3,)  eigenvalues of inertia_tensor, ascending
        frame_residual          max |off-diagonal| / max moment of inertia_tensor
        surface_vertices, surface_faces   marching-cubes triangulation (body frame) for output
    Methods: phi(points), phi_and_gradient(points), mass(density), memory_bytes().

    Every constructor takes `progress`: True shows a progress bar of the building stages, False hides
    it, None (default) shows it only on a terminal.
    """

    def __init__(self, phi_grid, grid_origin, spacing, *, n_nodes=None, centroid_input=(0.0, 0.0, 0.0),
                 rotation=None, seed=0, name="grain", progress=None):
        spacing = _positive("spacing", spacing)
        n_nodes = _check_n_nodes(n_nodes)
        phi = np.ascontiguousarray(phi_grid, dtype=np.float64)
        if phi.ndim != 3 or min(phi.shape) < 4:
            raise ValueError(f"phi_grid must be a 3-D array with >= 4 points per axis, got shape {phi.shape}")
        if not np.all(np.isfinite(phi)):
            raise ValueError("phi_grid must be finite")
        if phi.min() >= 0:
            raise ValueError("phi_grid has no negative (inside) values: the grid holds no grain")
        border = np.concatenate([phi[[0, -1]].ravel(), phi[:, [0, -1]].ravel(), phi[:, :, [0, -1]].ravel()])
        if border.min() <= 0:
            raise ValueError("phi_grid must be positive on its boundary (the grain must lie inside the grid)")
        self.name = name
        self.spacing = spacing
        self.phi_grid = phi
        self.grid_shape = np.array(phi.shape, dtype=np.int64)
        self.grid_origin = np.asarray(grid_origin, dtype=np.float64).reshape(3).copy()
        self.rotation = np.eye(3) if rotation is None else np.asarray(rotation, dtype=np.float64)
        # a constructor passes its own bar on (the signed distance done); a grid given directly starts one
        bar = progress if hasattr(progress, "update") else template_progress(name, progress, done=1)
        with bar:
            self._mass_properties()
            bar.update(1, stage=TEMPLATE_STAGES[2])
            # the body origin goes to the phi centroid: a pure translation of the grid, exact
            shift = self._centroid_body
            self.grid_origin -= shift
            self.centroid = np.asarray(centroid_input, dtype=np.float64) + self.rotation @ shift
            self._surface(n_nodes, seed, bar)

    # ---------------------------------------------------------- mass properties
    def _mass_properties(self):
        h = self.spacing
        pts = _grid_points(self.grid_origin, self.grid_shape, h)
        # Richardson in the smoothing width: a single smoothed Heaviside overestimates a convex body by
        # ~0.065 eps^2 x (mean curvature) per unit area; 4/3 H_eps - 1/3 H_2eps cancels that term.
        s = -self.phi_grid.ravel()
        eps = _EPS_CELLS * h
        w = (4.0 * smoothed_heaviside(s, eps) - smoothed_heaviside(s, 2.0 * eps)) / 3.0 * h**3
        vol = w.sum()
        c = (w[:, None] * pts).sum(0) / vol
        r = pts - c
        second = np.einsum("n,ni,nj->ij", w, r, r)
        inertia = np.trace(second) * np.eye(3) - second
        self.volume = float(vol)
        self._centroid_body = c
        self.inertia_tensor = inertia
        self.inertia = np.diag(inertia).copy()
        self.principal_inertia = np.sort(np.linalg.eigvalsh(inertia))
        off = np.abs(inertia - np.diag(self.inertia)).max()
        self.frame_residual = float(off / self.inertia.max())

    # ---------------------------------------------------------- surface and nodes
    def _surface(self, n_nodes, seed, bar):
        from skimage import measure

        h = self.spacing
        verts, faces, _, _ = measure.marching_cubes(self.phi_grid, level=0.0, spacing=(h, h, h))
        verts = verts + self.grid_origin
        faces = faces.astype(np.int64)
        # marching cubes orients by gradient direction; make faces outward (increasing phi)
        a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
        tri_n = np.cross(b - a, c - a)
        _, g = self.phi_and_gradient((a + b + c) / 3.0)
        if np.einsum("ij,ij->", tri_n, g) < 0:
            faces = faces[:, [0, 2, 1]]
        self.surface_vertices = verts
        self.surface_faces = faces
        bar.update(1, stage=TEMPLATE_STAGES[3])
        a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
        tri_area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
        self.surface_area = float(tri_area.sum())
        if n_nodes is None:
            n_nodes = max(4, int(round(self.surface_area / h**2)))
        if n_nodes > 4 * len(faces) * 16:
            raise ValueError(f"n_nodes={n_nodes} is too many for spacing={h!r}: at most {64 * len(faces)} "
                             "(refine the grid to place more nodes)")
        # dense area-weighted sample: sub-triangle centroids of an s-fold midpoint subdivision
        s = 0
        while len(faces) * 4**s < 20 * n_nodes and s < 4:
            s += 1
        samples, sample_area = _subdivided_samples(a, b, c, tri_area, 2**s)
        rng = np.random.default_rng(seed)
        nodes = _stratified_seeds(samples, n_nodes, rng)
        for _ in range(6):
            _, owner = cKDTree(nodes).query(samples, workers=-1)
            area = np.bincount(owner, weights=sample_area, minlength=n_nodes)
            moved = np.stack([np.bincount(owner, weights=sample_area * samples[:, d], minlength=n_nodes)
                              for d in range(3)], axis=1)
            keep = area > 0
            nodes[keep] = moved[keep] / area[keep, None]
        # the cells stay somewhat unequal (coefficient of variation of the weights ~0.15 on a sphere,
        # 0.24 from a random start); the weights partition the surface exactly all the same
        _, owner = cKDTree(nodes).query(samples, workers=-1)
        area = np.bincount(owner, weights=sample_area, minlength=n_nodes)
        for _ in range(4):  # Newton steps onto the trilinear zero level set
            val, g = self.phi_and_gradient(nodes)
            nodes = nodes - (val / np.maximum(np.einsum("ij,ij->i", g, g), 1e-300))[:, None] * g
        _, g = self.phi_and_gradient(nodes)
        self.nodes = np.ascontiguousarray(nodes)
        self.normals = np.ascontiguousarray(g / np.linalg.norm(g, axis=1)[:, None])
        self.areas = np.ascontiguousarray(area)
        self.n_nodes = n_nodes
        self.bounding_radius = float(np.linalg.norm(nodes, axis=1).max())
        bar.update(1)

    @property
    def origin(self):
        """Alias of grid_origin (body point of grid index (0, 0, 0))."""
        return self.grid_origin

    # ---------------------------------------------------------- queries
    def phi(self, points):
        """Signed distance (negative inside) at body-frame points (m, 3), trilinear in the grid."""
        p = np.asarray(points, dtype=np.float64)
        single = p.ndim == 1
        v = interpolate(self.phi_grid, self.grid_origin, self.spacing, p.reshape(-1, 3))
        return float(v[0]) if single else v

    def phi_and_gradient(self, points):
        """(phi, grad phi) of the trilinear interpolant at body-frame points (m, 3)."""
        return interpolate(self.phi_grid, self.grid_origin, self.spacing, np.asarray(points).reshape(-1, 3),
                           with_gradient=True)

    def mass(self, density):
        return _positive("density", density) * self.volume

    def memory_bytes(self):
        """Bytes of the template arrays (grid, nodes, normals, areas)."""
        return int(self.phi_grid.nbytes + self.nodes.nbytes + self.normals.nbytes + self.areas.nbytes)

    def __repr__(self):
        return (f"LevelSetGrain({self.name!r}, volume={self.volume:.4g}, n_nodes={self.n_nodes}, "
                f"grid={tuple(self.grid_shape)}, spacing={self.spacing:.4g})")

    # ---------------------------------------------------------- constructors
    @classmethod
    def sphere(cls, radius, *, spacing=None, n_nodes=None, seed=0, progress=None):
        """Sphere of the given radius (exact signed distance). Default spacing radius/10."""
        r = _positive("radius", radius)
        h = r / 10.0 if spacing is None else _positive("spacing", spacing)
        _check_resolution(r, h, "the sphere")
        origin, shape = _grid_axes([r, r, r], h)
        pts = _grid_points(origin, shape, h)
        bar = template_progress("sphere", progress)
        phi = (np.linalg.norm(pts, axis=1) - r).reshape(shape)
        bar.update(1, stage=TEMPLATE_STAGES[1])
        return cls(phi, origin, h, n_nodes=n_nodes, seed=seed, name="sphere", progress=bar)

    @classmethod
    def ellipsoid(cls, a, b, c, *, spacing=None, n_nodes=None, seed=0, progress=None):
        """Ellipsoid with semi-axes a, b, c along body x, y, z. Default spacing min(a, b, c)/8."""
        ax = np.array([_positive("a", a), _positive("b", b), _positive("c", c)])
        return cls.superquadric(*ax, 1.0, 1.0, spacing=spacing, n_nodes=n_nodes, seed=seed, progress=progress,
                                _name="ellipsoid")

    @classmethod
    def superquadric(cls, a, b, c, e1=1.0, e2=1.0, *, spacing=None, n_nodes=None, seed=0, progress=None,
                     _name="superquadric"):
        """Superquadric (|x/a|^(2/e2) + |y/b|^(2/e2))^(e2/e1) + |z/c|^(2/e1) = 1; e1 = e2 = 1 is an ellipsoid.

        Exponents are limited to [0.1, 2] (convex for <= 1); the surface is star-shaped, triangulated
        finely and the signed distance taken to that triangulation (libigl, exact per triangle).
        """
        ax = np.array([_positive("a", a), _positive("b", b), _positive("c", c)])
        for name, e in (("e1", e1), ("e2", e2)):
            e = float(e)
            if not math.isfinite(e) or not (0.1 <= e <= 2.0):
                raise ValueError(f"{name} must lie in [0.1, 2], got {e!r}")
        e1, e2 = float(e1), float(e2)
        h = ax.min() / 8.0 if spacing is None else _positive("spacing", spacing)
        _check_resolution(ax.min(), h, f"the {_name}")

        def gauge(x):
            t = (np.abs(x[:, 0] / ax[0]) ** (2 / e2) + np.abs(x[:, 1] / ax[1]) ** (2 / e2)) ** (e2 / e1)
            return (t + np.abs(x[:, 2] / ax[2]) ** (2 / e1)) ** (e1 / 2)

        # vertex spacing ~ 0.4 h: chord error ~ (0.4 h)^2 / (8 R) is well below the grid's own O(h^2) error
        # Knud Thomsen's approximation of the ellipsoid area (within ~1 %), only to size the mesh
        pq = 1.6
        area_est = 4 * np.pi * (((ax[0] * ax[1]) ** pq + (ax[0] * ax[2]) ** pq + (ax[1] * ax[2]) ** pq) / 3) ** (1 / pq)
        n_v = int(min(200_000, max(2000, 6 * area_est / h**2)))
        bar = template_progress(_name, progress)
        verts, faces = _star_mesh(gauge, n_v)
        origin, shape = _grid_axes(ax, h)
        phi = signed_distance_to_mesh(_grid_points(origin, shape, h), verts, faces).reshape(shape)
        bar.update(1, stage=TEMPLATE_STAGES[1])
        return cls(phi, origin, h, n_nodes=n_nodes, seed=seed, name=_name, progress=bar)

    @classmethod
    def rounded_cuboid(cls, hx, hy, hz, radius=0.0, *, spacing=None, n_nodes=None, seed=0, progress=None):
        """Box of half-extents (hx, hy, hz) with edges and corners rounded by `radius` (exact distance)."""
        he = np.array([_positive("hx", hx), _positive("hy", hy), _positive("hz", hz)])
        r = float(radius)
        if not math.isfinite(r) or r < 0 or r > he.min():
            raise ValueError(f"radius must lie in [0, min(hx, hy, hz)] = [0, {he.min():.4g}], got {radius!r}")
        h = he.min() / 8.0 if spacing is None else _positive("spacing", spacing)
        _check_resolution(he.min(), h, "the cuboid")
        bar = template_progress("rounded_cuboid", progress)
        origin, shape = _grid_axes(he, h)
        q = np.abs(_grid_points(origin, shape, h)) - (he - r)
        phi = np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0) - r
        bar.update(1, stage=TEMPLATE_STAGES[1])
        return cls(phi.reshape(shape), origin, h, n_nodes=n_nodes, seed=seed, name="rounded_cuboid", progress=bar)

    @classmethod
    def cylinder(cls, radius, half_height, *, spacing=None, n_nodes=None, seed=0, progress=None):
        """Circular cylinder, axis along body z (exact distance, sharp rims)."""
        R = _positive("radius", radius)
        H = _positive("half_height", half_height)
        h = min(R, H) / 8.0 if spacing is None else _positive("spacing", spacing)
        _check_resolution(min(R, H), h, "the cylinder")
        bar = template_progress("cylinder", progress)
        origin, shape = _grid_axes([R, R, H], h)
        p = _grid_points(origin, shape, h)
        dx = np.hypot(p[:, 0], p[:, 1]) - R
        dz = np.abs(p[:, 2]) - H
        phi = np.minimum(np.maximum(dx, dz), 0.0) + np.hypot(np.maximum(dx, 0.0), np.maximum(dz, 0.0))
        bar.update(1, stage=TEMPLATE_STAGES[1])
        return cls(phi.reshape(shape), origin, h, n_nodes=n_nodes, seed=seed, name="cylinder", progress=bar)

    @classmethod
    def from_triangles(cls, vertices, faces, *, spacing=None, n_nodes=None, seed=0, name="mesh", progress=None):
        """Grain bounded by a closed, consistently oriented triangle mesh (vertices (v,3), faces (f,3))."""
        v = np.asarray(vertices, dtype=np.float64)
        f = np.asarray(faces, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
            raise ValueError("vertices must be a finite (n, 3) array")
        _check_closed(f, len(v))
        vol, c, inertia = _polyhedron_moments(v, f)
        rot = _principal_rotation(inertia)
        body = (v - c) @ rot  # x_body = rot^T (x - c)
        a = body[f[:, 0]]
        if np.einsum("ij,ij->", a, np.cross(body[f[:, 1]] - a, body[f[:, 2]] - a)) < 0:
            f = f[:, [0, 2, 1]]  # make the orientation outward for the pseudonormal sign
        lo, hi = body.min(0), body.max(0)
        half = np.maximum(np.abs(lo), np.abs(hi))
        h = (hi - lo).min() / 16.0 if spacing is None else _positive("spacing", spacing)
        _check_resolution(0.5 * (hi - lo).min(), h, "the mesh")
        bar = template_progress(name, progress)
        origin, shape = _grid_axes(half, h)
        phi = signed_distance_to_mesh(_grid_points(origin, shape, h), body, f).reshape(shape)
        bar.update(1, stage=TEMPLATE_STAGES[1])
        grain = cls(phi, origin, h, n_nodes=n_nodes, centroid_input=c, rotation=rot, seed=seed, name=name,
                    progress=bar)
        grain._check_volume(vol, "mesh")
        return grain

    @classmethod
    def from_mesh(cls, path, *, spacing=None, n_nodes=None, scale=1.0, seed=0, progress=None):
        """Grain from a closed STL/OBJ (any meshio format) surface file; `scale` multiplies coordinates."""
        import meshio

        scale = _positive("scale", scale)
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"mesh file {str(p)!r} does not exist")
        if p.stat().st_size > MAX_MESH_FILE_BYTES:
            raise ValueError(f"mesh file {str(p)!r} is {p.stat().st_size} bytes; at most {MAX_MESH_FILE_BYTES} "
                             "are read (a grain needs thousands of triangles, not millions)")
        try:
            mesh = meshio.read(str(p))
        except Exception as exc:  # meshio raises its own ReadError, KeyError or ValueError by format
            raise ValueError(f"mesh file {str(p)!r} cannot be read as a surface mesh: "
                             f"{type(exc).__name__}: {exc}") from None
        tris = [blk.data for blk in mesh.cells if blk.type == "triangle"]
        if not tris:
            raise ValueError(f"{path}: the mesh holds no triangles")
        faces = np.concatenate(tris).astype(np.int64)
        verts = np.asarray(mesh.points, dtype=np.float64)[:, :3] * scale
        # STL stores every triangle with its own vertices: weld identical points first
        verts, inverse = np.unique(np.round(verts, 12), axis=0, return_inverse=True)
        faces = inverse.reshape(-1)[faces]
        return cls.from_triangles(verts, faces, spacing=spacing, n_nodes=n_nodes, seed=seed,
                                  name=str(getattr(path, "name", path)), progress=progress)

    @classmethod
    def from_voxels(cls, array, voxel_size, *, spacing=None, n_nodes=None, seed=0, progress=None):
        """Grain from a 3-D boolean image (True = solid), voxel edge `voxel_size`.

        phi at each voxel centre is the distance to the nearest voxel *cube* of the other phase, found
        with scipy.ndimage's Euclidean distance transform (the nearest centre, return_indices) and then
        measured to that cube's faces (so 0.5 voxel across a face, sqrt(2)/2 across an edge), negative
        inside: the zero level set is the staircase surface of the voxel union. phi is resampled
        trilinearly onto the principal-axis grid of spacing `spacing` (default voxel_size; use a finer
        spacing for grains only a few voxels thick, whose mass integral needs |phi| > 3 spacing inside).
        """
        vs = _positive("voxel_size", voxel_size)
        img = np.asarray(array)
        if img.ndim != 3:
            raise ValueError(f"array must be 3-D, got {img.ndim}-D")
        if img.dtype.kind not in "biu":
            raise ValueError(f"array must hold booleans or integers 0/1 (True = solid), got dtype {img.dtype}")
        if img.size > MAX_VOXELS:
            raise ValueError(f"array has {img.size} voxels; at most {MAX_VOXELS} (crop the image to the grain)")
        if img.dtype.kind != "b" and img.size and (img.min() < 0 or img.max() > 1):
            raise ValueError(f"array must hold 0 (void) and 1 (solid) only; got values in "
                             f"[{img.min()}, {img.max()}] (label images: select one label, array == k)")
        solid = img.astype(bool)
        if not solid.any():
            raise ValueError("array holds no solid voxel")
        h = vs if spacing is None else _positive("spacing", spacing)
        lab, n_lab = ndimage.label(solid)
        if n_lab != 1:
            raise ValueError(f"array must hold one connected solid region, found {n_lab}")
        bar = template_progress("voxels", progress)
        solid = np.pad(solid, _PAD_CELLS + 2)
        phi_img = _voxel_signed_distance(solid) * vs
        idx = np.argwhere(solid).astype(np.float64)
        n = len(idx)
        c_idx = idx.mean(0)
        r = (idx - c_idx) * vs
        second = r.T @ r * vs**3 + np.eye(3) * n * vs**5 / 12.0  # each voxel cube's own second moment
        inertia = np.trace(second) * np.eye(3) - second
        rot = _principal_rotation(inertia)
        body = r @ rot
        half = np.abs(body).max(0) + vs
        ext = 2 * (np.abs(body).max(0))
        _check_resolution(0.5 * ext.min() + 0.5 * vs, h, "the voxel grain")
        origin, shape = _grid_axes(half, h)
        pts = _grid_points(origin, shape, h)
        img_coords = (pts @ rot.T) / vs + c_idx  # body -> image index coordinates
        phi = ndimage.map_coordinates(phi_img, img_coords.T, order=1, mode="nearest").reshape(shape)
        c_input = (c_idx - (_PAD_CELLS + 2)) * vs  # centroid in image coordinates of voxel centres
        bar.update(1, stage=TEMPLATE_STAGES[1])
        grain = cls(phi, origin, h, n_nodes=n_nodes, centroid_input=c_input, rotation=rot, seed=seed,
                    name="voxels", progress=bar)
        grain._check_volume(n * vs**3, "voxel image")
        return grain

    def _check_volume(self, exact, what):
        rel = abs(self.volume - exact) / exact
        if rel > 0.05:
            raise ValueError(f"spacing={self.spacing!r} is too coarse for this {what}: the level-set volume "
                             f"differs from the exact {exact:.4g} by {100 * rel:.1f}% (> 5%); use a finer spacing")
