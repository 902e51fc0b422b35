"""Shear tractions of the Jäger equivalent load history (Kuhn 2011, section 4.1, eq. 21) against
independent references: the resultant (quadrature of q over the disc against the force the kernel
returns), the friction bound, the stick/slip zones, and the Cattaneo–Mindlin–Deresiewicz traction
distributions written out by hand from Johnson (1985, section 7.2) and Mindlin & Deresiewicz
(1953, sections 14–17).

Notation of the references: the Hertz pressure is p_H(r; a) = k sqrt(a^2 - r^2) with
k = 2 E*/(pi R*) the same for every contact radius (p0 = 2 E* a/(pi R*)), and N(a) = 2/3 pi k a^3.
"""

import math

import numpy as np
import pytest
from scipy.integrate import quad

from graindem.contact import SingleContact, closed_forms
from graindem.contact import state as S
from graindem.contact.traction import shear_traction, tractions

UNIT = dict(R1=2.0, R2=2.0, E=1.5, nu=0.0)
REAL = dict(R1=1e-3, R2=1e-3, E=70e9, nu=0.25)

NINE_STEPS = [(1.0, 0.2), (2.0, 0.5), (3.0, 0.6), (3.5, 1.2), (4.0, 1.55), (5.0, 1.75), (6.0, 1.85),
              (6.5, 2.3), (6.5, 1.9)]


def nine_step_contact():
    sc = SingleContact("jaeger", mu=0.5, **UNIT)
    for d, s in NINE_STEPS:
        sc.step(d, [s, 0.0])
    return sc


def random_2d_contact(seed, n_moves=40, material=REAL, mu=0.4):
    """A contact after a random sequence of 2D movements (overlap changes ~10 %, shift steps ~0.1 of
    the gross-sliding shift): histories of several elastic and slip segments."""
    rng = np.random.default_rng(seed)
    sc = SingleContact("jaeger", mu=mu, **material)
    rstar = sc.prm[S.P_RSTAR]
    delta = 1e-3 * rstar
    s = np.zeros(2)
    sc.step(delta, s)
    for _ in range(n_moves):
        delta = max(delta * math.exp(rng.normal(0.02, 0.1)), 1e-5 * rstar)
        s = s + rng.normal(0.0, 0.1, 2) * mu * sc.prm[S.P_KAPPA] * delta
        sc.step(delta, s)
    return sc


def resultant(prm, hist):
    """Integral of q over the disc by adaptive quadrature, broken at every history radius (where
    the Hertz terms have their square-root edges)."""
    radii = np.sqrt(prm[S.P_RSTAR] * hist["delta"])
    edges = np.concatenate([[0.0], radii])
    out = np.zeros(2)
    for comp in range(2):
        def f(r):
            return 2.0 * math.pi * r * shear_traction(prm, np.array([r]), hist["delta"], hist["p"])[0, comp]
        for lo, hi in zip(edges[:-1], edges[1:]):
            val, _ = quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)
            out[comp] += val
    return out


def contacts_to_check():
    return [nine_step_contact()] + [random_2d_contact(seed) for seed in range(1, 5)]


def test_resultant_equals_force():
    # Independent: the force is the kernel's running sum T_k; the traction is integrated numerically.
    for sc in contacts_to_check():
        hist = sc.history_points()
        T = sc.T
        got = resultant(sc.prm, hist)
        scale = sc.prm[S.P_MU] * sc.N
        assert np.linalg.norm(got - T) <= 1e-9 * max(np.linalg.norm(T), 1e-3 * scale), (got, T)


def test_friction_bound_and_slip_zones():
    for sc in contacts_to_check():
        mu = sc.prm[S.P_MU]
        a = math.sqrt(sc.prm[S.P_RSTAR] * sc.fs[0, S.F_DELTA])
        r = np.linspace(0.0, a, 4001)
        tr = sc.traction(r)
        qn = np.linalg.norm(tr.q, axis=1)
        assert np.all(qn <= mu * tr.p * (1.0 + 1e-12) + 1e-15 * mu * tr.p.max())
        # In the reported slip annuli the traction is at the limit to rounding ...
        assert np.all(np.abs(qn[tr.slip] - mu * tr.p[tr.slip]) <= 1e-12 * mu * tr.p.max())
        # ... and outside them strictly below it. Close to an annulus' inner edge the gap closes
        # continuously, so the strict check keeps a distance of 1e-3 a from every zone edge.
        edges = np.array([e for zone in tr.slip_zones for e in zone])
        away = np.ones(r.size, dtype=bool)
        for e in edges:
            away &= np.abs(r - e) > 1e-3 * a
        stick = ~tr.slip & away & (r < a * (1 - 1e-3))
        assert np.all(qn[stick] < mu * tr.p[stick] * (1.0 - 1e-9))


