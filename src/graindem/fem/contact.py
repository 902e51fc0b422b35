"""Linear elastic octant of a grain pressed by rigid flat walls: frictionless (or tied) contact solved exactly.

Contact is a weighted-gap (mortar-like) condition on the candidate cap vertices: with P1 surface hat
functions ψ_j, g̃_j = ∫ ψ_j (h − x_n − u_n) dA ≥ 0, multiplier λ_j ≥ 0, λ_j g̃_j = 0. Condensing the
displacements with one sparse factorization of K turns every load level into a small dense convex QP in λ
(min ½ λᵀSλ + g̃0ᵀλ, λ ≥ 0, S = B K⁻¹ Bᵀ), solved exactly by non-negative least squares on the Cholesky
factor of S. The contact area therefore grows with load by itself, with no penalty parameter to tune.
"""

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse.linalg
from skfem import Basis, BilinearForm, ElementTetP1, ElementTetP2, ElementVector, FacetBasis, LinearForm, asm
from skfem.models.elasticity import lame_parameters, linear_elasticity

from graindem.fem.mesh import AXES, octant_sphere_mesh

log = logging.getLogger(__name__)


def _check_material(E, nu):
    if not np.isfinite(E) or E <= 0:
        raise ValueError(f"E must be a finite number > 0, got {E}")
    if not np.isfinite(nu) or not (-1.0 < nu < 0.5):
        raise ValueError(f"nu must lie in (-1, 0.5), got {nu}")


@dataclass
class WallState:
    """Solution at one load level: octant displacement (dofs), multipliers, per-wall octant reactions."""

    u: np.ndarray
    multipliers: np.ndarray
    reactions: np.ndarray  # (n_walls,) force on each wall from the octant, positive = compressive
    energy: float  # strain energy of the octant
    active: np.ndarray  # bool per multiplier


