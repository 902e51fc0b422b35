"""Rolling and twisting resistance of sphere contacts: stateless sub-model kernels.

Rolling: the elastic-plastic spring-dashpot of Ai, Chen, Rotter & Ooi (2011, Powder Technology
206: 269-282), their "type C" model (LAMMPS `granular` `rolling sds` is the same spring written
with a rolling displacement R* theta). The relative rolling rotation theta_r of the pair, in the
contact plane, loads a spring M_r = -k_r theta_r up to the limiting moment M_m = mu_r R_r N (R_r
the rolling radius, R* by default); past it the spring yields at |M_r| = M_m (the elastic part is
returned onto the limit circle, the rest is dissipated, M_m times the plastic rotation). A dashpot
-C_r omega_r acts while the spring is below its limit (Ai et al. switch it off at full
mobilisation). Ai et al.'s stiffness: k_r = 2.25 k_n mu_r^2 R_r^2 (`ai_rolling_stiffness`); their
damping C_r = eta_r 2 sqrt(I_r k_r).

Twisting: the spring-dashpot of Marshall (2009, J. Comput. Phys. 228: 1541-1561; LAMMPS
`twisting marshall`): the relative rotation about the normal theta_t loads M_t = -k_t,w theta_t
with k_t,w = k_t a^2/2 (k_t Mindlin's tangential stiffness, a the contact radius), limited to
|M_t| <= 2/3 mu a N (Marshall's choice: the sliding moment under a uniform pressure; under Hertz's
pressure it would be 3 pi/16 mu a N); damping gamma_t,w = eta_t a^2/2 below the limit.

Kinematics: theta is the relative rotation of particle j with respect to particle i, (omega_j -
omega_i) dt per step, taken into the contact frame (frames.py: local z = normal n from i to j,
local x, y = contact plane) by `relative_rotation_increment`. Its x, y components are rolling, its
z component twisting. The moments returned act on j; i receives the opposite. A rigid rotation
of the pair has omega_i = omega_j, so it loads nothing, and it turns the contact frame, so the
stored springs turn with the pair: both models are objective.

Intended per-contact state (the engine wiring is separate from these kernels): a float64 row of
N_ROLL_STATE slots per contact, next to the tangential law's row and with the same life cycle
(zeroed at first touch and at separation, carried over at neighbour rebuilds with the pair row,
written to checkpoints with it):
    R_THX, R_THY  elastic relative rolling rotation (rad), contact frame
    R_THZ         elastic relative twisting rotation (rad)
    R_DISS        cumulative energy dissipated by the two yielding springs and their dashpots (J)
The stored elastic energy is `rolling_energy` + `twisting_energy` of the row; the kernels add
to R_DISS, so that work done on the contact = change of stored energy + change of R_DISS
holds step by step (exactly for one-dimensional paths), which is what an energy balance needs.
"""

import math

from .._jit import njit
from .frames import quat_rotate_inv

R_THX = 0
R_THY = 1
R_THZ = 2
R_DISS = 3
N_ROLL_STATE = 4


def ai_rolling_stiffness(k_n, mu_r, r_roll):
    """Ai et al. (2011), eq. 21: k_r = 2.25 k_n mu_r^2 R_r^2 (N m/rad)."""
    return 2.25 * k_n * mu_r * mu_r * r_roll * r_roll


def marshall_twisting_stiffness(k_t, a):
    """Marshall (2009): k_tw = k_t a^2 / 2 (N m/rad), a the contact radius."""
    return 0.5 * k_t * a * a


def marshall_twisting_limit(mu, a, N):
    """Marshall (2009): |M_t| <= 2/3 mu a N (sliding moment of a uniform pressure over the contact)."""
    return 2.0 / 3.0 * mu * a * N


@njit
def relative_rotation_increment(cq, c, omega_i, omega_j, dt):
    """(omega_j - omega_i) dt in the frame of contact c (cq: unit quaternions w, x, y, z): the
    rolling increment (x, y) and the twisting increment (z)."""
    return quat_rotate_inv(cq[c, 0], cq[c, 1], cq[c, 2], cq[c, 3], (omega_j[0] - omega_i[0]) * dt,
                           (omega_j[1] - omega_i[1]) * dt, (omega_j[2] - omega_i[2]) * dt)


@njit
def rolling_step(rs, c, k_r, m_lim, damping, dthx, dthy, dt):
    """Advance the rolling spring of contact c by the relative rolling rotation (dthx, dthy) made
    in time dt (> 0); returns the moment (mx, my) on particle j in the contact frame and whether
    the spring is at its limit. k_r > 0 (N m/rad), m_lim = mu_r R_r N >= 0, damping C_r >= 0."""
    tx = rs[c, R_THX] + dthx
    ty = rs[c, R_THY] + dthy
    mx = -k_r * tx
    my = -k_r * ty
    mag = math.sqrt(mx * mx + my * my)
    diss = 0.0
    at_limit = mag > m_lim
    if at_limit:
        # return the trial moment onto the limit circle; the rest of the rotation is plastic
        scale = m_lim / mag
        nx = tx * scale
        ny = ty * scale
        diss = m_lim * math.sqrt((tx - nx) ** 2 + (ty - ny) ** 2)
        tx = nx
        ty = ny
        mx *= scale
        my *= scale
    elif damping > 0.0:
        wx = dthx / dt
        wy = dthy / dt
        mx -= damping * wx
        my -= damping * wy
        diss = damping * (wx * wx + wy * wy) * dt
    rs[c, R_THX] = tx
    rs[c, R_THY] = ty
    rs[c, R_DISS] += diss
    return mx, my, at_limit


@njit
def twisting_step(rs, c, k_tw, m_lim, damping, dthz, dt):
    """Advance the twisting spring of contact c by the relative twist dthz made in time dt (> 0);
    returns the moment on particle j about the normal and whether the spring is at its limit."""
    t = rs[c, R_THZ] + dthz
    m = -k_tw * t
    diss = 0.0
    at_limit = abs(m) > m_lim
    if at_limit:
        t_lim = math.copysign(m_lim / k_tw, t)
        diss = m_lim * abs(t - t_lim)
        t = t_lim
        m = -math.copysign(m_lim, t)
    elif damping > 0.0:
        w = dthz / dt
        m -= damping * w
        diss = damping * w * w * dt
    rs[c, R_THZ] = t
    rs[c, R_DISS] += diss
    return m, at_limit


@njit
def rolling_energy(rs, c, k_r):
    """Elastic energy stored in the rolling spring of contact c: k_r |theta_r|^2 / 2."""
    return 0.5 * k_r * (rs[c, R_THX] ** 2 + rs[c, R_THY] ** 2)


@njit
def twisting_energy(rs, c, k_tw):
    """Elastic energy stored in the twisting spring of contact c: k_tw theta_t^2 / 2."""
    return 0.5 * k_tw * rs[c, R_THZ] ** 2


@njit
def reset(rs, c):
    """A fresh or separated contact: no stored rotation (the dissipation counter is kept)."""
    rs[c, R_THX] = 0.0
    rs[c, R_THY] = 0.0
    rs[c, R_THZ] = 0.0
