"""One contact point, common normal, overlap and surface curvatures of two convex posed bodies.

Bodies. Each body is given by its kind, a body-frame signed distance and a pose x_world = pos + rot
x_body:
    BODY_LEVELSET  phi_body = the tricubic spline of a template grid (`levelset_spline`)
    BODY_SPHERE    phi_body = |x| - radius
    BODY_PLANE     phi_body = x_body[2]: the half space below the body x-y plane is solid, so a wall
                   through point p with normal n_w pointing into the domain has pos = p and rot[:, 2] = n_w
Body A is always a level set; B may be any kind.

The contact. For convex bodies with exact signed distances phi_A, phi_B the function
f(x) = phi_A(x) + phi_B(x) is convex; where it is stationary the two outward normals are opposite,
and along that common normal f is constant and equal to minus the overlap (two spheres: f = |c1 c2|
- R1 - R2 on the segment of the centres). So the contact is found by Newton's method on the three
conditions
    t1 . grad f = 0,  t2 . grad f = 0   (t1, t2 span the plane normal to n = (g_A - g_B)/|g_A - g_B|)
    phi_A - phi_B = 0                   (the point midway through the overlap, as for spheres)
with the Hessians of both level sets, started from the deepest surface node of one body inside the
other (`deepest_node`) or from the previous step's point. Overlap (first order in |grad phi| - 1):
delta = -(phi_A/|g_A| + phi_B/|g_B|). If Newton leaves the spline's domain, meets a singular system
or does not converge in `max_iter` steps, the record is evaluated at the start point instead and
flagged GEOM_FALLBACK (a node's depth and its local normal: usable, less accurate). No outcome is NaN.
A flat face against a flat face has no unique contact point: the system is singular (fallback) or
nearly so (Newton stops somewhere on the face); the overlap is still the face's, and the curvatures
are ~0, which `shape_hertz` bounds. Accuracy needs the shape's features resolved by ~3 cells: the
spline of a signed distance with kinks (box edges rounded by 1.8 cells) is 2e-4 of the size off on
the neighbouring face, at 3.6 cells 1e-7.

Curvatures. The principal curvatures of the level surface through x are the eigenvalues of
P H P / |g| on the tangent plane (P = I - n n^T). x lies a distance |phi| inside each surface; level
sets of a signed distance are parallel surfaces, whose curvature tensors obey K_0 = K (I - phi K)^-1,
which carries each tensor to the body's own surface. The relative curvature tensor of the gap
h(y) = 1/2 y^T (K_A + K_B) y is the sum of both, taken in one tangent basis; its eigenvalues
lam1 <= lam2 (both > 0 for convex bodies in contact) are 2A, 2B of Johnson's Contact Mechanics §4.2.

Record (float64 array of length N_GEOM, written by `contact_geometry`):
    G_X..G_X+2      contact point (world)
    G_N..G_N+2      unit normal from A to B
    G_DELTA         overlap (> 0 in contact; -inf: no geometry, flag GEOM_NONE)
    G_LAM1, G_LAM2  principal relative curvatures, ascending
    G_E1..G_E1+2    unit tangent along lam1 (the long axis of the contact ellipse)
    G_KA1, G_KA2    principal curvatures of A's surface there; G_KB1, G_KB2 of B's
    G_RA..G_RA+2    lever arm x - pos_A; G_RB..G_RB+2 lever arm x - pos_B
    G_FLAG          GEOM_NEWTON, GEOM_FALLBACK or GEOM_NONE
    G_ITER          Newton iterations used
"""

import math

import numpy as np

from .._jit import njit
from .levelset_spline import spline_eval, spline_value

BODY_LEVELSET = 0
BODY_SPHERE = 1
BODY_PLANE = 2

G_X = 0
G_N = 3
G_DELTA = 6
G_LAM1 = 7
G_LAM2 = 8
G_E1 = 9
G_KA1 = 12
G_KA2 = 13
G_KB1 = 14
G_KB2 = 15
G_RA = 16
G_RB = 19
G_FLAG = 22
G_ITER = 23
N_GEOM = 24

GEOM_NEWTON = 0
GEOM_FALLBACK = 1
GEOM_NONE = 2


