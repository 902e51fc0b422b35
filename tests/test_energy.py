"""Stored elastic energy, tangential work and frictional dissipation of contacts
(graindem.contact.energy) against independent references:

- the stored jaeger energy from the history path integral (the code) against Clapeyron's
  1/2 integral q . u dA written out with Johnson's displacement field (here);
- the Mindlin–Deresiewicz closed-form loop area (closed_forms.loop_dissipation);
- zero dissipation on elastic cycles;
- the energy balance E + D = W, where the kernel integrates W and D separately (D from the slip
  power of the annulus, not as W - E) and the test integrates W once more on its own, from the
  forces of the law stepped to intermediate points of every movement.
"""

import copy
import math

import numpy as np
import pytest

from graindem.contact import ContactBatch, SingleContact, closed_forms
from graindem.contact import state as S
from graindem.contact.energy import jaeger_probe

UNIT = dict(R1=2.0, R2=2.0, E=1.5, nu=0.0)
REAL = dict(R1=1e-3, R2=1e-3, E=70e9, nu=0.25)
MU = 0.4
NODES, WEIGHTS = np.polynomial.legendre.leggauss(4)


def clapeyron_energy(prm, hist):
    """E_t = 1/2 sum_ij integral q_i . u_j dA for q = sum_i c_i p_H(r; delta_i), c_i = p_i - p_{i+1}.
    Johnson (1985, section 7.2): a tangential traction c p0 sqrt(1 - r^2/a^2) displaces the points of
    its disc by kappa c delta_a - (c/a) p0-proportional quadratic terms; the quadratic part,
    integrated against p_H(r; delta_i) (integral of p_H x^2 dA = N a^2/5), removes delta_i/5:
    integral q_i . u_j dA = kappa (c_i . c_j) N_i (delta_j - delta_i/5) for delta_i <= delta_j,
    and reciprocity gives the other order."""
    d = hist["delta"]
    n = hist["N"]
    p = hist["p"]
    c = p - np.vstack([p[1:], np.zeros((1, 2))])
    kappa = prm[S.P_KAPPA]
    e = 0.0
    for i in range(d.size):
        for j in range(d.size):
            lo, hi = (i, j) if d[i] <= d[j] else (j, i)
            e += kappa * float(c[i] @ c[j]) * n[lo] * (d[hi] - d[lo] / 5.0)
    return 0.5 * e


def random_contact(seed, n_moves=40, two_d=True, scale_ds=0.1, scale_dd=0.1):
    rng = np.random.default_rng(seed)
    sc = SingleContact("jaeger", mu=MU, **REAL)
    rstar = sc.prm[S.P_RSTAR]
    delta = 1e-3 * rstar
    s = np.zeros(2)
    sc.step(delta, s)
    for _ in range(n_moves):
        delta = max(delta * math.exp(rng.normal(0.02, scale_dd)), 1e-5 * rstar)
        ds = rng.normal(0.0, scale_ds, 2) * MU * sc.prm[S.P_KAPPA] * delta
        if not two_d:
            ds[1] = 0.0
        s = s + ds
        sc.step(delta, s)
    return sc


def test_stored_energy_equals_clapeyron():
    sc = SingleContact("jaeger", mu=0.5, **UNIT)
    for d, s in [(1.0, 0.2), (2.0, 0.5), (3.0, 0.6), (3.5, 1.2), (4.0, 1.55), (5.0, 1.75), (6.0, 1.85),
                 (6.5, 2.3), (6.5, 1.9)]:
        sc.step(d, [s, 0.0])
        assert sc.tangential_energy() == pytest.approx(clapeyron_energy(sc.prm, sc.history_points()), rel=1e-12)
    for seed in range(1, 6):
        sc = random_contact(seed)
        assert sc.history_points()["delta"].size >= 1
        assert sc.tangential_energy() == pytest.approx(clapeyron_energy(sc.prm, sc.history_points()), rel=1e-12)
    # one elastic segment from the origin: 2/5 kappa |p|^2 N delta (1/2 with a uniform displacement)
    sc = SingleContact("jaeger", mu=0.5, **REAL)
    delta = 1e-3 * sc.prm[S.P_RSTAR]
    kappa = sc.prm[S.P_KAPPA]
    sc.step(delta, [0.3 * kappa * delta, 0.1 * kappa * delta])
    assert sc.tangential_energy() == pytest.approx(0.4 * kappa * 0.1 * sc.N * delta, rel=1e-13)


