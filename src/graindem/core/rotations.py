"""Rotations: unit quaternions q = (w, x, y, z) and the rotation matrices they stand for.

One module for every body kind and for the contact frames, so that a quaternion means the same
everywhere: q carries body (or frame-local) axes onto world axes, R(q) v = q v q*. The per-step
kernels take and return scalars (no arrays), so that numba keeps them in registers; array forms
are given for the loops over bodies.

Two integrators live here because two kinds of body need them:
- `turn_by_spin`: q <- exp(omega dt / 2) q for a body whose inertia is isotropic (a sphere): its
  angular velocity is constant in free flight, so the exponential map of the step's spin is exact.
- `free_rotor`: the symmetric splitting of the free rigid-body rotation about the body's principal
  axes (x: dt/2, y: dt/2, z: dt, y: dt/2, x: dt/2; Dullweber, Leimkuhler & McLachlan 1997) for any
  inertia: each sub-step is an exact rotation about one body axis, so |L| is conserved exactly in
  free flight and the energy error stays bounded (symplectic, time-reversible).
"""

import math

import numpy as np

from .._jit import njit


@njit
def quat_mul(aw, ax, ay, az, bw, bx, by, bz):
    """Hamilton product a * b (apply b first, then a)."""
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


@njit
def quat_rotate(w, x, y, z, vx, vy, vz):
    """R(q) v for a unit quaternion q (local -> global)."""
    # v' = v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z): no trigonometry, 15 multiplies
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return (vx + w * tx + (y * tz - z * ty),
            vy + w * ty + (z * tx - x * tz),
            vz + w * tz + (x * ty - y * tx))


@njit
def quat_rotate_inv(w, x, y, z, vx, vy, vz):
    """R(q)^T v (global -> local)."""
    return quat_rotate(w, -x, -y, -z, vx, vy, vz)


@njit
def quat_from_normal(nx, ny, nz):
    """The minimal rotation carrying e_z onto the unit vector n (a fresh contact's frame)."""
    if nz >= 0.0:
        w = 1.0 + nz
        x = -ny
        y = nx
        inv = 1.0 / math.sqrt(w * w + x * x + y * y)
        return (w * inv, x * inv, y * inv, 0.0)
    # southern hemisphere: half turn about x (e_z -> -e_z), then the short way from -e_z to n,
    # which stays well conditioned where 1 + nz vanishes
    w = 1.0 - nz
    x = ny
    y = -nx
    inv = 1.0 / math.sqrt(w * w + x * x + y * y)
    return quat_mul(w * inv, x * inv, y * inv, 0.0, 0.0, 1.0, 0.0, 0.0)


@njit
def quat_normal(w, x, y, z):
    """The local z axis of the frame q in global coordinates (the contact normal it holds)."""
    return (2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y))