def test_nine_step_slip_zone_is_the_outer_annulus():
    # Kuhn's Figure 4: the last movement (step 9) reversed the slip in the annulus a(6.1) < r < a(6.5)
    # (history note 8.1); everything inside sticks, including the annuli that slipped in steps 4, 5, 8.
    sc = nine_step_contact()
    tr = sc.traction(np.array([0.0]))
    assert len(tr.slip_zones) == 1
    r_in, r_out = tr.slip_zones[0]
    assert r_in == pytest.approx(math.sqrt(6.1), rel=1e-12)
    assert r_out == pytest.approx(math.sqrt(6.5), rel=1e-12)
    # At the outer annulus the traction points backwards (slope -mu), q = -mu p.
    r = np.array([2.5])
    tr = sc.traction(r)
    assert tr.q[0, 0] == pytest.approx(-0.5 * tr.p[0], rel=1e-12)


def johnson_k(prm):
    return 2.0 * prm[S.P_ESTAR] / (math.pi * prm[S.P_RSTAR])


def root_term(a, r):
    return np.sqrt(np.maximum(a * a - r * r, 0.0))


def test_constant_load_loading_unloading_tractions():
    """Johnson (1985) section 7.2, constant N: loading to T* gives
    q = mu k [sqrt(a^2 - r^2) - sqrt(c^2 - r^2)], (c/a)^3 = 1 - T*/(mu N);
    unloading to T adds -2 mu k [sqrt(a^2 - r^2) - sqrt(b^2 - r^2)], (b/a)^3 = 1 - (T* - T)/(2 mu N).
    The contact is driven by the closed-form shifts (contact-mechanics.md), not by forces."""
    mu = 0.4
    sc = SingleContact("jaeger", mu=mu, **REAL)
    prm = sc.prm
    kappa = prm[S.P_KAPPA]
    delta = 2e-3 * prm[S.P_RSTAR]
    N = prm[S.P_CN] * delta ** 1.5
    a = math.sqrt(prm[S.P_RSTAR] * delta)
    k = johnson_k(prm)
    sc.step(delta, [0.0, 0.0])
    T_star = 0.7 * mu * N
    s_star = float(closed_forms.monotonic_shift(T_star, N, delta, mu, kappa))
    sc.step(delta, [s_star, 0.0])
    r = np.linspace(0.0, a, 1001)
    c = a * (1.0 - T_star / (mu * N)) ** (1.0 / 3.0)
    ref = mu * k * (root_term(a, r) - root_term(c, r))
    q = sc.traction(r).q
    assert np.max(np.abs(q[:, 0] - ref)) <= 1e-10 * mu * k * a
    assert np.all(q[:, 1] == 0.0)
    T = -0.2 * mu * N
    # MD unloading shift: s = s* - 2 mu kappa delta [1 - (1 - (T* - T)/(2 mu N))^(2/3)]
    s = s_star - 2.0 * mu * kappa * delta * (1.0 - (1.0 - (T_star - T) / (2.0 * mu * N)) ** (2.0 / 3.0))
    sc.step(delta, [s, 0.0])
    assert sc.T[0] == pytest.approx(T, rel=1e-11)
    b = a * (1.0 - (T_star - T) / (2.0 * mu * N)) ** (1.0 / 3.0)
    ref = mu * k * (root_term(a, r) - root_term(c, r)) - 2.0 * mu * k * (root_term(a, r) - root_term(b, r))
    tr = sc.traction(r)
    assert np.max(np.abs(tr.q[:, 0] - ref)) <= 1e-10 * mu * k * a
    assert tr.slip_zones[0][0] == pytest.approx(b, rel=1e-10)