def test_elastic_cycles_dissipate_nothing():
    rng = np.random.default_rng(3)
    sc = SingleContact("jaeger", mu=MU, **REAL)
    kappa = sc.prm[S.P_KAPPA]
    d0 = 1e-3 * sc.prm[S.P_RSTAR]
    points = [(d0, np.zeros(2))]
    for _ in range(6):
        d, s = points[-1]
        dd = rng.uniform(0.05, 0.5) * d
        direction = rng.normal(size=2)
        direction /= np.linalg.norm(direction)
        points.append((d + dd, s + rng.uniform(0.0, 0.95) * MU * kappa * dd * direction))
    for d, s in points + points[-2::-1]:        # out and back along the same straight lines
        sc.step(d, s)
        assert sc.kind == "elastic"
    scale = MU * sc.N * MU * kappa * d0
    assert abs(sc.dissipation) <= 1e-15 * scale
    # the work of the whole cycle is zero: elastic energy returns to its start value
    assert abs(sc.tangential_work - sc.tangential_energy()) <= 1e-10 * scale
    # linear law with a constant spring and the mindlin law at constant overlap, below the cap
    for law, kw, path in [
        ("linear", dict(kt_linear=1e5), [(d0, 0.0), (2 * d0, 1e-8), (1.5 * d0, -2e-8), (d0, 0.0)]),
        ("mindlin", {}, [(d0, 0.0), (d0, 1e-8), (d0, -2e-8), (d0, 0.0)]),
    ]:
        sc = SingleContact(law, mu=MU, **REAL, **kw)
        for d, s in path:
            sc.step(d, [s, 0.5 * s])
            assert sc.kind == "elastic"
        assert abs(sc.dissipation) <= 1e-12 * abs(sc.work)


def md_loop(law, n, T_frac=0.8):
    """Closed Mindlin–Deresiewicz loop at constant N: load to s_amp, then n movements per branch
    s_amp -> -s_amp -> s_amp. Returns (loop dissipation, loop work, closed-form area)."""
    sc = SingleContact(law, mu=MU, **REAL)
    prm = sc.prm
    kappa = prm[S.P_KAPPA]
    delta = 2e-3 * prm[S.P_RSTAR]
    N = prm[S.P_CN] * delta ** 1.5
    sc.step(delta, [0.0, 0.0])
    T_amp = T_frac * MU * N
    s_amp = float(closed_forms.monotonic_shift(T_amp, N, delta, MU, kappa))
    sc.step(delta, [s_amp, 0.0])
    D0, W0 = sc.dissipation, sc.work
    for s in np.concatenate([np.linspace(s_amp, -s_amp, n + 1)[1:], np.linspace(-s_amp, s_amp, n + 1)[1:]]):
        sc.step(delta, [s, 0.0])
    return sc.dissipation - D0, sc.work - W0, closed_forms.loop_dissipation(T_amp, N, delta, MU, kappa)


@pytest.mark.parametrize("T_frac", [0.3, 0.8, 0.99])
def test_md_loop_dissipation_large_movements(T_frac):
    # one movement per branch: integrated adaptively to 1e-9 mu N |ds| (measured <= 9e-11 relative)
    D, W, ref = md_loop("jaeger", 1, T_frac)
    assert D == pytest.approx(ref, rel=1e-9)
    assert W == pytest.approx(ref, rel=1e-9)


def test_md_loop_dissipation_dem_steps():
    # 400 movements per branch (ds ~ 3e-3 mu kappa delta): Simpson's rule per movement, ends from
    # the contact rows and the mid-point from the probe; measured 1.2e-10 at 100 movements, 5e-13 at 400
    D, W, ref = md_loop("jaeger", 400)
    assert D == pytest.approx(ref, rel=1e-10)
    assert W == pytest.approx(ref, rel=1e-10)
    # md_incremental converges to the same area as its movements shrink (its own forward-Euler
    # error dominates: measured 6.6e-5 at 1000 movements per branch)
    D, W, ref = md_loop("md_incremental", 1000)
    assert D == pytest.approx(ref, rel=3e-4)


