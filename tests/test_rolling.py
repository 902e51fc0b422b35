"""Rolling (Ai et al. 2011, type C) and twisting (Marshall 2009) resistance kernels against closed
forms: elastic range, limiting moment, energy stored and dissipated, objectivity."""

import math

import numpy as np

from graindem.contact import rolling as RL
from graindem.contact.frames import quat_from_normal, quat_rotate

K_R = 2.0      # N m/rad
M_LIM = 0.01   # N m: the rotation at the limit is 5 mrad
DT = 1e-4


def _row():
    return np.zeros((1, RL.N_ROLL_STATE))


def test_rolling_elastic_then_at_the_limit_in_any_steps():
    """1D monotonic rotation: M = -k theta up to theta_lim = M_m/k, then -M_m; stored k theta_lim^2/2,
    dissipated M_m (theta - theta_lim), for any split of the rotation into steps."""
    theta_lim = M_LIM / K_R
    for steps in (1, 3, 17, 400):
        rs = _row()
        theta = 0.0
        for k in range(steps):
            d = 0.02 / steps
            mx, my, lim = RL.rolling_step(rs, 0, K_R, M_LIM, 0.0, d, 0.0, DT)
            theta += d
            expect = -min(K_R * theta, M_LIM)
            assert abs(mx - expect) < 1e-15 and my == 0.0
        assert lim
        assert abs(RL.rolling_energy(rs, 0, K_R) - 0.5 * K_R * theta_lim ** 2) < 1e-16
        assert abs(rs[0, RL.R_DISS] - M_LIM * (0.02 - theta_lim)) < 1e-15


def test_rolling_unloading_is_elastic_and_the_limit_holds_in_2d():
    rs = _row()
    RL.rolling_step(rs, 0, K_R, M_LIM, 0.0, 0.02, 0.0, DT)
    # reverse by less than 2 theta_lim: elastic, no new dissipation
    d0 = rs[0, RL.R_DISS]
    mx, _, lim = RL.rolling_step(rs, 0, K_R, M_LIM, 0.0, -0.006, 0.0, DT)
    assert not lim and abs(mx - (-K_R * (0.005 - 0.006))) < 1e-15 and rs[0, RL.R_DISS] == d0
    rng = np.random.default_rng(3)
    for _ in range(2000):
        dx, dy = rng.normal(0.0, 0.004, 2)
        mx, my, lim = RL.rolling_step(rs, 0, K_R, M_LIM, 0.0, dx, dy, DT)
        assert math.hypot(mx, my) <= M_LIM * (1.0 + 1e-14)
        # the moment always opposes the stored rotation
        assert abs(mx + K_R * rs[0, RL.R_THX]) < 1e-15 and abs(my + K_R * rs[0, RL.R_THY]) < 1e-15


def test_rolling_energy_balance_with_dashpot():
    """Work done = stored + dissipated. The work of the moment along each straight step is
    computed independently by fine quadrature of the elastic-plastic spring (1D) plus C w^2 dt."""
    C = 0.5
    rs = _row()
    rng = np.random.default_rng(7)
    work = 0.0
    theta = 0.0
    for _ in range(100):
        d = rng.normal(0.0, 0.003)
        RL.rolling_step(rs, 0, K_R, M_LIM, C, d, 0.0, DT)
        # exact 1D elastic-plastic spring along the step, sub-stepped finely
        sub = range(50)
        th = theta
        for _s in sub:
            th_new = np.clip(th + d / 50, -M_LIM / K_R, M_LIM / K_R)
            work += K_R * 0.5 * (th + th_new) * (th_new - th) + M_LIM * abs(th + d / 50 - th_new)
            th = th_new
        if abs(K_R * (theta + d)) <= M_LIM:  # Ai's dashpot: only while the spring holds
            work += C * (d / DT) ** 2 * DT
        theta = rs[0, RL.R_THX]
        assert abs(th - theta) < 1e-12
    total = RL.rolling_energy(rs, 0, K_R) + rs[0, RL.R_DISS]
    assert abs(total - work) < 1e-9 * work


def test_twisting_limit_energy_and_marshall_constants():
    k_t, a, mu, N = 3e6, 1e-4, 0.5, 20.0
    k_tw = RL.marshall_twisting_stiffness(k_t, a)
    m_lim = RL.marshall_twisting_limit(mu, a, N)
    assert abs(k_tw - 0.5 * k_t * a * a) < 1e-18 and abs(m_lim - 2.0 / 3.0 * mu * a * N) < 1e-18
    # Marshall's 2/3 mu a N is the sliding moment of a uniform pressure: the integral of r mu p dA
    r = np.linspace(0.0, a, 200001)
    uniform = np.trapezoid(r * mu * N / (math.pi * a * a) * 2.0 * math.pi * r, r)
    assert abs(uniform / m_lim - 1.0) < 1e-9
    rs = _row()
    t_lim = m_lim / k_tw
    m, lim = RL.twisting_step(rs, 0, k_tw, m_lim, 0.0, 3.0 * t_lim, DT)
    assert lim and abs(m + m_lim) < 1e-18
    assert abs(rs[0, RL.R_DISS] - 2.0 * t_lim * m_lim) < 1e-18
    assert abs(RL.twisting_energy(rs, 0, k_tw) - 0.5 * m_lim * t_lim) < 1e-18
    m, lim = RL.twisting_step(rs, 0, k_tw, m_lim, 0.0, -0.5 * t_lim, DT)
    assert not lim and abs(m + 0.5 * m_lim) < 1e-15 * m_lim


