"""The oblique-impact reference (verification.oblique_impact) against closed forms: Hertz's impact,
Cattaneo-Mindlin and Mindlin-Deresiewicz at constant overlap, proportional loading, Maw's
gross-sliding line, and its convergence in its own resolution."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from graindem.contact import closed_forms as C
from graindem.verification import oblique_impact as O

NU = 0.3
KAPPA = (2.0 - NU) / (2.0 * (1.0 - NU))
CHI = O.chi_of(KAPPA)


def test_normal_motion_matches_the_hertz_ode():
    def rhs(t, y):
        return [y[1], -1.25 * max(y[0], 0.0) ** 1.5]

    def leave(t, y):
        return y[0] if t > 1e-3 else 1.0
    leave.terminal = True
    leave.direction = -1
    sol = solve_ivp(rhs, (0.0, 10.0), [0.0, 1.0], events=leave, rtol=1e-12, atol=1e-14, dense_output=True)
    t_end = sol.t_events[0][0]
    assert abs(t_end - O.DURATION) < 1e-8
    tau = np.linspace(0.0, O.DURATION, 41)
    assert np.max(np.abs(sol.sol(tau)[0] - O.normal_overlap(tau))) < 1e-8
    assert abs(float(O.normal_overlap(O.HALF_DURATION)) - 1.0) < 1e-14


def test_hertz_closed_forms_conserve_energy_and_momentum():
    m, E, R, v = 0.0117, 25e9, 5e-3, 7.0
    h = O.hertz_impact(m, E, R, v)
    # energy: 1/2 m v^2 = 2/5 N_max delta_max
    assert abs(0.4 * h["peak_force"] * h["peak_overlap"] / (0.5 * m * v * v) - 1.0) < 1e-12
    # momentum: integral of N dt = 2 m v (quadrature over the closed-form overlap history)
    t = np.linspace(0.0, h["duration"], 20001)
    delta = h["peak_overlap"] * O.normal_overlap(t * v / h["peak_overlap"])
    N = 4.0 / 3.0 * E * math.sqrt(R) * delta ** 1.5
    assert abs(np.trapezoid(N, t) / (2.0 * m * v) - 1.0) < 1e-6


@pytest.mark.parametrize("n_springs, tol", [(500, 5e-6), (2000, 5e-7)])
def test_mindlin_loading_and_unloading_at_constant_overlap(n_springs, tol):
    # normalised: delta = 1, mu kappa delta = 1, N = 1 (x = 1), so f = T/(mu N)
    s_up = np.linspace(0.0, 0.7, 141)
    s_down = np.linspace(0.7, -0.7, 281)[1:]
    s_on = np.linspace(-0.7, -0.9, 41)[1:]
    path = np.concatenate([s_up, s_down, s_on])
    f = O.force_along_path(np.ones(path.size), path, n_springs)
    up = C.monotonic(s_up, 1.0, 1.0, 1.0, 1.0)
    down = C.from_turning_point(s_down, 0.7, up[-1], -1, 1.0, 1.0, 1.0, 1.0)
    # past the mirror turning point (-0.7, -T*) the memory of +0.7 is erased: the virgin curve
    on = C.monotonic(s_on, 1.0, 1.0, 1.0, 1.0)
    assert np.max(np.abs(f - np.concatenate([up, down, on]))) < tol


def test_proportional_loading_sticks_everywhere():
    x = np.linspace(0.0, 1.0, 201)[1:]
    for c in (0.3, -0.95):
        f = O.force_along_path(x, c * x, 2000)
        assert np.max(np.abs(f - c * x ** 1.5)) < 2e-7


def test_normal_unloading_at_fixed_shift_is_a_slip():
    # jaeger-algorithm.md 8.2-8.3 (R* = 1, E* = 3/4, mu = 1/2, kappa = 1, N = delta^1.5): (4, 0) ->
    # (4, 1) -> (3, 1) gives T = (3^1.5 - 1)/2 by hand; normalised by delta_max = 4 (x = delta/4,
    # sigma = s/(mu kappa 4), f = T/(mu N(4)) = T/4). Truncation alone would give 1.1838626/4.
    f = O.force_along_path(np.array([1.0, 1.0, 0.75]), np.array([0.0, 0.5, 0.5]), 4000)
    assert abs(f[1] - 0.5 * (8.0 - 2.0 ** 1.5) / 4.0) < 1e-7
    assert abs(f[2] - 0.5 * (3.0 ** 1.5 - 1.0) / 4.0) < 1e-7


def test_gross_sliding_line_and_its_onset():
    for psi1 in (4.0 * CHI - 1.0 + 0.02, 8.0, 15.0):
        psi2, err = O.converged_psi2(psi1, CHI, 1000, 500)
        assert abs(psi2 - O.gross_sliding_psi2(psi1, CHI)) < 1e-4
        assert err < 1e-4
    below = O.oblique_impact(4.0 * CHI - 1.5, CHI, 1000, 500)["psi2"]
    assert below - O.gross_sliding_psi2(4.0 * CHI - 1.5, CHI) > 0.02
    r = O.oblique_impact(10.0, CHI, 1000, 500)
    assert abs(r["impulse_over_mu_normal"] - 1.0) < 1e-3


def test_reversal_odd_symmetry_and_convergence():
    psi = {}
    for n in (250, 500, 1000, 2000):
        psi[n] = O.oblique_impact(2.0, CHI, 2 * n, n)["psi2"]
    # Maw's reversal: the contact point leaves moving backwards at intermediate angles
    assert psi[2000] < -0.5
    d = [abs(psi[2 * n] - psi[n]) for n in (250, 500, 1000)]
    assert d[2] < 5e-5 and d[2] < d[0]
    assert abs(O.oblique_impact(-2.0, CHI, 4000, 2000)["psi2"] + psi[2000]) < 1e-12


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="chi"):
        O.oblique_impact(1.0, 0.0)
    with pytest.raises(ValueError, match="n_springs"):
        O.oblique_impact(1.0, CHI, 100, 1)
    with pytest.raises(ValueError, match="nu1"):
        O.effective_moduli(1e9, 0.6)


def test_effective_moduli_of_one_material_give_mindlins_kappa():
    E = 70e9
    estar, gstar, kappa = O.effective_moduli(E, NU, E, NU)
    assert abs(estar - E / (2.0 * (1.0 - NU ** 2))) < 1e-6 * estar
    assert abs(kappa - KAPPA) < 1e-14
    assert abs(O.effective_moduli(E, NU)[2] - KAPPA) < 1e-14