def reference_work_1d(kw, path, panels=1024):
    """W = integral T dS + N d delta along straight 1D movements, from a second contact stepped
    through the Gauss nodes of every movement (in one tangential direction the law does not depend
    on how a movement is subdivided, notes section 2)."""
    sc = SingleContact("jaeger", **kw)
    W = 0.0
    prev = (0.0, 0.0)
    for d, s in path:
        for k in range(panels):
            for x, w in zip(NODES, WEIGHTS):
                t = (k + 0.5 + 0.5 * x) / panels
                dt = prev[0] + t * (d - prev[0])
                N, T = sc.step(dt, [prev[1] + t * (s - prev[1]), 0.0])
                W += 0.5 * w / panels * (T[0] * (s - prev[1]))
        sc.step(d, [s, 0.0])
        prev = (d, s)
    return W + sc.normal_energy()   # the normal work is Hertz's, a state function


def reference_work_2d(sc, d1, s1, panels=96):
    """Tangential work of one 2D straight movement of `sc` (not changed) from the forces of copies
    of it stepped once to each Gauss node (the force of the movement stopped part-way)."""
    d0 = sc.fs[0, S.F_DELTA]
    s0 = sc.s_prev.copy()
    W = 0.0
    for k in range(panels):
        for x, w in zip(NODES, WEIGHTS):
            t = (k + 0.5 + 0.5 * x) / panels
            probe = copy.deepcopy(sc)
            N, T = probe.step(d0 + t * (d1 - d0), s0 + t * (s1 - s0))
            W += 0.5 * w / panels * float(T @ (s1 - s0))
    return W


def test_energy_balance_random_1d_large_movements():
    rng = np.random.default_rng(11)
    kw = dict(mu=MU, **REAL)
    sc = SingleContact("jaeger", **kw)
    rstar = sc.prm[S.P_RSTAR]
    kappa = sc.prm[S.P_KAPPA]
    delta, s = 1e-3 * rstar, 0.0
    path, scale = [], 0.0
    for _ in range(14):
        d_new = delta * math.exp(rng.normal(0.0, 0.25))
        s += rng.normal(0.0, 0.4) * MU * kappa * delta
        path.append((d_new, s))
        N0 = sc.N
        sc.step(d_new, [s, 0.0])
        scale += MU * max(N0, sc.N) * abs(path[-1][1] - (path[-2][1] if len(path) > 1 else 0.0))
        delta = d_new
    # The reference converges at second order (its panels straddle the kinks where the cut passes
    # history points): 64 panels are off by 1.7e-7 scale, 256 by 1.5e-8, 1024 by 4e-9.
    W_ref = reference_work_1d(kw, path)
    assert sc.work == pytest.approx(W_ref, abs=2e-8 * scale)
    assert sc.elastic_energy() + sc.dissipation == pytest.approx(W_ref, abs=2e-8 * scale)
    assert sc.dissipation > 1e-2 * scale       # the path does slip


def test_energy_balance_random_2d():
    rng = np.random.default_rng(5)
    sc = SingleContact("jaeger", mu=MU, **REAL)
    rstar = sc.prm[S.P_RSTAR]
    kappa = sc.prm[S.P_KAPPA]
    delta, s = 1e-3 * rstar, np.zeros(2)
    sc.step(delta, s)
    W_ref = sc.tangential_work
    scale = 0.0
    for i in range(8):
        d_new = delta * math.exp(rng.normal(0.0, 0.2))
        s_new = s + rng.normal(0.0, 0.3, 2) * MU * kappa * delta
        W_ref += reference_work_2d(sc, d_new, s_new)
        N0 = sc.N
        sc.step(d_new, s_new)
        scale += MU * max(N0, sc.N) * float(np.linalg.norm(s_new - s))
        delta, s = d_new, s_new
    # measured 9e-10 scale against a 192-panel reference (second order in the panels, kinks)
    assert sc.tangential_work == pytest.approx(W_ref, abs=1e-8 * scale)
    assert sc.tangential_energy() + sc.dissipation == pytest.approx(W_ref, abs=1e-8 * scale)
    assert sc.dissipation > 1e-2 * scale


