"""`ShapedContact`: one contact of a convex level-set grain with a grain, sphere or plane, Hertzian
with the local curvature and any of the four tangential laws, driven by the two bodies' poses.

Each step (a straight movement from the previous poses to the new ones):
1. Geometry (`shape_geometry.contact_geometry`): point x, normal n (A to B), overlap delta, principal
   relative curvatures lam1 <= lam2. Newton starts from the previous contact point carried along by
   the motion, or (first touch, or a failed warm start) from the deepest surface node.
2. Frame and shift, by the same rule as spheres (`frames`): the contact frame turns by tilt
   (old normal onto the new one) and twirl (mean spin of the pair about the normal); the shift
   increment is the displacement of B's material point at x relative to A's, projected on the
   contact plane, in the new frame. A first touch starts a fresh frame with zero shift.
3. Law: the effective radius R of the chosen rule (`shape_hertz`) from lam1, lam2; the law runs
   (`laws.contact_step`) with the parameter record of a fixed reference radius R_ref (the pair's
   volume-equivalent R*) and its forces are scaled by sqrt(R / R_ref).

Why the scaling, and what it assumes. In Hertz-Mindlin and in Jäger's superposition the relations
between the displacements (delta, shift) and the slopes p_i of the equivalent load history do not
involve the radius (S = kappa sum p_i d delta_i, slip when |S' - S(delta)| > kappa mu (delta' - delta)),
while every force is proportional to sqrt(R) (N = 4/3 E* sqrt(R) delta^(3/2), T = sum p_i dN_i, and
k_t = 4 G sqrt(R delta)/(2 - nu) for the incremental laws). So a history run at R_ref and scaled by
sqrt(R/R_ref) is exactly the history run at R: at constant R (a sphere, or a contact that does not
wander over the surface) the result is the law's result at that R. Jäger's theory assumes fixed
surfaces with concentric circular contact areas a_i = sqrt(R delta_i). When R changes along the
history (the contact point moves to a differently curved part of the surface, or the pair rolls),
the stored history is kept in displacement space and re-evaluated on the current surfaces, as if
the whole history had happened at the current R. What that approximates: the tractions laid down
earlier are given the footprints of the current curvature (not of the curvature they were created
on), and at fixed displacements the stored elastic energy changes with sqrt(R) without work by the
movement (a non-conservative error of order dR/R per change). Stick/slip decisions, memory, and
|T| <= mu N are unaffected. An elliptical contact (lam1 != lam2) is treated as the circle of the
equivalent radius: its normal force is Hertz's to within the fit of `shape_hertz`, while the
tangential compliance of an ellipse, which depends on the direction of the shift (Mindlin 1949),
is taken as isotropic. Energy bookkeeping (P_ENERGY) is off: the law's counters would be in
reference units.
"""

import math

import numpy as np

from . import shape_geometry as G
from . import state as S
from .frames import frame_init, frame_update, from_frame, to_frame
from .hertz import check_material, contact_params
from .laws import contact_step, law_id
from .levelset_spline import spline_coefficients
from .shape_hertz import effective_radius, radius_rule as rule_id
from .store import HistoryStore

_DUMMY_COEF = np.zeros((1, 1, 1))


class ShapedBody:
    """A body the shaped contact can take: a level-set template (with its spline coefficients and
    surface nodes), a sphere, or a plane (solid below its body x-y plane)."""

    def __init__(self, kind, coef, coef_origin, spacing, nodes, radius, equivalent_radius):
        self.kind = kind
        self.coef = coef
        self.coef_origin = coef_origin
        self.spacing = spacing
        self.nodes = nodes
        self.radius = radius
        self.equivalent_radius = equivalent_radius

    @classmethod
    def levelset(cls, grain):
        """From a `LevelSetGrain` (the spline is computed here, once per template)."""
        coef, origin = spline_coefficients(grain.phi_grid, grain.grid_origin, grain.spacing)
        r_eq = (3.0 * grain.volume / (4.0 * math.pi)) ** (1.0 / 3.0)
        return cls(G.BODY_LEVELSET, coef, origin, float(grain.spacing), np.ascontiguousarray(grain.nodes),
                   0.0, r_eq)

    @classmethod
    def sphere(cls, radius):
        r = float(radius)
        if not (math.isfinite(r) and r > 0.0):
            raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
        return cls(G.BODY_SPHERE, _DUMMY_COEF, np.zeros(3), 1.0, np.zeros((0, 3)), r, r)

    @classmethod
    def plane(cls):
        return cls(G.BODY_PLANE, _DUMMY_COEF, np.zeros(3), 1.0, np.zeros((0, 3)), 0.0, math.inf)