def md17_state(prm, mu, c, N0, N1, N, unloading):
    """Mindlin & Deresiewicz section 17 (Kuhn 2011, section 4.1), derived here with radii:
    preload N0, then T = c (N - N0) with c > mu while N rises to N1 and falls back to N0.

    Loading: the edge slips forward, q = mu k [sqrt(a^2 - r^2) - sqrt(b^2 - r^2)]; its resultant
    mu (N - N(b)) = c (N - N0) gives (b/a)^3 = 1 - c (N - N0)/(mu N); the stick disc r < b moves
    rigidly by the Cattaneo displacement s = mu kappa (delta - delta_b), delta_b = b^2/R*.
    Unloading: the edge slips backwards in a* < r < a:
    q = mu k [2 sqrt(a*^2 - r^2) - sqrt(a^2 - r^2) - sqrt(b1^2 - r^2)] (b1 the stick radius at N1),
    resultant mu [2 N(a*) - N - N(b1)] = c (N - N0), i.e. N(a*) = [c (N - N0) + mu N + mu N(b1)]/(2 mu);
    shift s = mu kappa (2 delta* - delta - delta_b1).
    Returns (delta, s, T, q(r) as a function)."""
    rstar = prm[S.P_RSTAR]
    cn = prm[S.P_CN]
    k = johnson_k(prm)

    def overlap(force):
        return (force / cn) ** (2.0 / 3.0)

    delta = overlap(N)
    a = math.sqrt(rstar * delta)
    kappa = prm[S.P_KAPPA]
    N_b1 = N1 * (1.0 - c * (N1 - N0) / (mu * N1))
    if not unloading:
        N_b = N * (1.0 - c * (N - N0) / (mu * N))
        d_b = overlap(N_b)
        b = math.sqrt(rstar * d_b)
        return delta, mu * kappa * (delta - d_b), c * (N - N0), lambda r: mu * k * (root_term(a, r) - root_term(b, r))
    N_star = (c * (N - N0) + mu * N + mu * N_b1) / (2.0 * mu)
    d_star = overlap(N_star)
    d_b1 = overlap(N_b1)
    a_star = math.sqrt(rstar * d_star)
    b1 = math.sqrt(rstar * d_b1)
    s = mu * kappa * (2.0 * d_star - delta - d_b1)
    return delta, s, c * (N - N0), lambda r: mu * k * (2.0 * root_term(a_star, r) - root_term(a, r) - root_term(b1, r))


def test_md17_tractions_in_four_large_steps():
    """Kuhn section 4.1: the section-17 sequence in four large straight movements between the (delta, s)
    of the force-controlled solution at N0 + dN/2, N1, N1 - dN/2, N0; at each step end the Jäger
    traction equals the Mindlin–Deresiewicz distribution."""
    mu, c = 0.4, 0.6
    sc = SingleContact("jaeger", mu=mu, **REAL)
    prm = sc.prm
    N0 = prm[S.P_CN] * (1e-3 * prm[S.P_RSTAR]) ** 1.5
    N1 = 2.5 * N0          # c (N1 - N0) = 0.9 N0 <= mu N1 = N0
    sc.step((N0 / prm[S.P_CN]) ** (2.0 / 3.0), [0.0, 0.0])
    stops = [(N0 + 0.5 * (N1 - N0), False), (N1, False), (N1 - 0.5 * (N1 - N0), True), (N0, True)]
    for N, unloading in stops:
        delta, s, T, q_ref = md17_state(prm, mu, c, N0, N1, N, unloading)
        # the driving values agree with the project's closed form (written separately)
        d2, s2, T2 = closed_forms.md_proportional_cycle(N, N0, N1, c, mu, prm[S.P_KAPPA], prm[S.P_CN], unloading)
        assert (float(d2), float(s2), float(T2)) == pytest.approx((delta, s, T), rel=1e-12)
        sc.step(delta, [s, 0.0])
        assert sc.T[0] == pytest.approx(T, rel=1e-10)
        a = math.sqrt(prm[S.P_RSTAR] * delta)
        r = np.linspace(0.0, a, 1501)
        q = sc.traction(r).q[:, 0]
        assert np.max(np.abs(q - q_ref(r))) <= 1e-9 * mu * johnson_k(prm) * a


def test_plain_function_matches_method_and_input_checks():
    sc = nine_step_contact()
    h = sc.history_points()
    r = np.linspace(0.0, math.sqrt(6.5), 50)
    tr = tractions(sc.prm, r, h["delta"], h["p"], h["slip"])
    assert np.array_equal(tr.q, sc.traction(r).q)
    with pytest.raises(ValueError, match="r must lie in"):
        sc.traction([3.0])
    with pytest.raises(ValueError, match="r must lie in"):
        sc.traction([-0.1])
    with pytest.raises(ValueError, match="traction"):
        SingleContact("mindlin", mu=0.5, **UNIT).traction([0.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        shear_traction(sc.prm, r, [2.0, 1.0], [[0.1, 0.0], [0.1, 0.0]])