def test_energy_balance_dem_like_batch():
    """Many contacts, 600 small 2D movements each (normal load cycles, wandering shift), through
    the batched kernel: E + D = W to the second-order accuracy of the trapezoid tier."""
    n = 64
    rng = np.random.default_rng(2)
    batch = ContactBatch("jaeger", n, mu=MU, **REAL)
    rstar = batch.prm[S.P_RSTAR]
    kappa = batch.prm[S.P_KAPPA]
    base = rstar * 10.0 ** rng.uniform(-4, -3, n)
    phase = rng.uniform(0, 2 * math.pi, n)
    ratio = np.where(rng.random(n) < 0.3, rng.uniform(1.2, 3.0, n), rng.uniform(0.1, 0.9, n))
    angle = rng.uniform(0, 2 * math.pi, n)
    prev = np.zeros(n)
    scale = np.zeros(n)
    for step in range(600):
        delta = base * (1.0 + 0.4 * np.sin(phase + 2 * math.pi * step / 150))
        angle += rng.normal(0.0, 0.3, n)
        mag = ratio * kappa * MU * np.abs(delta - prev) + 2e-3 * kappa * MU * delta * rng.random(n)
        ds = np.column_stack([np.cos(angle), np.sin(angle)]) * mag[:, None]
        batch.step(delta, ds)
        scale += MU * batch.normal_force * mag
        prev = delta
    E = batch.tangential_energy()
    W = batch.tangential_work
    D = batch.dissipation
    # measured: max 1.0e-3, median 8e-5 (600 movements per load cycle); 2.5e-4 with 2400
    assert np.max(np.abs(E + D - W) / scale) <= 2e-3
    assert np.sum(D) > 1e-2 * np.sum(scale)


def test_separation_releases_the_stored_energy():
    sc = SingleContact("jaeger", mu=MU, **REAL)
    delta = 1e-3 * sc.prm[S.P_RSTAR]
    kappa = sc.prm[S.P_KAPPA]
    sc.step(delta, [0.0, 0.0])
    sc.step(delta, [0.7 * MU * kappa * delta, 0.0])
    E, D = sc.tangential_energy(), sc.dissipation
    assert E > 0.0
    sc.step(-0.5 * delta, [0.7 * MU * kappa * delta, 0.0])   # opens, shift held
    assert sc.kind == "separated" and sc.tangential_energy() == 0.0
    assert sc.dissipation == pytest.approx(D + E, rel=1e-9)
    assert sc.dissipation == pytest.approx(sc.tangential_work, rel=1e-9)
    for law in ("linear", "mindlin", "md_incremental"):
        sc = SingleContact(law, mu=MU, **REAL)
        sc.step(delta, [0.0, 0.0])
        sc.step(delta, [0.3 * MU * kappa * delta, 0.0])
        W, E = sc.tangential_work, sc.tangential_energy()
        sc.separate()
        assert sc.dissipation == pytest.approx(W, rel=1e-12) and sc.tangential_energy() == 0.0
        assert E > 0.0


def test_probe_is_the_kernel_force():
    """The read-only probe used for the work integrals gives the force the kernel then gives."""
    rng = np.random.default_rng(7)
    for seed in range(1, 4):
        sc = random_contact(seed)
        kappa = sc.prm[S.P_KAPPA]
        for _ in range(20):
            d = sc.fs[0, S.F_DELTA] * math.exp(rng.normal(0.0, 0.2))
            ds = rng.normal(0.0, 0.3, 2) * MU * kappa * d
            st = sc.store
            tx, ty = jaeger_probe(sc.prm, sc.fs, sc.ist, 0, st.pts, st.nxt, d, ds[0], ds[1])[:2]
            N, T = sc.step(d, sc.s_prev + ds)
            assert np.hypot(tx - T[0], ty - T[1]) <= 1e-12 * MU * N


def test_batch_matches_single_contact():
    rng = np.random.default_rng(4)
    for law in ("jaeger", "linear", "mindlin", "md_incremental"):
        sc = SingleContact(law, mu=MU, **REAL)
        batch = ContactBatch(law, 1, mu=MU, **REAL)
        d = 1e-3 * sc.prm[S.P_RSTAR]
        kappa_delta = sc.prm[S.P_KAPPA] * d
        s = np.zeros(2)
        for _ in range(30):
            d_new = d * math.exp(rng.normal(0.0, 0.1))
            ds = rng.normal(0.0, 0.2, 2) * MU * kappa_delta
            sc.step(d_new, s + ds)
            batch.step(np.array([d_new]), ds[None, :])
            s, d = s + ds, d_new
        assert batch.dissipation[0] == pytest.approx(sc.dissipation, rel=1e-12, abs=1e-300)
        assert batch.tangential_work[0] == pytest.approx(sc.tangential_work, rel=1e-12, abs=1e-300)
        assert batch.elastic_energy()[0] == pytest.approx(sc.elastic_energy(), rel=1e-12)


