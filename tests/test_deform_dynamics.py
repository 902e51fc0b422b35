"""Modal dynamics against closed forms: free and damped oscillators, a 2-DOF eigenproblem by hand,
the leapfrog stability limit, and generalized forces/torques against virtual work."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from graindem.deform.dynamics import (ModalOscillator, damping_matrix, damping_ratio,
                                      force_and_torque, generalized_forces, modal_critical_step,
                                      modal_frequencies, rigid_critical_step)
from graindem.deform.modes import AnalyticMode, BeamBendingMode
from graindem.deform.response import APPENDIX_B_EPS, APPENDIX_B_FORCE, LinearResponse, TabulatedForce


def zero_crossings(t, x):
    s = np.sign(x)
    idx = np.nonzero(s[:-1] * s[1:] < 0)[0]
    return t[idx] - x[idx] * (t[idx + 1] - t[idx]) / (x[idx + 1] - x[idx])


def run(osc, dt, n, force=None):
    eps = np.empty(n)
    energy = np.empty(n)
    for i in range(n):
        osc.step(dt, force)
        eps[i] = osc.eps[0]
        energy[i] = osc.mechanical_energy()
    return eps, energy


def test_free_oscillator_frequency_and_energy():
    # the seed's Table 1 modal mass and stiffness: ω = √(k/m) = 1
    m, k, dt = 1e4, 1e4, 0.02
    osc = ModalOscillator([[m]], LinearResponse([[k]]), eps0=[1.0])
    eps, energy = run(osc, dt, 40_000)                    # ~127 periods
    t = dt * np.arange(1, eps.size + 1)
    crossings = zero_crossings(t, eps)
    period = 2 * np.mean(np.diff(crossings))
    omega = np.sqrt(k / m)
    # leapfrog's discrete frequency 2/Δt·asin(ωΔt/2) differs from ω by (ωΔt)²/24 = 1.7e-5
    assert 2 * np.pi / period == pytest.approx(2 / dt * np.arcsin(omega * dt / 2), rel=2e-6)
    assert 2 * np.pi / period == pytest.approx(omega, rel=3e-5)
    # symplectic: the energy error stays bounded at O((ωΔt)²) with no drift
    e0 = 0.5 * k
    assert np.max(np.abs(energy / e0 - 1)) < (omega * dt) ** 2
    assert abs(np.mean(energy[-5000:]) - np.mean(energy[:5000])) / e0 < 1e-6


def test_damped_oscillator_decay_and_frequency():
    m, k, zeta, dt = 2.0, 50.0, 0.05, 1e-3
    omega = np.sqrt(k / m)
    c = damping_matrix([[m]], [[k]], ratios=zeta)
    assert damping_ratio(m, k, c) == pytest.approx(zeta)
    osc = ModalOscillator([[m]], LinearResponse([[k]]), damping=c, eps0=[1.0])
    eps, _ = run(osc, dt, 20_000)
    t = dt * np.arange(1, eps.size + 1)
    crossings = zero_crossings(t, eps)
    omega_d = np.pi / np.mean(np.diff(crossings))
    assert omega_d == pytest.approx(omega * np.sqrt(1 - zeta ** 2), rel=1e-4)
    # envelope: successive maxima decay by exp(−ζω T_d)
    peaks = np.array([np.max(eps[(t > a) & (t < b)]) for a, b in zip(crossings[1:-1:2], crossings[3::2])])
    ratio = peaks[1:] / peaks[:-1]
    assert np.mean(ratio) == pytest.approx(np.exp(-zeta * omega * 2 * np.pi / omega_d), rel=1e-3)


def test_critically_damped_step_response_table1():
    # Table 1: k = m = 1e4, c = 2e4 (ζ = 1). Constant force F from rest:
    # ε(t) = F/k [1 − (1 + ωt) e^{−ωt}], no overshoot.
    m = k = 1e4
    c = 2e4
    force = 3e3
    osc = ModalOscillator([[m]], LinearResponse([[k]]), damping=[[c]])
    dt = 1e-3
    eps, _ = run(osc, dt, 15_000, force=[force])
    t = dt * np.arange(1, eps.size + 1)
    exact = force / k * (1 - (1 + t) * np.exp(-t))
    assert np.max(np.abs(eps - exact)) < 2e-3 * force / k      # O(Δt) start-up offset of leapfrog
    assert eps.max() <= force / k * (1 + 1e-9)


def test_two_mode_frequencies_by_hand():
    mass = np.array([[2.0, 0.3], [0.3, 1.0]])
    stiff = np.array([[40.0, -5.0], [-5.0, 20.0]])
    # det(K − λM) = 0: a λ² + b λ + c = 0 with a = det M, b = −(K11 M22 + K22 M11 − 2 K12 M12), c = det K
    a = np.linalg.det(mass)
    b = -(stiff[0, 0] * mass[1, 1] + stiff[1, 1] * mass[0, 0] - 2 * stiff[0, 1] * mass[0, 1])
    cc = np.linalg.det(stiff)
    lam = np.sort(np.roots([a, b, cc]).real)
    assert np.allclose(modal_frequencies(mass, stiff), np.sqrt(lam), rtol=1e-12)
    # with modal damping ratios the damping is diagonal in the eigenbasis and each mode gets its ζ
    c = damping_matrix(mass, stiff, ratios=[0.1, 0.2])
    import scipy.linalg
    w2, psi = scipy.linalg.eigh(stiff, mass)
    cm = psi.T @ c @ psi
    assert np.allclose(np.diag(cm), 2 * np.array([0.1, 0.2]) * np.sqrt(w2))
    assert abs(cm[0, 1]) < 1e-12


def test_leapfrog_stability_limit_matches_critical_step():
    # leapfrog is stable for ωΔt < 2: β_d = 2 is the limit of modal_critical_step
    m, k = 3.0, 12.0
    dt_limit = modal_critical_step([[m]], [[k]], beta=2.0)
    assert dt_limit == pytest.approx(2.0 / np.sqrt(k / m))
    for factor, stable in ((0.98, True), (1.02, False)):
        osc = ModalOscillator([[m]], LinearResponse([[k]]), eps0=[1.0])
        eps, _ = run(osc, factor * dt_limit, 200)
        assert (np.max(np.abs(eps)) < 100) == stable
    assert rigid_critical_step(4.0, np.inf, 16.0, beta=0.5) == pytest.approx(0.5 * np.sqrt(4.0 / 16.0))
    assert rigid_critical_step(4.0, 4.0, 2.0, beta=1.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="contact_stiffness"):
        rigid_critical_step(1.0, 1.0, 0.0)


def test_nonlinear_table_oscillator_conserves_energy():
    # the Appendix B table as a conservative modal spring: energy (its exact integral) is conserved
    table = TabulatedForce(APPENDIX_B_EPS, APPENDIX_B_FORCE)
    m = 1.0
    dt = modal_critical_step([[m]], table.max_tangent(), beta=0.05)
    osc = ModalOscillator([[m]], table, eps0=[0.15])
    _, energy = run(osc, dt, 20_000)
    e0 = table.energy([0.15])
    assert np.max(np.abs(energy / e0 - 1)) < 5e-3


def test_generalized_forces_and_torque_from_virtual_work():
    # W = Σ f_k · x_k with x_k = c + R (X_k + Σ ε_α Φ_α(X_k)): F_εα = ∂W/∂ε_α at fixed forces, and
    # τ·n = ∂W/∂θ for a rotation θ about n applied in the world frame, at the deformed state.
    rng = np.random.default_rng(5)
    nodes = rng.uniform(-1, 1, size=(40, 3))
    forces = rng.normal(size=(40, 3))
    modes = [BeamBendingMode(2.5), AnalyticMode(lambda p: np.stack([p[:, 1] ** 2, p[:, 0] * p[:, 2],
                                                                     np.sin(p[:, 0])], axis=1))]
    values = np.stack([m.displacement(nodes) for m in modes])
    rot = Rotation.from_rotvec([0.3, -0.7, 0.4])
    eps = np.array([0.05, -0.02])
    centre = np.array([1.0, 2.0, 3.0])

    def work(eps_, rot_):
        x = centre + rot_.apply(nodes + np.einsum("a,akj->kj", eps_, values))
        return np.sum(forces * x)
    h = 1e-6
    f_eps = generalized_forces(values, forces, rot.as_matrix())
    for a in range(2):
        d = np.zeros(2)
        d[a] = h
        assert f_eps[a] == pytest.approx((work(eps + d, rot) - work(eps - d, rot)) / (2 * h), rel=1e-7)
    u = np.einsum("a,akj->kj", eps, values)
    total, torque = force_and_torque(nodes, u, rot.as_matrix(), forces)
    assert np.allclose(total, forces.sum(axis=0))
    for n in np.eye(3):
        plus = Rotation.from_rotvec(h * n) * rot
        minus = Rotation.from_rotvec(-h * n) * rot
        assert torque @ n == pytest.approx((work(eps, plus) - work(eps, minus)) / (2 * h), rel=1e-6)
    # the rigid (undeformed) lever arm gives a different torque: deformation matters
    _, torque_rigid = force_and_torque(nodes, np.zeros_like(u), rot.as_matrix(), forces)
    assert not np.allclose(torque_rigid, torque, rtol=1e-3)


def test_tangent_damping_equals_constant_damping_for_a_linear_table():
    # C(ε) = β dF/dε: with a straight-line table the tangent is the constant k everywhere, so the
    # state-dependent damping must reproduce the constant C = βk run step for step (the constant
    # damped leapfrog is checked against the closed form above)
    from graindem.deform.scenes import compaction_sphere
    from graindem.deform.validation import deformable_simulation

    tpl = compaction_sphere(n_nodes=50)
    m, k, beta = 2.0, 50.0, 0.02
    table = TabulatedForce([0.0, 0.5, 1.0], [0.0, 0.5 * k, k])
    runs = []
    for kwargs in ({"modal_damping": [[beta * k]]}, {"tangent_damping": beta}):
        sim = deformable_simulation(tpl, [[0.0, 0.0, 0.0]], [[m]], table, dt=1e-3, eps=[0.3], **kwargs)
        eps = []
        sim.run(3000, callback=lambda s: eps.append(s.deformable.eps[0]), every=10)
        runs.append(np.array(eps))
    assert np.abs(runs[0]).max() > 0.1        # it oscillates (ζ = βω/2 = 0.05)
    assert np.allclose(runs[0], runs[1], rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match="tangent_damping"):
        deformable_simulation(tpl, [[0.0, 0.0, 0.0]], [[m]], LinearResponse([[k]]), tangent_damping=beta)
    with pytest.raises(ValueError, match="tangent_damping"):
        deformable_simulation(tpl, [[0.0, 0.0, 0.0]], [[m]], table, tangent_damping=-1.0)
