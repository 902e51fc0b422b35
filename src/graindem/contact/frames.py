"""Contact frames as unit quaternions (Kuhn 2011, section 3.2) and the kinematics of a contact.

A contact's frame is the rotation that carries the global axes onto the contact's axes, stored as
a unit quaternion q = (w, x, y, z) in a row of a float64 array `cq` (width 4). Its local z axis is
the contact normal n (from particle i towards particle j); its local x, y axes span the contact
plane, in which every law keeps its tangential state. The frame follows the rigid rotation of the
pair, so a tumbling or twirling pair turns the frame and never the stored state:

    q <- renormalise( twirl(n_new, theta) * tilt(n_old -> n_new) * q )

`tilt` is the minimal rotation carrying the old normal onto the new one and `twirl` the rotation
about the new normal by theta = 1/2 (omega_i + omega_j) . n dt, the mean spin of the pair about
the normal (taken at the mid normal, which makes the update second-order accurate).

Kernels that take arrays are compiled with `_nrt=False` (they allocate nothing), which spares the
engine's force loop numba's reference counting around every call.

Contact kinematics: the contact points are at levers (r_i - delta/2) n from centre i and
-(r_j - delta/2) n from centre j, so that the relative velocity of the two contact points of a
pair moving as one rigid body is exactly zero (the centres are r_i + r_j - delta apart).
"""

import math

from .._jit import njit
from ..core.rotations import quat_from_normal, quat_mul, quat_normal, quat_rotate, quat_rotate_inv


@njit(_nrt=False)
def frame_init(cq, c, nx, ny, nz):
    """Row c of `cq` becomes the frame of a contact that just touched along unit normal n."""
    w, x, y, z = quat_from_normal(nx, ny, nz)
    cq[c, 0] = w
    cq[c, 1] = x
    cq[c, 2] = y
    cq[c, 3] = z


@njit(_nrt=False)
def frame_update(cq, c, nx, ny, nz, spin_x, spin_y, spin_z, dt):
    """Turn frame c by the pair's rigid rotation over one step.

    n is the new unit normal, spin = 1/2 (omega_i + omega_j) the mean angular velocity of the
    pair over the step. The frame's old normal is read from the frame itself, so frame and normal
    cannot drift apart.
    """
    w = cq[c, 0]
    x = cq[c, 1]
    y = cq[c, 2]
    z = cq[c, 3]
    ox, oy, oz = quat_normal(w, x, y, z)
    # tilt, unnormalised: (1 + o.n, o x n) is twice cos(a/2) times the unit half-angle quaternion
    tw = 1.0 + ox * nx + oy * ny + oz * nz
    if tw < 1e-12:
        # the normal flipped within one step: no rigid motion does that, start a fresh frame
        frame_init(cq, c, nx, ny, nz)
        return
    tx = oy * nz - oz * ny
    ty = oz * nx - ox * nz
    tz = ox * ny - oy * nx
    # twirl about the new normal by the spin projected on the mid normal (|o + n| = sqrt(2 tw))
    h = 0.5 * (spin_x * (ox + nx) + spin_y * (oy + ny) + spin_z * (oz + nz)) * dt / math.sqrt(2.0 * tw)
    h2 = h * h
    if h2 < 1e-6:
        # a DEM step turns a contact by far less than a milliradian: Taylor terms to round-off
        cw = 1.0 - 0.5 * h2 * (1.0 - h2 / 12.0)
        sw = h * (1.0 - h2 / 6.0 * (1.0 - h2 / 20.0))
    else:
        cw = math.cos(h)
        sw = math.sin(h)
    aw, ax, ay, az = quat_mul(cw, sw * nx, sw * ny, sw * nz, tw, tx, ty, tz)
    w, x, y, z = quat_mul(aw, ax, ay, az, w, x, y, z)
    # one normalisation for both factors, which also removes the drift of q from unit length
    inv = 1.0 / math.sqrt(w * w + x * x + y * y + z * z)
    cq[c, 0] = w * inv
    cq[c, 1] = x * inv
    cq[c, 2] = y * inv
    cq[c, 3] = z * inv


@njit(_nrt=False)
def to_frame(cq, c, vx, vy, vz):
    """A global 3-vector in the axes of frame c: (local x, local y, local z = normal part)."""
    return quat_rotate_inv(cq[c, 0], cq[c, 1], cq[c, 2], cq[c, 3], vx, vy, vz)


@njit(_nrt=False)
def from_frame(cq, c, lx, ly, lz):
    """A vector given in the axes of frame c, in global coordinates."""
    return quat_rotate(cq[c, 0], cq[c, 1], cq[c, 2], cq[c, 3], lx, ly, lz)


@njit
def contact_point_velocity(vix, viy, viz, wix, wiy, wiz, vjx, vjy, vjz, wjx, wjy, wjz,
                           nx, ny, nz, ri, rj, delta):
    """Velocity of j's contact point relative to i's (levers r - delta/2 along -+n).

    Returns the full relative velocity (normal part included); the tangential shift increment is
    its projection on the contact plane times dt.
    """
    li = ri - 0.5 * delta
    lj = rj - 0.5 * delta
    # omega_i x (li n)
    aix = li * (wiy * nz - wiz * ny)
    aiy = li * (wiz * nx - wix * nz)
    aiz = li * (wix * ny - wiy * nx)
    # omega_j x (-lj n)
    ajx = -lj * (wjy * nz - wjz * ny)
    ajy = -lj * (wjz * nx - wjx * nz)
    ajz = -lj * (wjx * ny - wjy * nx)
    return (vjx + ajx - vix - aix, vjy + ajy - viy - aiy, vjz + ajz - viz - aiz)