@njit
def body_eval(kind, coef, org, h, pos, rot, radius, x, g, H):
    """phi of a posed body at world point x; world gradient into g (3,), Hessian into H (3, 3).

    Returns (phi, defined)."""
    # body coordinates: rot^T (x - pos)
    d0 = x[0] - pos[0]
    d1 = x[1] - pos[1]
    d2 = x[2] - pos[2]
    bx = rot[0, 0] * d0 + rot[1, 0] * d1 + rot[2, 0] * d2
    by = rot[0, 1] * d0 + rot[1, 1] * d1 + rot[2, 1] * d2
    bz = rot[0, 2] * d0 + rot[1, 2] * d1 + rot[2, 2] * d2
    if kind == BODY_PLANE:
        for i in range(3):
            g[i] = rot[i, 2]
            for j in range(3):
                H[i, j] = 0.0
        return bz, True
    if kind == BODY_SPHERE:
        r = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if r == 0.0:
            return -radius, False
        u = (d0 / r, d1 / r, d2 / r)
        for i in range(3):
            g[i] = u[i]
            for j in range(3):
                H[i, j] = ((1.0 if i == j else 0.0) - u[i] * u[j]) / r
        return r - radius, True
    v, gx, gy, gz, hxx, hyy, hzz, hxy, hxz, hyz, ok = spline_eval(coef, org[0], org[1], org[2], h, bx, by, bz)
    if not ok:
        return v, False
    for i in range(3):
        g[i] = rot[i, 0] * gx + rot[i, 1] * gy + rot[i, 2] * gz
    # H = rot Hb rot^T, one row of rot Hb at a time
    for i in range(3):
        r0 = rot[i, 0]
        r1 = rot[i, 1]
        r2 = rot[i, 2]
        t0 = r0 * hxx + r1 * hxy + r2 * hxz
        t1 = r0 * hxy + r1 * hyy + r2 * hyz
        t2 = r0 * hxz + r1 * hyz + r2 * hzz
        for j in range(i, 3):
            H[i, j] = t0 * rot[j, 0] + t1 * rot[j, 1] + t2 * rot[j, 2]
            H[j, i] = H[i, j]
    return v, True


@njit
def body_value(kind, coef, org, h, pos, rot, radius, x0, x1, x2):
    """phi of a posed body at world point (x0, x1, x2) (inf where a level set is not defined)."""
    d0 = x0 - pos[0]
    d1 = x1 - pos[1]
    d2 = x2 - pos[2]
    bx = rot[0, 0] * d0 + rot[1, 0] * d1 + rot[2, 0] * d2
    by = rot[0, 1] * d0 + rot[1, 1] * d1 + rot[2, 1] * d2
    bz = rot[0, 2] * d0 + rot[1, 2] * d1 + rot[2, 2] * d2
    if kind == BODY_PLANE:
        return bz
    if kind == BODY_SPHERE:
        return math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - radius
    v, ok = spline_value(coef, org[0], org[1], org[2], h, bx, by, bz)
    return v


@njit
def tangent_basis(nx, ny, nz):
    """Two unit vectors completing the unit vector n to a right-handed orthonormal basis."""
    # cross n with the coordinate axis least aligned with it: well conditioned for every n
    if abs(nx) <= abs(ny) and abs(nx) <= abs(nz):
        ax, ay, az = 1.0, 0.0, 0.0
    elif abs(ny) <= abs(nz):
        ax, ay, az = 0.0, 1.0, 0.0
    else:
        ax, ay, az = 0.0, 0.0, 1.0
    t1x = ay * nz - az * ny
    t1y = az * nx - ax * nz
    t1z = ax * ny - ay * nx
    inv = 1.0 / math.sqrt(t1x * t1x + t1y * t1y + t1z * t1z)
    t1x *= inv
    t1y *= inv
    t1z *= inv
    return t1x, t1y, t1z, ny * t1z - nz * t1y, nz * t1x - nx * t1z, nx * t1y - ny * t1x


@njit
def sym2_eigen(k11, k12, k22):
    """Eigenvalues (ascending) of the symmetric 2x2 [[k11, k12], [k12, k22]] and the unit
    eigenvector (c, s) of the smaller one."""
    m = 0.5 * (k11 + k22)
    hd = 0.5 * (k11 - k22)
    d = math.sqrt(hd * hd + k12 * k12)
    # direction of the larger eigenvalue at angle th = 1/2 atan2(2 k12, k11 - k22); the smaller is normal to it
    th = 0.5 * math.atan2(k12, hd)
    return m - d, m + d, -math.sin(th), math.cos(th)


