"""Tests of the tangential law 'jaeger' (shared/notes/jaeger-algorithm.md) against independent
references: the hand-derived cases of the notes' section 8, the Cattaneo–Mindlin–Deresiewicz closed
forms, a closed-form Mindlin–Deresiewicz section-17 solution, and invariances/conservation laws.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graindem._jit import njit
from graindem.contact import ContactBatch, SingleContact, closed_forms, jaeger
from graindem.contact import state as S
from graindem.contact.store import HistoryStore

# Notes section 8 units: R1 = R2 = 2, E = 1.5, nu = 0 -> E* = 0.75, R* = 1, N = delta^1.5, kappa = 1.
UNIT = dict(R1=2.0, R2=2.0, E=1.5, nu=0.0)
# A realistic material (notes 8.8): glass-like spheres of 1 mm radius.
REAL = dict(R1=1e-3, R2=1e-3, E=70e9, nu=0.25, mu=0.4)

# |T| <= mu N holds to rounding; the spec allows a relative 1e-12.
BOUND_TOL = 1e-12


def unit_contact(mu=0.5, xi=0.0):
    return SingleContact("jaeger", mu=mu, xi=xi, **UNIT)


def check_bound(sc):
    T = sc.T
    assert np.all(np.isfinite(T)) and math.isfinite(sc.N)
    assert np.hypot(*T) <= sc.prm[S.P_MU] * sc.N * (1.0 + BOUND_TOL)


def hand_forces(hist):
    """T_i of a hand-written history [(delta_i, p_i)] with N = delta^1.5: T_i = sum p_j (N_j - N_{j-1})."""
    T, N_prev, out = 0.0, 0.0, []
    for d, p in hist:
        T += p * (d ** 1.5 - N_prev)
        N_prev = d ** 1.5
        out.append(T)
    return out


def test_unit_parameters():
    prm = unit_contact().prm
    assert prm[S.P_CN] == pytest.approx(1.0, rel=1e-15)
    assert prm[S.P_KAPPA] == pytest.approx(1.0, rel=1e-15)


# --- notes 8.1: the nine-step sequence (Kuhn's Figure 4), histories typed from the table ---------

NINE_STEPS = [
    # (delta, s), history after the step [(delta_i, p_i, slip_i)], T from the table
    ((1.0, 0.2), [(1, 0.2, 0)], 0.2),
    ((2.0, 0.5), [(1, 0.2, 0), (2, 0.3, 0)], 0.7485281374),
    ((3.0, 0.6), [(1, 0.2, 0), (2, 0.3, 0), (3, 0.1, 0)], 0.9853006672),
    ((3.5, 1.2), [(1, 0.2, 0), (2, 0.3, 0), (2.125, 0.1, 0), (3.5, 0.5, 1)], 2.5005583607),
    ((4.0, 1.55), [(1, 0.2, 0), (1.75, 0.3, 0), (4, 0.5, 1)], 3.4369935206),
    ((5.0, 1.75), [(1, 0.2, 0), (1.75, 0.3, 0), (4, 0.5, 1), (5, 0.2, 0)], 4.0730614981),
    ((6.0, 1.85), [(1, 0.2, 0), (1.75, 0.3, 0), (4, 0.5, 1), (5, 0.2, 0), (6, 0.1, 0)], 4.4247213550),
    ((6.5, 2.3), [(1, 0.2, 0), (1.75, 0.3, 0), (4, 0.5, 1), (5, 0.2, 0), (5.5, 0.1, 0), (6.5, 0.5, 1)],
     6.0814768831),
    ((6.5, 1.9), [(1, 0.2, 0), (1.75, 0.3, 0), (4, 0.5, 1), (5, 0.2, 0), (5.5, 0.1, 0), (6.1, 0.5, 1),
                  (6.5, -0.5, 1)], 4.5755520869),
]
NINE_KINDS = ["elastic", "elastic", "elastic", "partial_slip", "partial_slip", "elastic", "elastic",
              "partial_slip", "partial_slip"]


def test_nine_step_sequence_every_step():
    sc = unit_contact()
    for ((d, s), hist, T_table), kind in zip(NINE_STEPS, NINE_KINDS):
        N, T = sc.step(d, [s, 0.0])
        h = sc.history_points()
        assert len(h["delta"]) == len(hist)
        want_d = np.array([x[0] for x in hist], dtype=float)
        want_p = np.array([x[1] for x in hist], dtype=float)
        # Cut points come from linear equations in the hand derivation: equal to rounding.
        np.testing.assert_allclose(h["delta"], want_d, rtol=0, atol=1e-12)
        np.testing.assert_allclose(h["p"][:, 0], want_p, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(h["p"][:, 1], 0.0)
        np.testing.assert_array_equal(h["slip"], [bool(x[2]) for x in hist])
        np.testing.assert_allclose(h["T"][:, 0], hand_forces([(x[0], x[1]) for x in hist]), rtol=0, atol=1e-12)
        # The table gives T to 10 decimals.
        assert T[0] == pytest.approx(T_table, abs=1e-10)
        assert T[1] == 0.0 and N == pytest.approx(d ** 1.5, rel=1e-15)
        assert sc.kind == kind
    assert [len(x[1]) for x in NINE_STEPS] == [1, 2, 3, 4, 3, 4, 5, 6, 7]
    h = sc.history_points()
    np.testing.assert_allclose(h["T"][:, 0], [0.2, 0.5945097192, 3.4369935206, 4.0730614981, 4.2448918433,
                                              5.3285144850, 4.5755520869], atol=1e-10)
    assert sc.N == pytest.approx(16.5718134192, abs=1e-10)


# --- notes 8.2 - 8.7 -------------------------------------------------------------------------------

def test_reversal_after_slip_matches_md_unloading():
    sc = unit_contact()
    sc.step(4.0, [0.0, 0.0])
    N, T = sc.step(4.0, [1.0, 0.0])
    assert T[0] == pytest.approx(0.5 * (8 - 2 ** 1.5), abs=1e-12)
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [2, 4], atol=1e-12)
    np.testing.assert_allclose(h["p"][:, 0], [0, 0.5], atol=1e-12)
    N, T = sc.step(4.0, [0.8, 0.0])
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [2, 3.8, 4], atol=1e-12)
    np.testing.assert_allclose(h["p"][:, 0], [0, 0.5, -0.5], atol=1e-12)
    assert T[0] == pytest.approx(1.9933501397, abs=1e-10)
    # Mindlin–Deresiewicz unloading at constant N from the turning point (s* = 1, T*).
    T_md = closed_forms.from_turning_point(0.8, 1.0, 0.5 * (8 - 2 ** 1.5), -1, 8.0, 4.0, 0.5, 1.0)
    assert T[0] == pytest.approx(float(T_md), abs=1e-12 * 0.5 * 8)


def test_normal_unloading_at_fixed_shift_is_a_slip():
    sc = unit_contact()
    sc.step(4.0, [0.0, 0.0])
    sc.step(4.0, [1.0, 0.0])
    N, T = sc.step(3.0, [1.0, 0.0])
    assert sc.kind == "partial_slip"
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [1, 3], atol=1e-12)
    np.testing.assert_allclose(h["p"][:, 0], [0, 0.5], atol=1e-12)
    assert T[0] == pytest.approx(0.5 * (3 ** 1.5 - 1), abs=1e-12)
    N, T = sc.step(4.0, [0.8, 0.0])
    assert sc.kind == "elastic"
    assert len(sc.history_points()["delta"]) == 3
    assert sc.history_points()["p"][-1, 0] == pytest.approx(-0.2, abs=1e-12)
    assert T[0] == pytest.approx(0.5 * (3 ** 1.5 - 1) - 0.2 * (8 - 3 ** 1.5), abs=1e-12)
    assert T[0] == pytest.approx(1.5373066959, abs=1e-10)


def test_perpendicular_probe():
    sc = unit_contact()
    N, T = sc.step(4.0, [0.8, 0.0])
    np.testing.assert_allclose(T, [1.6, 0.0], atol=1e-12)
    N, T = sc.step(4.0, [0.8, 0.6])
    d_cut = 4.0 - 0.6 / math.sqrt(0.21)
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [d_cut, 4.0], atol=1e-12)
    np.testing.assert_allclose(h["p"][-1], [0.2, 0.6 / (4 - d_cut)], atol=1e-12)
    assert np.hypot(*h["p"][-1]) == pytest.approx(0.5, abs=1e-15)
    assert T[0] == pytest.approx(1.6, abs=1e-12)          # x force unchanged
    assert T[1] == pytest.approx(1.6434801853, abs=1e-10)


def test_slip_after_slip_2d_follows_target_not_increment():
    sc = unit_contact()
    sc.step(4.0, [0.0, 0.0])
    sc.step(4.0, [1.0, 0.0])
    N, T = sc.step(4.0, [1.0, 0.5])
    d_cut = 4.0 - 2.0 * math.sqrt(1.25)
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [d_cut, 4.0], atol=1e-12)
    u = np.array([1.0, 0.5]) / math.sqrt(1.25)
    np.testing.assert_allclose(h["p"][-1], 0.5 * u, atol=1e-15)
    np.testing.assert_allclose(T, 0.5 * (8 - d_cut ** 1.5) * u, atol=1e-12)
    np.testing.assert_allclose(T, [2.5300067842, 1.2650033921], atol=1e-10)


def test_gross_sliding_2d():
    sc = unit_contact()
    sc.step(4.0, [0.0, 0.0])
    sc.step(4.0, [1.0, 0.0])
    N, T = sc.step(4.0, [1.0, 3.0])
    assert sc.kind == "gross_sliding"
    u = np.array([1.0, 3.0]) / math.sqrt(10)
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [4.0], atol=0)
    np.testing.assert_allclose(h["p"][0], 0.5 * u, atol=1e-15)
    np.testing.assert_allclose(T, 0.5 * 8 * u, atol=1e-12)
    np.testing.assert_allclose(T, [1.2649110641, 3.7947331922], atol=1e-10)
    # The elastic shift is now mu kappa delta u: a small reversal is elastic-then-MD from there.
    np.testing.assert_allclose(sc.fs[0, S.F_LAW0:S.F_LAW0 + 2], 2.0 * u, atol=1e-14)


def test_xi_merge_case():
    sc = unit_contact(xi=0.5)
    sc.step(1.0, [0.1, 0.0])
    N, T = sc.step(4.0, [0.7, 0.0])
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [4.0], atol=0)
    np.testing.assert_allclose(h["p"][:, 0], [0.1875], atol=1e-15)
    assert T[0] == pytest.approx(1.5, abs=1e-14)
    assert sc.fs[0, S.F_LAW0] == pytest.approx(0.75, abs=1e-14)
    N, T = sc.step(5.0, [1.4, 0.0])
    # Hand: S' = 0.75 + 0.7 = 1.45 and, on the merged segment, S(d*) = 0.1875 d* (kappa = 1);
    # h(d*) = 0.5 (5 - d*) - (1.45 - 0.1875 d*) = 0  ->  d* = 1.05 / 0.3125 = 3.36.
    d_cut = 1.05 / 0.3125
    assert d_cut == pytest.approx(3.36)
    h = sc.history_points()
    np.testing.assert_allclose(h["delta"], [d_cut, 5.0], atol=1e-12)
    assert T[0] == pytest.approx(0.1875 * d_cut ** 1.5 + 0.5 * (5 ** 1.5 - d_cut ** 1.5), abs=1e-12)
    assert T[0] == pytest.approx(3.6654881519, abs=1e-10)
    # The exact algorithm on the same path: cut at 10/3 in (1, 4].
    ex = unit_contact(xi=0.0)
    ex.step(1.0, [0.1, 0.0])
    ex.step(4.0, [0.7, 0.0])
    N, T = ex.step(5.0, [1.4, 0.0])
    np.testing.assert_allclose(ex.history_points()["delta"], [1.0, 10.0 / 3.0, 5.0], atol=1e-12)
    assert T[0] == pytest.approx(3.6644280854, abs=1e-10)


# --- constant N: Cattaneo–Mindlin loading and the Mindlin–Deresiewicz loop ------------------------

def _real_contact(**kw):
    return SingleContact("jaeger", **{**REAL, **kw})


@pytest.mark.parametrize("n_steps", [1, 3, 7, 100])
@pytest.mark.parametrize("amp_frac", [0.8, 1.3])
def test_constant_N_loop_matches_closed_forms(n_steps, amp_frac):
    sc = _real_contact()
    delta = 2e-6
    mu, kappa = REAL["mu"], sc.prm[S.P_KAPPA]
    N = sc.prm[S.P_CN] * delta ** 1.5
    s_amp = amp_frac * mu * kappa * delta
    # The law is exact for any step size, so the error is rounding (measured <= 5e-15 mu N); the
    # bound asked for was 1e-9 mu N, we hold it to 1e-12 mu N.
    tol = 1e-12 * mu * N
    sc.step(delta, [0.0, 0.0])
    worst = 0.0
    # loading 0 -> s_amp (closed form: monotonic), unloading s_amp -> -s_amp, reloading -> s_amp
    for s in np.linspace(0, s_amp, n_steps + 1)[1:]:
        _, T = sc.step(delta, [s, 0.0])
        worst = max(worst, abs(T[0] - closed_forms.monotonic(s, N, delta, mu, kappa)))
    T_turn = T[0]
    for s in np.linspace(s_amp, -s_amp, n_steps + 1)[1:]:
        _, T = sc.step(delta, [s, 0.0])
        worst = max(worst, abs(T[0] - closed_forms.from_turning_point(s, s_amp, T_turn, -1, N, delta, mu, kappa)))
    T_turn = T[0]
    for s in np.linspace(-s_amp, s_amp, n_steps + 1)[1:]:
        _, T = sc.step(delta, [s, 0.0])
        worst = max(worst, abs(T[0] - closed_forms.from_turning_point(s, -s_amp, T_turn, +1, N, delta, mu, kappa)))
        assert T[1] == 0.0
    assert worst <= tol
    # The loop closes on itself (the reloading branch ends at the first turning force).
    assert T[0] == pytest.approx(float(closed_forms.monotonic(s_amp, N, delta, mu, kappa)), abs=tol)


@pytest.mark.parametrize("n_steps", [1, 3, 7])
def test_proportional_line_from_zero(n_steps):
    """Straight line from (0, 0): T = N s/(kappa delta) whatever the sampling, or mu N beyond."""
    for frac in (0.6, 1.4):
        sc = _real_contact()
        mu, kappa = REAL["mu"], sc.prm[S.P_KAPPA]
        d_end = 3e-6
        s_end = frac * mu * kappa * d_end
        for t in np.linspace(0, 1, n_steps + 1)[1:]:
            N, T = sc.step(t * d_end, [t * s_end, 0.0])
            T_ref = closed_forms.proportional_from_zero(t * s_end, t * d_end, N, mu, kappa)
            assert T[0] == pytest.approx(float(T_ref), abs=1e-12 * mu * N)


# --- Mindlin–Deresiewicz section 17 (Kuhn 4.1) ----------------------------------------------------

def _md17_points(sc):
    mu, kappa, cN = REAL["mu"], sc.prm[S.P_KAPPA], sc.prm[S.P_CN]
    N0 = 1.0
    c = 0.8                                 # dT/dN > mu = 0.4
    N1 = 0.97 * c * N0 / (c - mu)           # T1 = c (N1 - N0) close to mu N1
    dN = N1 - N0
    load = closed_forms.md_proportional_cycle(np.array([N0, N0 + dN / 2, N1]), N0, N1, c, mu, kappa, cN)
    unload = closed_forms.md_proportional_cycle(np.array([N1 - dN / 2, N0]), N0, N1, c, mu, kappa, cN,
                                                unloading=True)
    d = np.concatenate([load[0], unload[0]])
    s = np.concatenate([load[1], unload[1]])
    T = np.concatenate([load[2], unload[2]])
    return d, s, T, mu


def test_md_section17_closed_form_consistency():
    """Checks of the closed form itself, independent of the law: continuity at N1, T1 < mu N1,
    s grows on loading and shrinks on unloading, and the unloading branch ends with s > 0 (the
    forward slip is not undone: a residual shift at T = 0)."""
    sc = _real_contact()
    d, s, T, mu = _md17_points(sc)
    kappa, cN = sc.prm[S.P_KAPPA], sc.prm[S.P_CN]
    N1 = cN * d[2] ** 1.5
    _, s_u, _ = closed_forms.md_proportional_cycle(np.array([N1]), cN * d[0] ** 1.5, N1, 0.8, mu, kappa, cN,
                                                   unloading=True)
    assert s_u[0] == pytest.approx(s[2], rel=1e-13)
    assert s[0] == 0.0 and s[1] > 0 and s[2] > s[1] and s[3] < s[2] and 0 < s[4] < s[3]
    assert T[2] < mu * N1 and T[4] == pytest.approx(0.0, abs=1e-15)


def test_md_section17_four_large_steps():
    sc = _real_contact()
    d, s, T_ref, mu = _md17_points(sc)
    sc.step(d[0], [0.0, 0.0])                  # preload N0
    for i in range(1, 5):
        N, T = sc.step(d[i], [s[i], 0.0])
        # Asked: 1e-9 mu N; measured ~1e-15 mu N (rounding), so hold it to 1e-12 mu N.
        assert abs(T[0] - T_ref[i]) <= 1e-12 * mu * N, (i, T[0], T_ref[i])
        assert sc.kind == "partial_slip"


@pytest.mark.parametrize("n_sub", range(1, 8))
def test_md_section17_split_step_invariance(n_sub):
    big = _real_contact()
    small = _real_contact()
    d, s, _, mu = _md17_points(big)
    big.step(d[0], [0.0, 0.0])
    small.step(d[0], [0.0, 0.0])
    for i in range(1, 5):
        _, T_big = big.step(d[i], [s[i], 0.0])
        for t in np.linspace(0, 1, n_sub + 1)[1:]:
            N, T_small = small.step(d[i - 1] + t * (d[i] - d[i - 1]), [s[i - 1] + t * (s[i] - s[i - 1]), 0.0])
        assert abs(T_small[0] - T_big[0]) <= 1e-12 * mu * N


# --- degenerate input (notes 5, 8.9) --------------------------------------------------------------

def test_pure_normal_loading_unloading():
    sc = unit_contact()
    for d in [1.0, 2.0, 3.0, 2.5, 0.5, 4.0, 1e-9, 1e3]:
        N, T = sc.step(d, [0.0, 0.0])
        np.testing.assert_array_equal(T, 0.0)
        check_bound(sc)
        assert len(sc.history_points()["delta"]) == 1     # p = 0 segments merge exactly


def test_zero_increment_after_elastic_loading_keeps_force_path():
    sc = unit_contact()
    sc.step(2.0, [0.4, 0.0])                       # p = 0.2
    N, T = sc.step(3.0, [0.4, 0.0])                # Delta s = 0: elastic, p = 0
    assert sc.kind == "elastic"
    assert T[0] == pytest.approx(0.2 * 2 ** 1.5, abs=1e-14)
    N, T = sc.step(2.5, [0.4, 0.0])                # back down the p = 0 segment: still elastic (4b)
    assert sc.kind == "elastic" and T[0] == pytest.approx(0.2 * 2 ** 1.5, abs=1e-14)


def test_elastic_step_and_exact_reverse():
    sc = unit_contact()
    sc.step(2.0, [0.3, 0.0])
    sc.step(3.0, [0.5, 0.1])
    h0 = sc.history_points()
    T0 = sc.T
    sc.step(3.5, [0.6, 0.25])
    sc.step(3.0, [0.5, 0.1])
    assert sc.kind == "elastic"
    h1 = sc.history_points()
    assert len(h1["delta"]) == len(h0["delta"])
    np.testing.assert_allclose(sc.T, T0, atol=1e-14)
    np.testing.assert_allclose(h1["delta"], h0["delta"], atol=0)


def test_repeated_point_and_zero_increment():
    sc = unit_contact()
    sc.step(2.0, [0.3, 0.2])
    sc.step(2.5, [0.1, 0.4])
    T0, n0 = sc.T, len(sc.history_points()["delta"])
    for _ in range(3):
        sc.step(2.5, [0.1, 0.4])
        assert sc.kind == "elastic"
        np.testing.assert_array_equal(sc.T, T0)
        assert len(sc.history_points()["delta"]) == n0


def test_slip_step_and_exact_reverse():
    sc = unit_contact()
    sc.step(3.0, [0.3, 0.0])
    T0 = sc.T.copy()
    sc.step(3.0, [1.0, 0.2])                          # slip
    assert sc.kind == "partial_slip"
    N, T = sc.step(3.0, [0.3, 0.0])                   # exact reverse: a slip back, not a return
    check_bound(sc)
    # Reverse slip annulus: by MD theory the force does not return to T0 after a slip.
    assert not np.allclose(T, T0, atol=1e-6)
    # Repeating the forward/backward pair cycles between the same two states (a closed loop).
    Ta = sc.step(3.0, [1.0, 0.2])[1]
    Tb = sc.step(3.0, [0.3, 0.0])[1]
    Ta2 = sc.step(3.0, [1.0, 0.2])[1]
    Tb2 = sc.step(3.0, [0.3, 0.0])[1]
    np.testing.assert_allclose(Ta2, Ta, atol=1e-13)
    np.testing.assert_allclose(Tb2, Tb, atol=1e-13)
    np.testing.assert_allclose(Tb, T, atol=1e-13)


def test_separation_then_recontact_is_fresh():
    sc = unit_contact()
    sc.step(3.0, [0.5, 0.2])
    sc.step(2.0, [1.5, -0.3])
    sc.step(-0.1, [1.5, -0.3])
    assert sc.kind == "separated" and sc.N == 0.0 and np.all(sc.T == 0.0)
    assert sc.store.n_live == 0 and sc.ist[0, S.I_LEN] == 0 and sc.ist[0, S.I_HEAD] == -1
    # Re-contact: the movement starts from (0, s_prev): shift increment 0.1 along y only.
    fresh = unit_contact()
    fresh.step(1.0, [0.0, 0.1])
    N, T = sc.step(1.0, [1.5, -0.2])
    np.testing.assert_allclose(T, fresh.T, atol=0)
    np.testing.assert_allclose(T, [0.0, 0.1], atol=1e-15)


def test_first_touch_beyond_gross_sliding():
    sc = unit_contact()
    s = np.array([3.0, -4.0])
    N, T = sc.step(2.0, s)
    assert sc.kind == "gross_sliding"
    np.testing.assert_allclose(T, 0.5 * N * s / 5.0, atol=1e-15)


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1.0, 1e12])
def test_huge_and_tiny_steps(scale):
    """The law is scale-free in the displacement unit: all forces scale as scale^1.5."""
    ref = unit_contact()
    sc = unit_contact()
    rng = np.random.default_rng(7)
    d, s = 1.0, np.zeros(2)
    for _ in range(60):
        d = max(d * math.exp(rng.normal(0, 0.5)), 1e-6)
        s = s + rng.normal(0, 0.3, 2) * d
        _, T_ref = ref.step(d, s)
        N, T = sc.step(d * scale, s * scale)
        check_bound(sc)
        np.testing.assert_allclose(T, T_ref * scale ** 1.5, rtol=0, atol=1e-11 * 0.5 * N)
    # Extreme jumps in one contact: tiny after huge, huge after tiny.
    for d, s in [(1e-20, [1e-20, 0]), (1e10, [1e20, 1e20]), (1e-15, [0, 0]), (5.0, [1e-300, 0]), (1e-300, [0, 1e-300])]:
        sc.step(d, s)
        check_bound(sc)
    # A shift whose square overflows: still gross sliding along the shift.
    N, T = sc.step(1.0, [1e300, 1e300])
    np.testing.assert_allclose(T, 0.5 * N * np.array([1.0, 1.0]) / math.sqrt(2), rtol=1e-15)


def test_invalid_shift_is_rejected_before_work():
    sc = unit_contact()
    sc.step(1.0, [0.1, 0.0])
    with pytest.raises(ValueError, match="shift"):
        sc.step(1.0, [np.nan, 0.0])
    with pytest.raises(ValueError, match="shift"):
        sc.step(1.0, [0.1, 0.2, 0.3])
    # The kernel itself refuses a non-finite increment before touching the row.
    row = sc.fs.copy()
    st_ = sc.store
    with pytest.raises(ValueError, match="shift increment"):
        jaeger.step_outlined(sc.prm, sc.fs, sc.ist, 0, 1.0, np.inf, 0.0, st_.pts, st_.nxt, st_.meta)
    np.testing.assert_array_equal(sc.fs, row)


# --- property tests --------------------------------------------------------------------------------

def _random_history(rng, n, dim=2, d0=1e-6, scale=1.0):
    """A random (delta, s) sequence: overlap log-random-walk, shift increments of the size of the
    cone (kappa mu Delta delta ~ 0.2 Delta delta) so elastic steps, slips and gross sliding all occur."""
    d = np.empty(n)
    s = np.zeros((n, 2))
    cur_d, cur_s = d0, np.zeros(2)
    for i in range(n):
        cur_d = cur_d * math.exp(rng.normal(0.0, 0.15))
        step = rng.normal(0.0, 0.2 * scale * cur_d * 0.15, dim)
        cur_s = cur_s + (step if dim == 2 else np.array([step[0], 0.0]))
        d[i] = cur_d
        s[i] = cur_s
    return d, s


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), scale=st.sampled_from([0.3, 1.0, 3.0]),
       mu=st.sampled_from([0.0, 0.1, 0.5, 1.0]), nu=st.sampled_from([-0.5, 0.0, 0.25, 0.45]))
def test_property_bound_and_increasing_history(seed, scale, mu, nu):
    rng = np.random.default_rng(seed)
    sc = SingleContact("jaeger", R1=1e-3, R2=2e-3, E=70e9, nu=nu, mu=mu)
    d, s = _random_history(rng, 120, scale=scale)
    for i in range(len(d)):
        sc.step(d[i], s[i])
        check_bound(sc)
        h = sc.history_points()
        assert len(h["delta"]) == sc.ist[0, S.I_LEN] >= 1
        assert np.all(np.diff(h["delta"]) > 0) and h["delta"][0] > 0
        assert h["delta"][-1] == d[i]
        assert np.all(np.hypot(h["p"][:, 0], h["p"][:, 1]) <= mu * (1 + 1e-14))
        np.testing.assert_array_equal(np.hypot(h["p"][h["slip"], 0], h["p"][h["slip"], 1]) > 0, mu > 0)
        assert sc.store.n_live == len(h["delta"])


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), angle=st.floats(0.0, 2 * math.pi))
def test_property_rotation_rotates_force(seed, angle):
    rng = np.random.default_rng(seed)
    d, s = _random_history(rng, 80)
    rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    a = _real_contact()
    b = _real_contact()
    for i in range(len(d)):
        _, Ta = a.step(d[i], s[i])
        N, Tb = b.step(d[i], rot @ s[i])
        # Rotation changes only rounding (a tie decided differently moves a force by <= ~1.5 eps mu N).
        np.testing.assert_allclose(Tb, rot @ Ta, rtol=0, atol=1e-12 * REAL["mu"] * N)


@SETTINGS
@given(seed=st.integers(0, 2 ** 32 - 1), n_sub=st.integers(2, 7))
def test_property_split_step_invariance_1d(seed, n_sub):
    rng = np.random.default_rng(seed)
    d, s = _random_history(rng, 60, dim=1)
    a = _real_contact()
    b = _real_contact()
    d_prev, s_prev = 0.0, np.zeros(2)
    worst = 0.0
    for i in range(len(d)):
        _, Ta = a.step(d[i], s[i])
        for t in np.linspace(0, 1, n_sub + 1)[1:]:
            N, Tb = b.step(d_prev + t * (d[i] - d_prev), s_prev + t * (s[i] - s_prev))
        worst = max(worst, abs(Tb[0] - Ta[0]) / (REAL["mu"] * N))
        d_prev, s_prev = d[i], s[i]
    assert worst <= 1e-12


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_property_separation_clears_history(seed):
    rng = np.random.default_rng(seed)
    d, s = _random_history(rng, 40)
    sc = _real_contact()
    for i in range(len(d)):
        sc.step(d[i], s[i])
    assert sc.store.n_live > 0
    sc.step(0.0, s[-1])
    assert sc.store.n_live == 0 and sc.ist[0, S.I_LEN] == 0 and sc.ist[0, S.I_HEAD] == -1
    assert sc.N == 0.0 and np.all(sc.T == 0.0)


def test_batch_store_live_count_with_contacts_opening_and_closing():
    rng = np.random.default_rng(3)
    n = 50
    batch = ContactBatch("jaeger", n, store=HistoryStore(8), **REAL)   # forces several growths
    singles = [_real_contact() for _ in range(n)]
    d = np.zeros(n)
    s = np.zeros((n, 2))
    for it in range(150):
        d_new = np.where(d > 0, d * np.exp(rng.normal(0, 0.15, n)), 0.0)
        opening = rng.random(n) < 0.02
        closing = (d <= 0) & (rng.random(n) < 0.2)
        d_new[opening] = -1e-8
        d_new[closing] = 1e-6 * rng.uniform(0.5, 2, closing.sum())
        ds = rng.normal(0, 0.03, (n, 2)) * np.abs(d_new)[:, None]
        ds[d_new <= 0] = 0.0
        batch.step(d_new, ds)
        for c in range(n):
            s[c] += ds[c]
            singles[c].step(d_new[c], s[c])
        d = np.maximum(d_new, 0.0)
        lengths = batch.history_lengths()
        assert batch.store.n_live == lengths.sum()
        assert np.all(lengths[d <= 0] == 0)
    # Same kernels on a shared store and on private stores: the same forces (the singles receive
    # total shifts and difference them, which changes rounding only).
    tol = 1e-12 * REAL["mu"] * batch.normal_force[:, None]
    assert np.all(np.abs(batch.tangential_force - np.array([sc.T for sc in singles])) <= tol)
    # Every live point belongs to exactly one contact's stack.
    nxt = batch.store.nxt
    seen = set()
    for c in range(n):
        i = int(batch.ist[c, S.I_HEAD])
        k = 0
        while i >= 0:
            assert i not in seen
            seen.add(i)
            i = int(nxt[i] >> 1)
            k += 1
        assert k == batch.ist[c, S.I_LEN]
    assert len(seen) == batch.store.n_live


# --- an independent reference: Jäger's rule evaluated by root bracketing on the full history -------

class ReferenceJaeger:
    """Jäger's rule (notes section 2) written directly, independently of the kernel's section-4
    procedure: the whole history is kept as (delta_i, S_i, T_i) points (no lean recovery, no
    merging, no cached top), S(delta) and T(delta) are interpolated on it, and the cut delta* is
    the root of the cone function h found by scipy's brentq instead of the closed form (5e)."""

    def __init__(self, prm):
        self.cN, self.kappa, self.mu = prm[S.P_CN], prm[S.P_KAPPA], prm[S.P_MU]
        self.d = [0.0]
        self.S = [np.zeros(2)]
        self.T = [np.zeros(2)]
        self.p = [np.zeros(2)]          # p[i]: slope of the segment ending at point i (p[0] unused)

    def N(self, d):
        return self.cN * d ** 1.5

    def _segment(self, d):
        return max(1, int(np.searchsorted(self.d, d, side="left")))

    def S_at(self, d):
        j = self._segment(d)
        return self.S[j - 1] + self.kappa * self.p[j] * (d - self.d[j - 1]) if d > 0 else np.zeros(2)

    def T_at(self, d):
        j = self._segment(d)
        return self.T[j - 1] + self.p[j] * (self.N(d) - self.N(self.d[j - 1])) if d > 0 else np.zeros(2)

    def _cut(self, d):
        """Keep the history up to overlap d (d <= top), with a point at d."""
        S_d, T_d = self.S_at(d), self.T_at(d)
        j = self._segment(d)
        p = self.p[j] if d > 0 else np.zeros(2)
        del self.d[j:], self.S[j:], self.T[j:], self.p[j:]
        if d > self.d[-1]:
            self.d.append(d)
            self.S.append(S_d)
            self.T.append(T_d)
            self.p.append(p)

    def _append(self, d, p):
        self.S.append(self.S[-1] + self.kappa * p * (d - self.d[-1]))
        self.T.append(self.T[-1] + p * (self.N(d) - self.N(self.d[-1])))
        self.d.append(d)
        self.p.append(p)

    def step(self, d_new, ds):
        from scipy.optimize import brentq
        target = self.S[-1] + ds
        if d_new < self.d[-1]:
            self._cut(d_new)
        km = self.kappa * self.mu
        tie = 1e-12 * km * d_new

        def h(d):
            return km * (d_new - d) - np.hypot(*(target - self.S_at(d)))

        top = self.d[-1]
        if h(top) >= -tie:
            if d_new > top * (1 + 1e-12):
                p = (target - self.S[-1]) / (self.kappa * (d_new - top))
                self._append(d_new, p * min(1.0, self.mu / max(np.hypot(*p), 1e-300)))
            else:
                self.S[-1] = target
            return self.T[-1]
        d_cut = 0.0 if h(0.0) <= 0 else brentq(h, 0.0, top, xtol=1e-15 * top, rtol=1e-15, maxiter=500)
        self._cut(d_cut)
        w = target - self.S_at(d_cut)
        self._append(d_new, self.mu * w / np.hypot(*w))
        return self.T[-1]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), scale=st.sampled_from([0.3, 1.0, 3.0]))