def rotation_vector(rot_new, rot_old):
    """Rotation vector (axis times angle) of the incremental rotation rot_new rot_old^T."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(rot_new @ rot_old.T).as_rotvec()


def material_displacement(x, pos_old, rot_old, pos_new, rot_new):
    """Displacement over a movement of the body's material point that was at world point x."""
    return pos_new + rot_new @ (rot_old.T @ (x - pos_old)) - x


def _check_pose(name, pos, rot):
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    rot = np.ascontiguousarray(rot, dtype=np.float64)
    if pos.shape != (3,) or not np.all(np.isfinite(pos)):
        raise ValueError(f"{name} position must be a finite 3-vector, got {pos!r}")
    if rot.shape != (3, 3) or not np.all(np.isfinite(rot)) or np.abs(rot.T @ rot - np.eye(3)).max() > 1e-9 \
            or np.linalg.det(rot) < 0:
        raise ValueError(f"{name} rotation must be a proper 3x3 rotation matrix (body -> world)")
    return pos, rot


class ShapedContact:
    """One contact between level-set grain A and body B (ShapedBody), moved by poses.

    Parameters: law (one of TANGENTIAL_LAWS), E (Pa), nu, mu, xi (Jaeger approximation), kt_linear
    (linear law: N/m at the reference radius), radius_rule ('elliptic' (default), 'gauss', 'mean'),
    curvature_limit (> 0: the effective radius is at most curvature_limit x R_ref, R_ref the
    volume-equivalent R* of the pair), newton_iter (max Newton steps), newton_tol (Newton step
    tolerance in units of A's grid spacing; the overlap is stationary at the solution, so a point
    1e-6 h off changes it by ~1e-12 h^2/R and the normal by ~1e-6 h/R).
    """

    def __init__(self, body_a, body_b, law="jaeger", E=70e9, nu=0.25, mu=0.5, xi=0.0, kt_linear=0.0,
                 radius_rule="elliptic", curvature_limit=10.0, newton_iter=30, newton_tol=1e-6):
        if not isinstance(body_a, ShapedBody) or body_a.kind != G.BODY_LEVELSET:
            raise ValueError("body_a must be a ShapedBody.levelset(grain)")
        if not isinstance(body_b, ShapedBody):
            raise ValueError("body_b must be a ShapedBody (levelset, sphere or plane)")
        check_material(E, nu, mu, xi)
        cl = float(curvature_limit)
        if not (math.isfinite(cl) and cl > 0.0):
            raise ValueError(f"curvature_limit must be a finite number > 0, got {curvature_limit!r}")
        if isinstance(newton_iter, bool) or int(newton_iter) != newton_iter or int(newton_iter) < 1:
            raise ValueError(f"newton_iter must be an integer >= 1, got {newton_iter!r}")
        tol = float(newton_tol)
        if not (math.isfinite(tol) and tol > 0.0):
            raise ValueError(f"newton_tol must be a finite number > 0, got {newton_tol!r}")
        self.a = body_a
        self.b = body_b
        self.law_name = law
        self.law = law_id(law)
        self.rule = rule_id(radius_rule)
        ra = body_a.equivalent_radius
        rb = body_b.equivalent_radius
        self.r_ref = ra if math.isinf(rb) else ra * rb / (ra + rb)
        self.r_limit = cl * self.r_ref
        self.prm = contact_params(self.r_ref, math.inf, E, nu, mu, xi, kt_linear, energy=False)
        self.fs = np.zeros((1, S.N_FSTATE))
        self.ist = np.zeros((1, S.N_ISTATE), dtype=np.int64)
        self.ist[0, S.I_HEAD] = -1
        self.store = HistoryStore(64)
        self.cq = np.zeros((1, 4))
        self.geom = np.zeros(G.N_GEOM)
        self.newton_iter = int(newton_iter)
        self.tol = tol * body_a.spacing
        self.step_max = body_a.spacing
        self.poses = None
        self.touching = False
        self.scale = 1.0
        self.R = self.r_ref
        self.limited = False
        self.cold_starts = 0

    # ------------------------------------------------------------------ geometry
    def _geometry(self, posA, rotA, posB, rotB, x0):
        a, b = self.a, self.b
        G.contact_geometry(a.coef, a.coef_origin, a.spacing, posA, rotA, b.kind, b.coef, b.coef_origin,
                           b.spacing, posB, rotB, b.radius, x0, self.tol, self.step_max, self.newton_iter,
                           self.geom)

    def _cold_start(self, posA, rotA, posB, rotB):
        a, b = self.a, self.b
        x0 = np.zeros(3)
        best = G.deepest_node(a.nodes, posA, rotA, b.kind, b.coef, b.coef_origin, b.spacing, posB, rotB,
                              b.radius, math.inf, x0)
        if b.kind == G.BODY_LEVELSET:
            best = G.deepest_node(b.nodes, posB, rotB, G.BODY_LEVELSET, a.coef, a.coef_origin, a.spacing,
                                  posA, rotA, 0.0, best, x0)
        self.cold_starts += 1
        if not math.isfinite(best):
            G.no_geometry(self.geom)
            return
        self._geometry(posA, rotA, posB, rotB, x0)

    def geometry(self, posA, rotA, posB, rotB):
        """The contact record (see `shape_geometry`) at the given poses, from a cold start."""
        posA, rotA = _check_pose("A", posA, rotA)
        posB, rotB = _check_pose("B", posB, rotB)
        self._cold_start(posA, rotA, posB, rotB)
        return self.geom.copy()

    # ------------------------------------------------------------------ one movement
    def step(self, posA, rotA, posB, rotB):
        """Move both bodies (straight movement) to the given poses (rot: body -> world); returns (N, T)
        with T the tangential force (2-vector, contact frame, Mindlin's sign: the force on B is
        N n - T_world)."""
        posA, rotA = _check_pose("A", posA, rotA)
        posB, rotB = _check_pose("B", posB, rotB)
        old = self.poses
        geom = self.geom
        x_prev = geom[G.G_X:G.G_X + 3].copy()
        if self.touching:
            # warm start: the previous point carried by the mean of the two bodies' motions
            x0 = 0.5 * (x_prev + material_displacement(x_prev, old[0], old[1], posA, rotA)
                        + x_prev + material_displacement(x_prev, old[2], old[3], posB, rotB))
            self._geometry(posA, rotA, posB, rotB, x0)
            if geom[G.G_FLAG] != G.GEOM_NEWTON:
                self._cold_start(posA, rotA, posB, rotB)
        else:
            self._cold_start(posA, rotA, posB, rotB)
        delta = geom[G.G_DELTA]
        st = self.store
        st.ensure_free(1)
        if not (delta > 0.0):
            contact_step(self.law, self.prm, self.fs, self.ist, 0, 0.0, 0.0, 0.0, st.pts, st.nxt, st.meta)
            self.touching = False
            self.poses = (posA, rotA, posB, rotB)
            self.scale = 0.0
            return 0.0, np.zeros(2)
        n = geom[G.G_N:G.G_N + 3]
        if not self.touching:
            frame_init(self.cq, 0, n[0], n[1], n[2])
            dsx = dsy = 0.0
        else:
            spin = 0.5 * (rotation_vector(rotA, old[1]) + rotation_vector(rotB, old[3]))
            frame_update(self.cq, 0, n[0], n[1], n[2], spin[0], spin[1], spin[2], 1.0)
            du = (material_displacement(x_prev, old[2], old[3], posB, rotB)
                  - material_displacement(x_prev, old[0], old[1], posA, rotA))
            du = du - (du @ n) * n
            dsx, dsy, _ = to_frame(self.cq, 0, du[0], du[1], du[2])
        self.R, self.limited = effective_radius(self.rule, geom[G.G_LAM1], geom[G.G_LAM2], self.r_limit)
        self.scale = math.sqrt(self.R / self.r_ref)
        contact_step(self.law, self.prm, self.fs, self.ist, 0, delta, dsx, dsy, st.pts, st.nxt, st.meta)
        self.touching = True
        self.poses = (posA, rotA, posB, rotB)
        return self.N, self.T

    # ------------------------------------------------------------------ results
    @property
    def N(self):
        return self.scale * float(self.fs[0, S.F_N])

    @property
    def T(self):
        return self.scale * self.fs[0, S.F_TX:S.F_TY + 1].copy()

    @property
    def normal(self):
        return self.geom[G.G_N:G.G_N + 3].copy()

    @property
    def point(self):
        return self.geom[G.G_X:G.G_X + 3].copy()

    @property
    def delta(self):
        return float(self.geom[G.G_DELTA])

    @property
    def flag(self):
        """'newton', 'fallback' or 'none' (see shape_geometry)."""
        return ("newton", "fallback", "none")[int(self.geom[G.G_FLAG])]

    def force_on_b(self):
        """World force on B (3,); the force on A is its opposite."""
        if not self.touching:
            return np.zeros(3)
        T = self.T
        tw = np.array(from_frame(self.cq, 0, T[0], T[1], 0.0))
        return self.N * self.normal - tw

    def torques(self):
        """(torque on A, torque on B) about their centres (world)."""
        f = self.force_on_b()
        return np.cross(self.geom[G.G_RA:G.G_RA + 3], -f), np.cross(self.geom[G.G_RB:G.G_RB + 3], f)