@njit
def quat_to_matrix(q, R):
    """Rotation matrix (body -> world) of the unit quaternion q = (w, x, y, z), written into R."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - w * z)
    R[0, 2] = 2.0 * (x * z + w * y)
    R[1, 0] = 2.0 * (x * y + w * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - w * x)
    R[2, 0] = 2.0 * (x * z - w * y)
    R[2, 1] = 2.0 * (y * z + w * x)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


def quat_matrix(q):
    """R(q) as a new (3, 3) array (Python side)."""
    R = np.empty((3, 3))
    quat_to_matrix(np.asarray(q, dtype=np.float64), R)
    return R


def rotate_rows(q, v):
    """Rotate the rows of v (m, 3) by the unit quaternions q (m, 4) (Python side)."""
    w = q[:, :1]
    u = q[:, 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


@njit(_nrt=False, inline="always")
def turn_by_spin(omega, quat, n, dt):
    """q <- exp(omega dt / 2) q for rows 0..n-1, with the world angular velocities of the step.

    A loop of its own rather than a part of the particle pass: its chain (Taylor terms, product,
    renormalisation) would hold up the kick and drift of the next particles; alone it overlaps
    across particles. The half-angle squared comes from |omega|^2 directly, so the square root is
    taken only for the (rare) large turns."""
    qdt2 = 0.25 * dt * dt
    for i in range(n):
        wx = omega[i, 0]
        wy = omega[i, 1]
        wz = omega[i, 2]
        w2 = wx * wx + wy * wy + wz * wz
        if w2 > 0.0:
            h2 = qdt2 * w2
            if h2 < 1e-6:
                # a step turns a grain by far less than a milliradian: Taylor terms to round-off
                cw = 1.0 - 0.5 * h2 * (1.0 - h2 / 12.0)
                sc = 0.5 * dt * (1.0 - h2 / 6.0 * (1.0 - h2 / 20.0))
            else:
                wn = math.sqrt(w2)
                h = 0.5 * wn * dt
                sc = math.sin(h) / wn
                cw = math.cos(h)
            qw = quat[i, 0]
            qx = quat[i, 1]
            qy = quat[i, 2]
            qz = quat[i, 3]
            aw = cw * qw - sc * (wx * qx + wy * qy + wz * qz)
            ax = cw * qx + sc * (wx * qw + wy * qz - wz * qy)
            ay = cw * qy + sc * (wy * qw + wz * qx - wx * qz)
            az = cw * qz + sc * (wz * qw + wx * qy - wy * qx)
            # unit up to rounding (cos^2 + sin^2 = 1; the Taylor pair to 1e-18): one Newton step
            # 1/|q| ~ (3 - |q|^2)/2, exact to O(eps^2), instead of a square root and a division
            g = 1.5 - 0.5 * (aw * aw + ax * ax + ay * ay + az * az)
            quat[i, 0] = aw * g
            quat[i, 1] = ax * g
            quat[i, 2] = ay * g
            quat[i, 3] = az * g


@njit
def turn_about_body_axis(q, axis, angle):
    """q <- q (x) (cos(angle/2), sin(angle/2) e_axis): rotate the body about its own axis."""
    c = math.cos(0.5 * angle)
    s = math.sin(0.5 * angle)
    w, x, y, z = q[0], q[1], q[2], q[3]
    if axis == 0:
        q[0] = w * c - x * s
        q[1] = x * c + w * s
        q[2] = y * c + z * s
        q[3] = z * c - y * s
    elif axis == 1:
        q[0] = w * c - y * s
        q[1] = x * c - z * s
        q[2] = y * c + w * s
        q[3] = z * c + x * s
    else:
        q[0] = w * c - z * s
        q[1] = x * c + y * s
        q[2] = y * c - x * s
        q[3] = z * c + w * s


@njit
def turn_by_world_spin(q, wx, wy, wz, dt):
    """q <- exp(omega dt) (x) q for a world angular velocity omega held over the step."""
    om = math.sqrt(wx * wx + wy * wy + wz * wz)
    if om == 0.0:
        return
    ang = om * dt
    s = math.sin(0.5 * ang) / om
    a0, a1, a2, a3 = math.cos(0.5 * ang), wx * s, wy * s, wz * s
    w, x, y, z = q[0], q[1], q[2], q[3]
    q[0] = a0 * w - a1 * x - a2 * y - a3 * z
    q[1] = a0 * x + a1 * w + a2 * z - a3 * y
    q[2] = a0 * y - a1 * z + a2 * w + a3 * x
    q[3] = a0 * z + a1 * y - a2 * x + a3 * w


@njit
def free_rotor(q, Lb, inertia, dt):
    """One step of the free rotation of a body with principal moments `inertia` (module docstring).

    q is the orientation, Lb the angular momentum in body axes; both are updated in place."""
    for sub in range(5):
        ax = (0, 1, 2, 1, 0)[sub]
        tau = dt if sub == 2 else 0.5 * dt
        ang = Lb[ax] / inertia[ax] * tau
        turn_about_body_axis(q, ax, ang)
        # the body turned by +ang about ax, so L's body components turn by -ang
        c = math.cos(ang)
        s = math.sin(ang)
        i1 = (ax + 1) % 3
        i2 = (ax + 2) % 3
        a = Lb[i1]
        b = Lb[i2]
        Lb[i1] = c * a + s * b
        Lb[i2] = -s * a + c * b


@njit
def matrix_turned_by_world_spin(rot, wx, wy, wz, dt):
    """exp([omega]x dt) R (Rodrigues) as a new matrix: the rotation-matrix form of turn_by_world_spin."""
    ang = np.sqrt(wx * wx + wy * wy + wz * wz) * dt
    if ang < 1e-300:
        return rot
    kx = wx * dt / ang
    ky = wy * dt / ang
    kz = wz * dt / ang
    s = np.sin(ang)
    c1 = 1.0 - np.cos(ang)
    q = np.empty((3, 3))
    q[0, 0] = 1.0 - c1 * (ky * ky + kz * kz)
    q[0, 1] = -s * kz + c1 * kx * ky
    q[0, 2] = s * ky + c1 * kx * kz
    q[1, 0] = s * kz + c1 * kx * ky
    q[1, 1] = 1.0 - c1 * (kx * kx + kz * kz)
    q[1, 2] = -s * kx + c1 * ky * kz
    q[2, 0] = -s * ky + c1 * kx * kz
    q[2, 1] = s * kx + c1 * ky * kz
    q[2, 2] = 1.0 - c1 * (kx * kx + ky * ky)
    out = np.zeros((3, 3))
    for a in range(3):
        for b in range(3):
            for c in range(3):
                out[a, b] += q[a, c] * rot[c, b]
    return out


def random_quaternions(rng, n):
    """n orientations uniform over SO(3) (normalised 4-D Gaussians)."""
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1)[:, None]