def test_property_matches_root_bracketing_reference_2d(seed, scale):
    rng = np.random.default_rng(seed)
    d, s = _random_history(rng, 100, scale=scale)
    law = _real_contact()
    ref = ReferenceJaeger(law.prm)
    s_prev = np.zeros(2)
    for i in range(len(d)):
        N, T = law.step(d[i], s[i])
        T_ref = ref.step(d[i], s[i] - s_prev)
        s_prev = s[i]
        # brentq locates delta* to ~1e-15 delta and T is Lipschitz in delta* (constant ~ mu N'),
        # so both are exact to rounding; measured agreement is ~3e-15 mu N.
        np.testing.assert_allclose(T, T_ref, rtol=0, atol=1e-12 * REAL["mu"] * N)
    assert law.ist[0, S.I_LEN] <= len(ref.d) - 1


@pytest.mark.parametrize("n_steps", [72, 720])
@pytest.mark.parametrize("radius_frac", [0.3, 0.6])
def test_circle_path_matches_reference(n_steps, radius_frac):
    """Constant overlap, shift out to a circle then twice round it: every step turns the slip
    direction by a small angle (slip after slip with A = 0, the case the notes single out)."""
    law = _real_contact()
    ref = ReferenceJaeger(law.prm)
    d = 2e-6
    r = radius_frac * law.prm[S.P_KAPPA] * REAL["mu"] * d
    law.step(d, [0.0, 0.0])
    ref.step(d, np.zeros(2))
    s_prev = np.zeros(2)
    path = [np.array([r, 0.0])] + [r * np.array([math.cos(a), math.sin(a)])
                                   for a in np.linspace(0, 4 * math.pi, n_steps + 1)[1:]]
    for s in path:
        N, T = law.step(d, s)
        T_ref = ref.step(d, s - s_prev)
        s_prev = s
        np.testing.assert_allclose(T, T_ref, rtol=0, atol=1e-12 * REAL["mu"] * N)   # measured <= 1.2e-14
        assert law.kind in ("elastic", "partial_slip")      # |s| < mu kappa delta: never gross sliding