class OctantWallProblem:
    """Octant (x, y, z ≥ 0, mirror conditions on the coordinate planes) of an elastic body under rigid walls.

    Each wall is perpendicular to an axis, on the positive side, and pushes in the negative axis direction;
    its position is h (plane x_axis = h). Candidate contact vertices are surface vertices whose initial gap
    to the wall at its innermost position is at most `candidate_gap` (checked after every solve).
    """

    def __init__(self, mesh, E, nu, walls, outer_extent, candidate_gap, tied=False, rho=1.0):
        _check_material(E, nu)
        self.mesh, self.E, self.nu, self.rho, self.tied = mesh, E, nu, rho, tied
        self.walls = [AXES[w] if isinstance(w, str) else int(w) for w in walls]
        self.extent = float(outer_extent)
        self.element = ElementVector(ElementTetP2())
        # Order 2 integrates P2 stiffness exactly on straight-sided tets; only the thin layer of curved
        # boundary elements is integrated approximately (measured effect on the Hertz force < 0.1 %).
        self.basis = Basis(mesh, self.element, intorder=2)
        lam, mu = lame_parameters(E, nu)
        self.K = asm(linear_elasticity(lam, mu), self.basis).tocsc()
        fixed = [self.basis.get_dofs(lambda x, a=a: np.abs(x[a]) < 1e-9 * self.extent).all(f"u^{a + 1}")
                 for a in range(3)]
        self.fixed = np.unique(np.concatenate(fixed))
        self.free = np.setdiff1d(np.arange(self.basis.N), self.fixed)
        self.candidate_gap = float(candidate_gap)
        self._factor = SPDSolver(self.K[self.free][:, self.free])
        self._build_contact()

    # -- assembly of the contact operators -------------------------------------------------------------
    def _build_contact(self):
        mesh = self.mesh
        verts = mesh.p[:, : mesh.nvertices] if mesh.p.shape[1] > mesh.nvertices else mesh.p
        blocks, gap_const, gap_lin, wall_of, vertex_of, areas, tangential = [], [], [], [], [], [], []
        for w, axis in enumerate(self.walls):
            fac = self._boundary_facets_not_on_plane(axis)
            vx = verts[axis, mesh.facets[:, fac]]
            fac = fac[np.all(vx >= self.extent - self.candidate_gap, axis=0)]
            if len(fac) == 0:
                raise ValueError(f"candidate_gap={self.candidate_gap} selects no surface facet for wall {w}")
            fb_u = FacetBasis(mesh, self.element, facets=fac, intorder=6)
            fb_p = FacetBasis(mesh, ElementTetP1(), facets=fac, intorder=6)
            B = asm(BilinearForm(lambda u, v, w, a=axis: u[a] * v), fb_u, fb_p).tocsr()
            ones = asm(LinearForm(lambda v, w: v), fb_p)
            xint = asm(LinearForm(lambda v, w, a=axis: w.x[a] * v), fb_p)
            rows = np.unique(mesh.facets[:, fac])
            blocks.append(B[rows])
            if self.tied:
                for t_axis in [a for a in range(3) if a != axis]:
                    Bt = asm(BilinearForm(lambda u, v, w, a=t_axis: u[a] * v), fb_u, fb_p).tocsr()
                    tangential.append(Bt[rows])
            gap_const.append(-xint[rows])
            gap_lin.append(ones[rows])
            wall_of.append(np.full(len(rows), w))
            vertex_of.append(rows)
            areas.append(ones[rows])
        self.B = scipy.sparse.vstack(blocks).tocsr()
        self.n_normal = self.B.shape[0]
        if self.tied:
            # Tangential rows per wall: two per candidate vertex, ordered [wall0 t1, wall0 t2, wall1 t1, ...].
            per_wall = [scipy.sparse.vstack(tangential[2 * w:2 * w + 2]) for w in range(len(self.walls))]
            self.Bt = scipy.sparse.vstack(per_wall).tocsr()
            counts = [blk.shape[0] for blk in blocks]
            self._t_of_normal = np.concatenate([
                np.stack([off + np.arange(c), off + c + np.arange(c)], axis=1)
                for off, c in zip(np.cumsum([0] + [2 * c for c in counts[:-1]]), counts)])
            self.B_all = scipy.sparse.vstack([self.B, self.Bt]).tocsr()
        else:
            self.B_all = self.B
        self.gap_const = np.concatenate(gap_const)
        self.gap_h = np.concatenate(gap_lin)
        self.wall_of = np.concatenate(wall_of)
        self.vertex_of = np.concatenate(vertex_of)
        self.tributary_area = np.concatenate(areas)
        Bf = self.B_all[:, self.free].tocsc()
        S = np.empty((Bf.shape[0], Bf.shape[0]))
        # S in column blocks: K⁻¹Bᵀ itself (dofs × multipliers) would not fit in memory on fine meshes.
        for start in range(0, Bf.shape[0], 256):
            cols = self._factor.solve(Bf[start:start + 256].toarray().T)
            S[:, start:start + 256] = Bf @ cols
        S = 0.5 * (S + S.T)
        self._S = S
        self._chol = scipy.linalg.cholesky(S[: self.n_normal, : self.n_normal], lower=True)
        self._stuck = np.zeros(self.n_normal, dtype=bool)
        self._ref = np.zeros((self.n_normal, 2))
        self._u_prev = np.zeros(self.basis.N)
        log.info("contact: %d multipliers, %d free dofs", len(self.gap_h), len(self.free))

    def _boundary_facets_not_on_plane(self, axis):
        bf = self.mesh.boundary_facets()
        coords = self.mesh.p[:, self.mesh.facets[:, bf]]
        on_plane = np.any(np.all(np.abs(coords) < 1e-9 * self.extent, axis=1), axis=0)
        return bf[~on_plane]

    # -- solution --------------------------------------------------------------------------------------
    def solve(self, wall_positions):
        """Equilibrium with wall `i` at x_axis = wall_positions[i]."""
        h = np.asarray(wall_positions, dtype=float).reshape(-1)
        if h.shape != (len(self.walls),):
            raise ValueError(f"wall_positions must have {len(self.walls)} entries, got {h.shape}")
        g0 = self.gap_const + self.gap_h * h[self.wall_of]
        if self.tied:
            return self._solve_tied(g0, h)
        # min ½λᵀSλ + g0ᵀλ, λ ≥ 0  ⇔  min |Lᵀλ + L⁻¹g0|², λ ≥ 0 with S = LLᵀ
        rhs = -scipy.linalg.solve_triangular(self._chol, g0, lower=True)
        lam, _ = scipy.optimize.nnls(self._chol.T, rhs, maxiter=50 * len(g0))
        u = np.zeros(self.basis.N)
        u[self.free] = -self._factor.solve(self.B[:, self.free].T @ lam)
        # the contact force on the body is −Bᵀλ along −axis, so each wall carries the sum of its Bᵀλ
        reactions = np.array([np.sum((self.B[self.wall_of == w].T @ lam[self.wall_of == w]))
                              for w in range(len(self.walls))])
        energy = 0.5 * u @ (self.K @ u)
        self._check_penetration(u, h)
        return WallState(u=u, multipliers=lam, reactions=reactions, energy=energy, active=lam > 0)

    def _solve_tied(self, g0, h):
        """Stick contact: vertices in contact keep the tangential (weighted) displacement they had when
        they touched down, approximated by their value at the previous load level (load monotonically in
        small steps). Active-set loop around the exact QP for a fixed stuck set."""
        stuck, ref = self._stuck.copy(), self._ref.copy()
        bt_prev = (self.Bt @ self._u_prev)[self._t_of_normal]
        m = self.n_normal
        for _ in range(100):
            t_idx = self._t_of_normal[stuck].reshape(-1)
            idx = np.concatenate([np.arange(m), m + t_idx])
            S = self._S[np.ix_(idx, idx)]
            c = np.concatenate([g0, ref[stuck].reshape(-1)])
            L = scipy.linalg.cholesky(S, lower=True)
            rhs = -scipy.linalg.solve_triangular(L, c, lower=True)
            # tangential multipliers are free: split into positive and negative parts for NNLS
            A = np.concatenate([L.T, -L.T[:, m:]], axis=1)
            z, _ = scipy.optimize.nnls(A, rhs, maxiter=50 * A.shape[1])
            lam = z[: len(idx)].copy()
            lam[m:] -= z[len(idx):]
            active = lam[:m] > 0
            newly, released = active & ~stuck, stuck & ~active
            if not newly.any() and not released.any():
                break
            ref[newly] = bt_prev[newly]
            stuck = (stuck | newly) & ~released
        else:
            raise RuntimeError("tied contact active set did not settle in 100 iterations; use smaller load steps")
        lam_all = np.zeros(self.B_all.shape[0])
        lam_all[:m] = lam[:m]
        lam_all[m + t_idx] = lam[m:]
        u = np.zeros(self.basis.N)
        u[self.free] = -self._factor.solve(self.B_all[:, self.free].T @ lam_all)
        self._stuck, self._ref, self._u_prev = stuck, ref, u
        reactions = np.array([np.sum(self.B[self.wall_of == w].T @ lam[:m][self.wall_of == w])
                              for w in range(len(self.walls))])
        self._check_penetration(u, h)
        return WallState(u=u, multipliers=lam_all, reactions=reactions, energy=0.5 * u @ (self.K @ u), active=active)

    def _check_penetration(self, u, h):
        """Surface vertices outside the candidate set must not pass through a wall."""
        verts = self.mesh.p[:, : self.mesh.nvertices]
        dofs = self.basis.nodal_dofs[:, : self.mesh.nvertices]
        for w, axis in enumerate(self.walls):
            cand = np.zeros(self.mesh.nvertices, dtype=bool)
            cand[self.vertex_of[self.wall_of == w]] = True
            surf = np.unique(self.mesh.facets[:, self._boundary_facets_not_on_plane(axis)])
            others = surf[~cand[surf]]
            pos = verts[axis, others] + u[dofs[axis, others]]
            if np.any(pos > h[w]):
                raise RuntimeError(f"a non-candidate vertex penetrates wall {w}; raise candidate_gap")

    def pole_displacement(self, u, axis):
        """Displacement along `axis` of the vertex on that axis at the outer surface (the pole)."""
        verts = self.mesh.p[:, : self.mesh.nvertices]
        target = self.extent * np.eye(3)[axis]
        k = np.argmin(np.linalg.norm(verts.T - target, axis=1))
        return u[self.basis.nodal_dofs[axis, k]]

    def contact_radius(self, state, wall=0):
        """Contact radius from the area carried by the active multipliers (octant quarter-disk area)."""
        sel = self.wall_of == wall
        area = np.sum(self.tributary_area[sel][state.active[sel]])
        return np.sqrt(4.0 * area / np.pi)


