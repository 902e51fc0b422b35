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

Per-contact state: a float64 row of N_ROLL_STATE slots per contact (the engine's `prs` for pair
rows, `wrs` for wall rows), next to the tangential law's row and with the same life cycle (carried
over at neighbour rebuilds with the pair row, written to checkpoints with it):
    R_THX, R_THY  elastic relative rolling rotation (rad), contact frame
    R_THZ         elastic relative twisting rotation (rad)
    R_DISS        cumulative energy dissipated by the two yielding springs and their dashpots (J)
    R_KR, R_KT    the rolling and twisting stiffness of the last step (N m/rad)
    R_STEP        the engine step at which the contact last touched
The stored elastic energy is `rolling_energy` + `twisting_energy` of the row; the kernels add
to R_DISS, so that work done on the contact = change of stored energy + change of R_DISS
holds step by step (exactly for one-dimensional paths), which is what an energy balance needs.

Engine sub-model (`contact_moment`): the parameters of a material pair are a row of the rolling
table (RP_*): mu_r, the rolling dashpot's damping ratio, a constant rolling stiffness (0: Ai's
k_r from the current normal stiffness), twisting on or off, the twisting dashpot's damping ratio.
Hertz stiffnesses change with the overlap; a changed stiffness rescales the stored rotation by
sqrt(k_old/k_new), which keeps the stored energy (no energy is made or lost by the stiffening
itself), and a spring the new limit no longer holds is returned onto it first, the released
energy counted as dissipated. A contact that did not touch at the previous step starts with
unloaded springs; what they still held counts as dissipated.
"""

import math

import numpy as np

from .._jit import njit
from .frames import quat_rotate, quat_rotate_inv

R_THX = 0
R_THY = 1
R_THZ = 2
R_DISS = 3
R_KR = 4
R_KT = 5
R_STEP = 6
N_ROLL_STATE = 7

# rolling table: one row per material pair (row m1 * n_materials + m2, as the material-pair table)
RP_MU_R = 0      # rolling friction coefficient mu_r (0: no rolling resistance)
RP_ETA_R = 1     # rolling dashpot: damping ratio eta_r, C_r = 2 eta_r sqrt(I_r k_r)
RP_KR = 2        # constant rolling stiffness (N m/rad); 0: Ai et al.'s 2.25 k_n mu_r^2 R_r^2
RP_TWIST = 3     # 1: Marshall's twisting spring on
RP_ETA_T = 4     # twisting dashpot: damping ratio eta_t, C_t = 2 eta_t sqrt(I_t k_tw)
N_ROLL_PARAM = 5

# the engine's arrays of this sub-model (Simulation.state_dict holds them in runs that use it): the
# material pairs' rolling table (n_mat, n_mat, N_ROLL_PARAM), the pair and wall rows' state, and
# the dissipation of rows that left the neighbour list (1,)
ENGINE_ARRAYS = ("rolling_pairs", "prs", "wrs", "rrel")


@njit(_nrt=False)
def ai_rolling_stiffness(k_n, mu_r, r_roll):
    """Ai et al. (2011), eq. 21: k_r = 2.25 k_n mu_r^2 R_r^2 (N m/rad)."""
    return 2.25 * k_n * mu_r * mu_r * r_roll * r_roll


@njit(_nrt=False)
def marshall_twisting_stiffness(k_t, a):
    """Marshall (2009): k_tw = k_t a^2 / 2 (N m/rad), a the contact radius."""
    return 0.5 * k_t * a * a


@njit(_nrt=False)
def marshall_twisting_limit(mu, a, N):
    """Marshall (2009): |M_t| <= 2/3 mu a N (sliding moment of a uniform pressure over the contact)."""
    return 2.0 / 3.0 * mu * a * N


@njit(_nrt=False)
def relative_rotation_increment(cq, c, omega_i, omega_j, dt):
    """(omega_j - omega_i) dt in the frame of contact c (cq: unit quaternions w, x, y, z): the
    rolling increment (x, y) and the twisting increment (z)."""
    return quat_rotate_inv(cq[c, 0], cq[c, 1], cq[c, 2], cq[c, 3], (omega_j[0] - omega_i[0]) * dt,
                           (omega_j[1] - omega_i[1]) * dt, (omega_j[2] - omega_i[2]) * dt)


@njit(_nrt=False)
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


@njit(_nrt=False)
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


@njit(_nrt=False)
def rolling_energy(rs, c, k_r):
    """Elastic energy stored in the rolling spring of contact c: k_r |theta_r|^2 / 2."""
    return 0.5 * k_r * (rs[c, R_THX] ** 2 + rs[c, R_THY] ** 2)


@njit(_nrt=False)
def twisting_energy(rs, c, k_tw):
    """Elastic energy stored in the twisting spring of contact c: k_tw theta_t^2 / 2."""
    return 0.5 * k_tw * rs[c, R_THZ] ** 2


@njit(_nrt=False)
def reset(rs, c):
    """A fresh or separated contact: no stored rotation (the dissipation counter is kept)."""
    rs[c, R_THX] = 0.0
    rs[c, R_THY] = 0.0
    rs[c, R_THZ] = 0.0


@njit(_nrt=False, inline="always")
def _restiffen(rs, c, slot, first, last, k, m_lim):
    """The springs rs[c, first:last + 1] at the new stiffness k: rescaled by sqrt(k_old/k) (same
    stored energy), then returned onto the limit m_lim if beyond it (the released energy dissipated)."""
    k_old = rs[c, slot]
    if k_old > 0.0 and k_old != k:
        s = math.sqrt(k_old / k)
        for f in range(first, last + 1):
            rs[c, f] *= s
    rs[c, slot] = k
    t2 = 0.0
    for f in range(first, last + 1):
        t2 += rs[c, f] * rs[c, f]
    if k * k * t2 > m_lim * m_lim:
        scale = m_lim / (k * math.sqrt(t2))
        for f in range(first, last + 1):
            rs[c, f] *= scale
        rs[c, R_DISS] += 0.5 * k * t2 * (1.0 - scale * scale)


@njit(_nrt=False, inline="always")
def contact_moment(rs, c, rp, step, dt, qw, qx, qy, qz, wx, wy, wz, N, a, k_n, k_t, mu, r_roll, i_roll, i_twist):
    """Rolling and twisting moment of one touching contact row over a step, in world axes, on
    particle j (on i: the opposite). rp: the pair's rolling table row; (qw..qz) the contact frame;
    (wx, wy, wz) = omega_j - omega_i; N the normal force, a the contact radius, k_n and k_t the
    normal and tangential stiffness, mu the friction coefficient, r_roll the rolling radius,
    i_roll and i_twist the pair's reduced moments of inertia for rolling (about the contact point)
    and twisting (the dashpots' critical damping)."""
    if rs[c, R_STEP] != step - 1.0:
        # touching afresh: unloaded springs, what they held is dissipated
        rs[c, R_DISS] = released_energy(rs, c)
        reset(rs, c)
    rs[c, R_STEP] = step
    dthx, dthy, dthz = quat_rotate_inv(qw, qx, qy, qz, wx * dt, wy * dt, wz * dt)
    mx = 0.0
    my = 0.0
    mz = 0.0
    mu_r = rp[RP_MU_R]
    if mu_r > 0.0:
        k_r = rp[RP_KR] if rp[RP_KR] > 0.0 else ai_rolling_stiffness(k_n, mu_r, r_roll)
        m_lim = mu_r * r_roll * N
        _restiffen(rs, c, R_KR, R_THX, R_THY, k_r, m_lim)
        mx, my, _ = rolling_step(rs, c, k_r, m_lim, 2.0 * rp[RP_ETA_R] * math.sqrt(i_roll * k_r), dthx, dthy, dt)
    if rp[RP_TWIST] != 0.0:
        k_tw = marshall_twisting_stiffness(k_t, a)
        m_lim = marshall_twisting_limit(mu, a, N)
        _restiffen(rs, c, R_KT, R_THZ, R_THZ, k_tw, m_lim)
        mz, _ = twisting_step(rs, c, k_tw, m_lim, 2.0 * rp[RP_ETA_T] * math.sqrt(i_twist * k_tw), dthz, dt)
    return quat_rotate(qw, qx, qy, qz, mx, my, mz)


@njit(_nrt=False)
def held_energy(rs, c):
    """Elastic energy held by the rolling and twisting springs of row c, at their last stiffness."""
    return 0.5 * rs[c, R_KR] * (rs[c, R_THX] ** 2 + rs[c, R_THY] ** 2) + 0.5 * rs[c, R_KT] * rs[c, R_THZ] ** 2


@njit(_nrt=False)
def released_energy(rs, c):
    """What row c has dissipated, plus what its springs hold: all of it is lost once it stops touching."""
    return rs[c, R_DISS] + held_energy(rs, c)


@njit
def released_energies(rs):
    """released_energy of every row of rs (the rows an MPI rebuild drops: parallel.subdomain)."""
    out = np.empty(rs.shape[0])
    for c in range(rs.shape[0]):
        out[c] = released_energy(rs, c)
    return out


@njit
def energy_sums(rs, touching):
    """(stored, dissipated) over rows rs[:len(touching)]: the elastic energy held by the springs
    of the rows that touch, and what all rows have dissipated, counting as dissipated what the
    springs of rows no longer touching still hold (they release it when they touch again)."""
    stored = 0.0
    diss = 0.0
    for c in range(touching.shape[0]):
        if touching[c]:
            stored += held_energy(rs, c)
            diss += rs[c, R_DISS]
        else:
            diss += released_energy(rs, c)
    return stored, diss