# --- xi approximation: measured, and checked against the notes' claims ----------------------------

def _dem_like_paths(rng, n_contacts, n_steps, tang):
    """DEM-like movements: many small steps; the overlap follows a slow random trend with a small
    vibration on top, the shift increments wander in direction and have a size `tang` times the
    elastic cone kappa mu |Delta delta| (tang < 1: mostly elastic steps, long histories)."""
    t = np.arange(n_steps)
    kappa_mu = (2 - REAL["nu"]) / (2 * (1 - REAL["nu"])) * REAL["mu"]
    d = np.empty((n_contacts, n_steps))
    ds = np.empty((n_contacts, n_steps, 2))
    for c in range(n_contacts):
        d0 = 1e-6 * rng.uniform(0.5, 2.0)
        trend = np.cumsum(rng.normal(0, 3e-3, n_steps))
        d[c] = d0 * np.exp(trend + 0.02 * np.sin(2 * np.pi * t / rng.uniform(10, 50)))
        angle = np.cumsum(rng.normal(0, 0.1, n_steps)) + rng.uniform(0, 2 * np.pi)
        mag = tang * kappa_mu * np.abs(np.diff(d[c], prepend=d0)) * np.abs(rng.normal(1, 0.5, n_steps))
        ds[c, :, 0] = mag * np.cos(angle)
        ds[c, :, 1] = mag * np.sin(angle)
    return d, ds