class SPDSolver:
    """Sparse Cholesky of a symmetric positive definite matrix (CHOLMOD via cvxopt, else SuperLU)."""

    def __init__(self, A):
        A = A.tocoo()
        try:
            import cvxopt
            import cvxopt.cholmod
        except ImportError:  # pragma: no cover - exercised only without the fem extra
            self._lu = scipy.sparse.linalg.splu(A.tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                                options={"SymmetricMode": True})
            self._cvx = None
            return
        self._cvx = cvxopt
        cvxopt.cholmod.options["supernodal"] = 2
        cvxopt.cholmod.options["postorder"] = True
        lower = A.row >= A.col
        self._A = cvxopt.spmatrix(A.data[lower], A.row[lower].astype(int), A.col[lower].astype(int), A.shape)
        self._F = cvxopt.cholmod.symbolic(self._A, uplo="L")
        cvxopt.cholmod.numeric(self._A, self._F)

    def solve(self, rhs):
        rhs = np.asarray(rhs, dtype=float)
        if self._cvx is None:
            return self._lu.solve(rhs)
        X = self._cvx.matrix(rhs.reshape(rhs.shape[0], -1).copy(order="F"))
        self._cvx.cholmod.solve(self._F, X)
        return np.array(X).reshape(rhs.shape)