def _gross_sliding_contact(rng):
    """A contact sliding grossly: one slip segment from the origin (first touch beyond the cone)."""
    sc = SingleContact("jaeger", mu=MU, **REAL)
    delta = 1e-3 * sc.prm[S.P_RSTAR]
    angle = rng.uniform(0.0, 2.0 * math.pi)
    sc.step(delta, 1.5 * MU * sc.prm[S.P_KAPPA] * delta * np.array([math.cos(angle), math.sin(angle)]))
    assert int(sc.ist[0, S.I_LEN]) == 1 and sc.fs[0, S.F_KIND] == S.KIND_GROSS_SLIDING
    return sc


def test_gross_sliding_integrals_match_the_general_integrator():
    """The O(1) path for movements that keep a contact sliding grossly (laws.contact_step) against
    (a) the general integrator (probes of the history state along the movement, breakpoints,
    adaptive Gauss-Legendre to 1e-9) and (b) scipy's quad of T = mu N(delta(t)) u(t) written here."""
    from scipy.integrate import quad

    from graindem.contact import energy
    from graindem.contact.jaeger import F_SX, F_SY

    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(40):
        sc = _gross_sliding_contact(rng)
        prm, fs, ist, st = sc.prm, sc.fs, sc.ist, sc.store
        kappa_mu = prm[S.P_KAPPA] * MU
        d0 = fs[0, S.F_DELTA]
        sk = fs[0, F_SX:F_SY + 1].copy()
        u0 = sk / np.linalg.norm(sk)
        d1 = d0 * math.exp(rng.normal(0.0, 0.1))
        # along u0 by more than the cone grows, plus a sideways part: slides all along
        w = u0 * (kappa_mu * max(d1 - d0, 0.0) + rng.uniform(0.01, 0.5) * kappa_mu * d0) \
            + np.array([-u0[1], u0[0]]) * rng.normal(0.0, 0.3) * kappa_mu * d0
        assert energy.gross_sliding_keeps(prm, fs, ist, 0, w[0], w[1], d1 - d0)
        W, D, ok = energy.gross_sliding_integrals(prm, d0, d1, sk[0], sk[1], w[0], w[1])
        assert ok
        Wg, Dg = energy.jaeger_movement_integrals(prm, fs, ist, 0, st.pts, st.nxt, d0, d1, w[0], w[1])
        cn = prm[S.P_CN]

        def power(t, dissipated):
            dt = d0 + t * (d1 - d0)
            a = sk + t * w
            u_dot_w = float(a @ w) / float(np.linalg.norm(a))
            return MU * cn * dt ** 1.5 * (u_dot_w - kappa_mu * (d1 - d0) if dissipated else u_dot_w)

        Wq = quad(power, 0.0, 1.0, args=(False,), epsabs=0.0, epsrel=1e-13)[0]
        Dq = quad(power, 0.0, 1.0, args=(True,), epsabs=0.0, epsrel=1e-13)[0]
        scale = MU * cn * max(d0, d1) ** 1.5 * (np.linalg.norm(w) + kappa_mu * abs(d1 - d0))
        for got, ref in ((W, Wg), (D, Dg), (W, Wq), (D, Dq)):
            assert abs(got - ref) <= 1e-9 * scale, (got, ref, scale)
        assert D > 0.0
        checked += 1
    assert checked == 40