def test_objectivity_under_a_rigid_rotation_of_the_pair():
    """The same contact seen after a rigid rotation Q of the pair: the frame is Q q, the spins Q w.
    The local increments, the stored springs and the local moments are the same; the global moments
    are Q times the originals. A common spin of both particles loads nothing."""
    rng = np.random.default_rng(11)
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    cq = np.zeros((2, 4))
    cq[0] = quat_from_normal(*n)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    ang = 1.1
    Q = np.array([math.cos(ang / 2), *(math.sin(ang / 2) * axis)])
    w, x, y, z = Q
    a = cq[0]
    cq[1] = [w * a[0] - x * a[1] - y * a[2] - z * a[3], w * a[1] + x * a[0] + y * a[3] - z * a[2],
             w * a[2] - x * a[3] + y * a[0] + z * a[1], w * a[3] + x * a[2] - y * a[1] + z * a[0]]
    rot = lambda v: np.array(quat_rotate(*Q, *v))
    rs = np.zeros((2, RL.N_ROLL_STATE))
    for _ in range(50):
        wi, wj = rng.normal(0.0, 30.0, (2, 3))
        d0 = RL.relative_rotation_increment(cq, 0, wi, wj, DT)
        d1 = RL.relative_rotation_increment(cq, 1, rot(wi), rot(wj), DT)
        assert np.allclose(d0, d1, rtol=0, atol=1e-16)
        m0 = RL.rolling_step(rs, 0, K_R, M_LIM, 0.1, d0[0], d0[1], DT)
        m1 = RL.rolling_step(rs, 1, K_R, M_LIM, 0.1, d1[0], d1[1], DT)
        t0 = RL.twisting_step(rs, 0, K_R, M_LIM, 0.1, d0[2], DT)
        t1 = RL.twisting_step(rs, 1, K_R, M_LIM, 0.1, d1[2], DT)
        g0 = np.array(quat_rotate(*cq[0], m0[0], m0[1], t0[0]))
        g1 = np.array(quat_rotate(*cq[1], m1[0], m1[1], t1[0]))
        assert np.allclose(rot(g0), g1, rtol=0, atol=1e-14)
    assert np.allclose(rs[0], rs[1], rtol=0, atol=1e-14)
    common = rng.normal(0.0, 30.0, 3)
    assert np.allclose(RL.relative_rotation_increment(cq, 0, common, common, DT), 0.0, atol=0.0)


def test_ai_rolling_stiffness():
    assert abs(RL.ai_rolling_stiffness(1e6, 0.1, 2e-3) - 2.25 * 1e6 * 0.01 * 4e-6) < 1e-12


def _spin_down(step, inertia, omega0, k, m_lim, dt):
    """A body on a fixed support (particle i at rest), spinning at omega0 about one local axis, braked
    by one resistance spring; symplectic Euler. Returns (time at which omega first reaches 0,
    dissipated energy then, stored energy then)."""
    rs = np.zeros((1, RL.N_ROLL_STATE))
    omega, t, m = omega0, 0.0, 0.0
    while True:
        omega += m / inertia * dt
        if omega <= 0.0:
            return t, rs[0, RL.R_DISS], 0.5 * k * (rs[0, RL.R_THX] ** 2 + rs[0, RL.R_THZ] ** 2)
        m = step(rs, omega * dt)
        t += dt


def test_spinning_and_rolling_spheres_stop_as_the_closed_form_says():
    """Elastic phase I theta'' = -k theta until |k theta| = M_m (theta = (w0/W) sin W t, W^2 = k/I),
    then a constant braking moment M_m: the spin stops at t1 + I w1/M_m with w1 = w0 cos W t1; the
    energy 1/2 I w0^2 is then stored (M_m^2/(2k)) or dissipated. Twisting: a sphere spinning on a
    plane (I = 2/5 m R^2, Marshall's limit); rolling: a sphere rolling without slip (I + m R^2 about
    the contact point, Ai's limit mu_r R N)."""
    m, R, N = 2.6e-4, 2.5e-3, 2.6e-3
    a, k_t, mu, mu_r = 2e-5, 4e5, 0.3, 0.05
    cases = {
        "twisting": (0.4 * m * R * R, RL.marshall_twisting_stiffness(k_t, a), RL.marshall_twisting_limit(mu, a, N),
                     lambda rs, k, lim, d: RL.twisting_step(rs, 0, k, lim, 0.0, d, DT)[0]),
        "rolling": (1.4 * m * R * R, RL.ai_rolling_stiffness(2e5, mu_r, R), mu_r * R * N,
                    lambda rs, k, lim, d: RL.rolling_step(rs, 0, k, lim, 0.0, d, 0.0, DT)[0]),
    }
    for name, (inertia, k, lim, kernel) in cases.items():
        W = math.sqrt(k / inertia)
        w0 = lim / (math.sqrt(k * inertia) * 0.6)  # the spring reaches its limit at sin(W t1) = 0.6
        t1 = math.asin(W * lim / (k * w0)) / W
        w1 = w0 * math.cos(W * t1)
        t_stop = t1 + inertia * w1 / lim
        dt = t_stop / 20000
        t, diss, stored = _spin_down(lambda rs, d: kernel(rs, k, lim, d), inertia, w0, k, lim, dt)
        assert abs(t / t_stop - 1.0) < 1e-3, name
        assert abs(stored - lim * lim / (2.0 * k)) < 1e-3 * stored, name
        assert abs((diss + stored) / (0.5 * inertia * w0 * w0) - 1.0) < 1e-3, name