def hertz_plate_force(radius, E, nu, approach):
    """Hertz force of a sphere squeezed between two rigid plates (total approach, half per contact)."""
    delta_side = 0.5 * np.asarray(approach, dtype=float)
    return 4.0 / 3.0 * E / (1.0 - nu**2) * np.sqrt(radius) * delta_side**1.5


def plate_mesh(radius, approach_max, mesh_size=None):
    """Default graded octant mesh for the two-plate test: a/`mesh_size` elements on the cap."""
    a = np.sqrt(radius * 0.5 * approach_max)
    h_cap = a / 4.0 if mesh_size is None else float(mesh_size)
    _check = h_cap
    if not np.isfinite(_check) or _check <= 0:
        raise ValueError(f"mesh_size must be a finite number > 0, got {mesh_size}")
    return octant_sphere_mesh(radius, cap_size=h_cap, bulk_size=0.4 * radius, cap_radius=1.3 * a,
                              poles=("z",), grading=1.0)


def _load_path(values, substeps):
    """Increasing load levels with `substeps` equal steps up to each requested level (for stick contact)."""
    path, marks, prev = [], [], 0.0
    for v in values:
        path.extend(np.linspace(prev, v, substeps + 1)[1:])
        marks.append(len(path) - 1)
        prev = v
    return np.array(path), np.array(marks)


def sphere_between_plates(radius, E, nu, approach, mesh_size=None, return_details=False, tied=False,
                          substeps=8):
    """Reaction force of each plate on a linear elastic sphere squeezed between two rigid frictionless plates.

    radius, E (Young's modulus), nu (Poisson's ratio); `approach` is the total approach of the plates
    (scalar or increasing array, each ≥ 0 and < radius; each plate moves by half). `mesh_size` is the
    element size on the contact cap (default: contact radius at the largest approach / 4). Solved on one
    octant with quadratic tetrahedra. Returns forces with the shape of `approach`; with
    `return_details=True` also a dict with contact radii, strain energies (whole sphere) and mesh size.
    `tied=True` makes the plates sticking (no slip once in contact); the load is then applied
    incrementally with `substeps` steps up to each requested approach, which must be increasing.
    """
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be a finite number > 0, got {radius}")
    _check_material(E, nu)
    approach_arr = np.atleast_1d(np.asarray(approach, dtype=float))
    if approach_arr.size == 0 or np.any(~np.isfinite(approach_arr)) or np.any(approach_arr < 0) \
            or np.any(approach_arr >= radius):
        raise ValueError(f"approach must be finite values in [0, radius={radius}), got {approach}")
    if mesh_size is not None and (not np.isfinite(mesh_size) or not 0 < mesh_size <= radius):
        raise ValueError(f"mesh_size must lie in (0, radius={radius}], got {mesh_size}")
    if tied and (np.any(np.diff(approach_arr) <= 0) or int(substeps) < 1):
        raise ValueError("approach must be strictly increasing and substeps >= 1 for tied contact")
    amax = max(approach_arr.max(), 1e-6 * radius)
    mesh = plate_mesh(radius, amax, mesh_size)
    a_max = np.sqrt(radius * 0.5 * amax)
    problem = OctantWallProblem(mesh, E, nu, walls=["z"], outer_extent=radius, tied=tied,
                                candidate_gap=max(2.5 * a_max**2 / (2 * radius), 0.5 * amax) + 1e-12)
    path, marks = _load_path(approach_arr, int(substeps)) if tied else (approach_arr, np.arange(len(approach_arr)))
    forces, radii, energies = [], [], []
    for k, d in enumerate(path):
        state = problem.solve([radius - 0.5 * d])
        if k not in marks:
            continue
        forces.append(4.0 * state.reactions[0])  # the plate touches four octants
        radii.append(problem.contact_radius(state))
        energies.append(8.0 * state.energy)
    forces = np.asarray(forces).reshape(np.shape(approach))
    if not return_details:
        return forces
    return forces, {"contact_radius": np.asarray(radii), "energy": np.asarray(energies),
                    "unknowns": problem.basis.N - len(problem.fixed), "multipliers": len(problem.gap_h),
                    "problem": problem}