@njit(_nrt=False)
def _drive_jaeger(prm, fs, ist, d, ds, pts, nxt, meta, T_out, N_out, len_sum):
    """The law alone on n contacts x m steps (the store must hold n m points): the dispatcher's
    energy bookkeeping does not change forces and would dominate the run time."""
    n, m = d.shape
    for k in range(m):
        for c in range(n):
            jaeger.step_outlined(prm, fs, ist, c, d[c, k], ds[c, k, 0], ds[c, k, 1], pts, nxt, meta)
            T_out[c, k, 0] = fs[c, S.F_TX]
            T_out[c, k, 1] = fs[c, S.F_TY]
            N_out[c, k] = fs[c, S.F_N]
            len_sum[k] += ist[c, S.I_LEN]


def _run_law(d, ds, xi):
    n, m = d.shape
    batch = ContactBatch("jaeger", n, store=HistoryStore(n * m + 1), **REAL, xi=xi)
    T = np.zeros((n, m, 2))
    N = np.zeros((n, m))
    len_sum = np.zeros(m, dtype=np.int64)
    st = batch.store
    _drive_jaeger(batch.prm, batch.fs, batch.ist, d, ds, st.pts, st.nxt, st.meta, T, N, len_sum)
    assert st.n_live == batch.history_lengths().sum()
    return T, N, len_sum.sum()