@njit
def _surface_tensor(H, gn, dist, t1, t2):
    """Curvature tensor (k11, k12, k22) in the basis t1, t2 of the surface a distance `dist` (phi/|g|)
    from the level set through the evaluation point, whose Hessian is H and gradient norm gn."""
    k11 = k12 = k22 = 0.0
    for i in range(3):
        for j in range(3):
            k11 += t1[i] * H[i, j] * t1[j]
            k12 += t1[i] * H[i, j] * t2[j]
            k22 += t2[i] * H[i, j] * t2[j]
    k11 /= gn
    k12 /= gn
    k22 /= gn
    # parallel surfaces: K_0 = K (I - dist K)^-1 (2x2, symmetric result since K and its inverse commute)
    a11 = 1.0 - dist * k11
    a12 = -dist * k12
    a22 = 1.0 - dist * k22
    det = a11 * a22 - a12 * a12
    if not (det > 1e-6):  # the overlap reaches a centre of curvature: keep the tensor where it was taken
        return k11, k12, k22
    i11 = a22 / det
    i12 = -a12 / det
    i22 = a11 / det
    return k11 * i11 + k12 * i12, k11 * i12 + k12 * i22, k12 * i12 + k22 * i22


@njit
def _fill_record(x, phiA, gA, HA, phiB, gB, HB, posA, posB, out):
    """Write the record at point x from both bodies' values there; False if degenerate."""
    w0 = gA[0] - gB[0]
    w1 = gA[1] - gB[1]
    w2 = gA[2] - gB[2]
    wn = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    gnA = math.sqrt(gA[0] * gA[0] + gA[1] * gA[1] + gA[2] * gA[2])
    gnB = math.sqrt(gB[0] * gB[0] + gB[1] * gB[1] + gB[2] * gB[2])
    if not (wn > 0.0 and gnA > 0.0 and gnB > 0.0):
        return False
    nx, ny, nz = w0 / wn, w1 / wn, w2 / wn
    t1x, t1y, t1z, t2x, t2y, t2z = tangent_basis(nx, ny, nz)
    t1 = (t1x, t1y, t1z)
    t2 = (t2x, t2y, t2z)
    dA = phiA / gnA
    dB = phiB / gnB
    a11, a12, a22 = _surface_tensor(HA, gnA, dA, t1, t2)
    b11, b12, b22 = _surface_tensor(HB, gnB, dB, t1, t2)
    kA1, kA2, _, _ = sym2_eigen(a11, a12, a22)
    kB1, kB2, _, _ = sym2_eigen(b11, b12, b22)
    lam1, lam2, c, s = sym2_eigen(a11 + b11, a12 + b12, a22 + b22)
    delta = -(dA + dB)
    vals = (x[0], x[1], x[2], nx, ny, nz, delta, lam1, lam2, kA1, kA2, kB1, kB2)
    for v in vals:
        if not math.isfinite(v):
            return False
    for i in range(3):
        out[G_X + i] = x[i]
        out[G_RA + i] = x[i] - posA[i]
        out[G_RB + i] = x[i] - posB[i]
    out[G_N] = nx
    out[G_N + 1] = ny
    out[G_N + 2] = nz
    out[G_DELTA] = delta
    out[G_LAM1] = lam1
    out[G_LAM2] = lam2
    out[G_E1] = c * t1x + s * t2x
    out[G_E1 + 1] = c * t1y + s * t2y
    out[G_E1 + 2] = c * t1z + s * t2z
    out[G_KA1] = kA1
    out[G_KA2] = kA2
    out[G_KB1] = kB1
    out[G_KB2] = kB2
    return True


@njit
def no_geometry(out):
    """The record of a pair without geometry (flag GEOM_NONE, overlap -inf)."""
    for i in range(N_GEOM):
        out[i] = 0.0
    out[G_N + 2] = 1.0
    out[G_DELTA] = -np.inf
    out[G_FLAG] = GEOM_NONE