def test_gross_sliding_integrals_large_movements_match_quad():
    """Sliding movements of relative size 2-16 (a sliding contact dragged far in one step, normal
    load changing by up to a factor 2), the range the O(1) path covers beyond DEM-size steps:
    against scipy's quad of T . w and of the slip power written here (1e-9 of the movement's scale,
    as the general integrator's tolerance)."""
    from scipy.integrate import quad

    from graindem.contact import energy
    from graindem.contact.jaeger import F_SX, F_SY

    rng = np.random.default_rng(11)
    sizes = []
    for _ in range(20):
        sc = _gross_sliding_contact(rng)
        prm, fs, ist = sc.prm, sc.fs, sc.ist
        kappa_mu = prm[S.P_KAPPA] * MU
        d0 = fs[0, S.F_DELTA]
        sk = fs[0, F_SX:F_SY + 1].copy()
        s0 = float(np.linalg.norm(sk))
        u0 = sk / s0
        d1 = d0 * math.exp(rng.uniform(-0.7, 0.7))
        along = kappa_mu * max(d1 - d0, 0.0) + rng.uniform(1.0, 8.0) * s0
        w = u0 * along + np.array([-u0[1], u0[0]]) * rng.normal(0.0, 3.0) * s0
        assert energy.gross_sliding_keeps(prm, fs, ist, 0, w[0], w[1], d1 - d0)
        W, D, ok = energy.gross_sliding_integrals(prm, d0, d1, sk[0], sk[1], w[0], w[1])
        size = float(np.linalg.norm(w)) / s0 + abs(d1 - d0) / min(d0, d1)
        assert ok == (size <= energy.GROSS_MAX_SIZE)
        if not ok:
            continue
        sizes.append(size)
        cn = prm[S.P_CN]

        def power(t, dissipated):
            dt = d0 + t * (d1 - d0)
            a = sk + t * w
            u_dot_w = float(a @ w) / float(np.linalg.norm(a))
            return MU * cn * dt ** 1.5 * (u_dot_w - kappa_mu * (d1 - d0) if dissipated else u_dot_w)

        Wq = quad(power, 0.0, 1.0, args=(False,), epsabs=0.0, epsrel=1e-13, limit=200)[0]
        Dq = quad(power, 0.0, 1.0, args=(True,), epsabs=0.0, epsrel=1e-13, limit=200)[0]
        scale = MU * cn * max(d0, d1) ** 1.5 * (np.linalg.norm(w) + kappa_mu * abs(d1 - d0))
        assert abs(W - Wq) <= 1e-9 * scale, (W, Wq, scale, size)
        assert abs(D - Dq) <= 1e-9 * scale, (D, Dq, scale, size)
    assert len(sizes) >= 15 and max(sizes) > 8.0 and min(sizes) > 2.0, sizes


def test_gross_sliding_fast_path_keeps_the_balance():
    """Through contact_step (fast path taken): E_t + D = W_t, W_t against the test's own quadrature
    of the forces of copies stepped part-way (reference_work_2d)."""
    rng = np.random.default_rng(8)
    sc = _gross_sliding_contact(rng)
    kappa_mu = sc.prm[S.P_KAPPA] * MU
    W_ref = sc.tangential_work
    scale = 0.0
    delta, s = sc.fs[0, S.F_DELTA], sc.s_prev.copy()
    for _ in range(6):
        u = s / np.linalg.norm(s)
        d_new = delta * math.exp(rng.normal(0.0, 0.05))
        s_new = s + u * (kappa_mu * max(d_new - delta, 0.0) + 0.2 * kappa_mu * delta)
        W_ref += reference_work_2d(sc, d_new, s_new)
        N0 = sc.N
        sc.step(d_new, s_new)
        assert sc.fs[0, S.F_KIND] == S.KIND_GROSS_SLIDING
        scale += MU * max(N0, sc.N) * float(np.linalg.norm(s_new - s))
        delta, s = d_new, s_new
    assert sc.tangential_work == pytest.approx(W_ref, abs=1e-8 * scale)
    assert sc.tangential_energy() + sc.dissipation == pytest.approx(W_ref, abs=1e-8 * scale)


def test_movement_from_the_edge_of_the_cone_balances():
    """A contact whose one elastic segment has |p| = mu (1 - 1e-10) (as a change of law leaves a
    sliding contact) then slides: the cut sweeps the segment within ~1e-7 of the movement, where
    the integrator stops splitting panels (MIN_PANEL_WIDTH). E_t + D = W_t against the test's own
    quadrature, to 1e-7 of the movement's scale."""
    sc = SingleContact("jaeger", mu=MU, **REAL)
    kappa_mu = sc.prm[S.P_KAPPA] * MU
    d0 = 1e-3 * sc.prm[S.P_RSTAR]
    s0 = np.array([0.6, 0.8]) * kappa_mu * d0 * (1.0 - 1e-10)
    sc.step(d0, s0)
    assert int(sc.ist[0, S.I_LEN]) == 1 and sc.fs[0, S.F_KIND] == S.KIND_ELASTIC
    d1 = 1.05 * d0
    s1 = s0 + np.array([-0.3, 0.9]) * kappa_mu * d0 * 0.1
    W_ref = sc.tangential_work + reference_work_2d(sc, d1, s1, panels=192)
    sc.step(d1, s1)
    assert sc.fs[0, S.F_KIND] == S.KIND_GROSS_SLIDING
    scale = MU * sc.N * float(np.linalg.norm(s1 - s0))
    assert sc.tangential_work == pytest.approx(W_ref, abs=1e-7 * scale)
    assert sc.tangential_energy() + sc.dissipation == pytest.approx(W_ref, abs=1e-7 * scale)