@pytest.mark.parametrize("tang", [0.3, 0.7])
def test_xi_shortens_histories_with_small_force_error(tang, capsys):
    rng = np.random.default_rng(11)
    n, n_steps = 40, 1500
    d, ds = _dem_like_paths(rng, n, n_steps, tang)
    T0, N, len_exact = _run_law(d, ds, 0.0)
    len_approx = {}
    err = {}
    for xi in (0.1, 0.2, 0.5):
        T, _, len_approx[xi] = _run_law(d, ds, xi)
        err[xi] = float(np.max(np.hypot(*(T - T0).T).T / (REAL["mu"] * N)))
        assert np.all(np.hypot(*T.T).T <= REAL["mu"] * N * (1 + BOUND_TOL))
    with capsys.disabled():
        print(f"\n[xi] tang={tang}: mean exact history length {len_exact / (n * n_steps):.2f}")
        for xi in len_approx:
            print(f"[xi] tang={tang} xi={xi}: mean length ratio {len_approx[xi] / len_exact:.3f}, "
                  f"max |T - T_exact| = {err[xi]:.2e} mu N")
    for xi in len_approx:
        assert len_approx[xi] < len_exact
        # The notes report errors <= 1.1e-2 mu N at xi = 0.5 on such paths; allow a margin.
        assert err[xi] <= 0.05
    assert len_approx[0.5] <= len_approx[0.2] <= len_approx[0.1]


@pytest.mark.parametrize("gap, slip", [(0.0, True), (1e-13, True), (1e-10, False), (1e-3, False)])
def test_slope_within_eps_p_of_the_cone_is_a_slip_segment(gap, slip):
    """Notes section 5: slip segments carry A = 0 exactly. A new segment whose slope is within
    EPS_P = 1e-12 (relative) of mu is stored as a slip segment of slope exactly mu; one further
    from the cone stays elastic with its own slope."""
    from graindem.contact.store import link_slip

    sc = SingleContact("jaeger", R1=2.0, R2=2.0, E=1.5, nu=0.0, mu=0.5)
    sc.step(4.0, [0.6 * 2.0 * (1.0 - gap), 0.8 * 2.0 * (1.0 - gap)])   # kappa mu delta = 2
    head = int(sc.ist[0, 0])
    assert bool(link_slip(sc.store.nxt, head)) is slip
    p = sc.store.pts[head, 2:4]
    expected = 0.5 if slip else 0.5 * (1.0 - gap)
    assert np.hypot(*p) == pytest.approx(expected, rel=1e-15)