@njit
def contact_geometry(cA, oA, hA, posA, rotA,
                     kindB, cB, oB, hB, posB, rotB, radB,
                     x0, tol, step_max, max_iter, out):
    """Contact record (see module doc) of level-set body A and body B, Newton started at world point x0.

    tol: convergence on the Newton step length (m); step_max: longest Newton step (m), a trust
    region that keeps early steps inside the band where both level sets are smooth; max_iter >= 1.
    """
    x = np.empty(3)
    for i in range(3):
        x[i] = x0[i]
    gA = np.empty(3)
    gB = np.empty(3)
    HA = np.empty((3, 3))
    HB = np.empty((3, 3))
    for it in range(max_iter):
        phiA, okA = body_eval(BODY_LEVELSET, cA, oA, hA, posA, rotA, 0.0, x, gA, HA)
        phiB, okB = body_eval(kindB, cB, oB, hB, posB, rotB, radB, x, gB, HB)
        if not (okA and okB):
            break
        w0 = gA[0] - gB[0]
        w1 = gA[1] - gB[1]
        w2 = gA[2] - gB[2]
        wn = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        if not (wn > 0.0):
            break
        t1x, t1y, t1z, t2x, t2y, t2z = tangent_basis(w0 / wn, w1 / wn, w2 / wn)
        r0 = gA[0] + gB[0]
        r1 = gA[1] + gB[1]
        r2 = gA[2] + gB[2]
        # rows: t1^T (HA + HB), t2^T (HA + HB), w^T
        m = np.empty((3, 3))
        for j in range(3):
            c0 = HA[0, j] + HB[0, j]
            c1 = HA[1, j] + HB[1, j]
            c2 = HA[2, j] + HB[2, j]
            m[0, j] = t1x * c0 + t1y * c1 + t1z * c2
            m[1, j] = t2x * c0 + t2y * c1 + t2z * c2
        m[2, 0] = w0
        m[2, 1] = w1
        m[2, 2] = w2
        b0 = -(t1x * r0 + t1y * r1 + t1z * r2)
        b1 = -(t2x * r0 + t2y * r1 + t2z * r2)
        b2 = -(phiA - phiB)
        # Cramer's rule; rows carry different units, which scaling a row does not change
        c00 = m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]
        c01 = m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2]
        c02 = m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]
        det = m[0, 0] * c00 + m[0, 1] * c01 + m[0, 2] * c02
        # singular: flat against flat (no curvature to fix the point in the tangent plane)
        scale = (abs(m[0, 0]) + abs(m[0, 1]) + abs(m[0, 2])) * (abs(m[1, 0]) + abs(m[1, 1]) + abs(m[1, 2])) * wn
        if not (abs(det) > 1e-12 * scale):
            break
        # adjugate columns 1 and 2 (column 0 is c00, c01, c02)
        c10 = m[0, 2] * m[2, 1] - m[0, 1] * m[2, 2]
        c11 = m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0]
        c12 = m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1]
        c20 = m[0, 1] * m[1, 2] - m[0, 2] * m[1, 1]
        c21 = m[0, 2] * m[1, 0] - m[0, 0] * m[1, 2]
        c22 = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
        dx0 = (b0 * c00 + b1 * c10 + b2 * c20) / det
        dx1 = (b0 * c01 + b1 * c11 + b2 * c21) / det
        dx2 = (b0 * c02 + b1 * c12 + b2 * c22) / det
        step = math.sqrt(dx0 * dx0 + dx1 * dx1 + dx2 * dx2)
        if not math.isfinite(step):
            break
        if step <= tol:
            # converged: the values at x are those of the solution to within the step
            if _fill_record(x, phiA, gA, HA, phiB, gB, HB, posA, posB, out):
                out[G_FLAG] = GEOM_NEWTON
                out[G_ITER] = it + 1
                return
            break
        if step > step_max:
            f = step_max / step
            dx0 *= f
            dx1 *= f
            dx2 *= f
        x[0] += dx0
        x[1] += dx1
        x[2] += dx2
    # fall back to the start point
    phiA, okA = body_eval(BODY_LEVELSET, cA, oA, hA, posA, rotA, 0.0, x0, gA, HA)
    phiB, okB = body_eval(kindB, cB, oB, hB, posB, rotB, radB, x0, gB, HB)
    if okA and okB and _fill_record(x0, phiA, gA, HA, phiB, gB, HB, posA, posB, out):
        out[G_FLAG] = GEOM_FALLBACK
        out[G_ITER] = max_iter
        return
    no_geometry(out)


@njit
def deepest_node(nodes, posO, rotO, kindP, cP, oP, hP, posP, rotP, radP, best, xbest, reach2=np.inf):
    """The surface node of body O (template nodes (n, 3), pose posO, rotO) deepest inside body P.

    Updates best (the smallest phi_P found so far, pass +inf to start) and its world point xbest (3,);
    returns the new best. Nodes where P's level set is not defined are skipped, and so are nodes
    farther than sqrt(reach2) from P's centre (P's bounding sphere: they cannot be inside P)."""
    for k in range(nodes.shape[0]):
        b0 = nodes[k, 0]
        b1 = nodes[k, 1]
        b2 = nodes[k, 2]
        x0 = posO[0] + rotO[0, 0] * b0 + rotO[0, 1] * b1 + rotO[0, 2] * b2
        x1 = posO[1] + rotO[1, 0] * b0 + rotO[1, 1] * b1 + rotO[1, 2] * b2
        x2 = posO[2] + rotO[2, 0] * b0 + rotO[2, 1] * b1 + rotO[2, 2] * b2
        if (x0 - posP[0]) ** 2 + (x1 - posP[1]) ** 2 + (x2 - posP[2]) ** 2 > reach2:
            continue
        v = body_value(kindP, cP, oP, hP, posP, rotP, radP, x0, x1, x2)
        if v < best:
            best = v
            xbest[0] = x0
            xbest[1] = x1
            xbest[2] = x2
    return best
