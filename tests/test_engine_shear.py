"""A periodic cell that shears: Simulation.control_shear (velocity gradient L_xy, L_xz, L_yz).

References: the closed-form affine motion of free particles (x + gamma y, wrapped to the sheared
lattice), a brute-force minimum-image neighbour search, the hand-derived shear stiffness of a
simple-cubic lattice, the energy balance, and a restarted run repeating the uninterrupted one.
"""

import itertools

import numpy as np
import pytest

from graindem.engine import checkpoint
from graindem.core.layout import ICTL_NPAIRS
from graindem.engine.prepare import prepare_packing
from graindem.engine.simulation import Simulation

E, NU, RHO = 70e9, 0.25, 2500.0


def _is_lattice_vector(d, h, tol):
    """Rows of d are integer combinations of the cell vectors (rows of h), to tol in fractions."""
    frac = np.linalg.solve(h.T, d.T).T
    return np.all(np.abs(frac - np.rint(frac)) < tol), frac


def test_free_particles_follow_the_affine_shear_flow_and_cross_to_the_sheared_image():
    """No contacts: x(t) = x0 + L (x - lo) integrated step by step. With a velocity v_y relative to
    the flow the discrete drift gives x_N = x0 + g dt sum_n y_n = x0 + g (N dt y0 + v dt^2 N (N-1)/2),
    y_N = y0 + N v dt (unwrapped); the engine's (wrapped) position must differ from it by a whole
    lattice vector of the current, tilted and possibly flipped, cell."""
    L = 0.1
    r = 1e-3
    sim = Simulation(law="mindlin", E=E, nu=NU, mu=0.5, density=RHO, dt=1e-4, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    pos = np.array([[0.05, 0.01, 0.05], [0.02, 0.09, 0.03], [0.08, 0.05, 0.07], [0.01, 0.095, 0.01]])
    vel = np.zeros_like(pos)
    vel[1, 1] = 5.0   # 20 mm in the run: crosses the upper y face (the sheared one)
    vel[3, 1] = 0.5
    vel[0, 1] = -5.0  # crosses the lower y face
    sim.add_particles(pos, r, velocities=vel)
    g = 400.0  # 1/s: 0.04 shear strain per step of 1e-4 s, so the tilt passes L/2 and flips
    sim.control_shear("xy", strain_rate=g)
    steps = 40
    sim.run(steps)
    dt = sim.dt
    N = steps
    exp = pos.copy()
    exp[:, 0] += g * (N * dt * pos[:, 1] + vel[:, 1] * dt * dt * N * (N - 1) / 2)
    exp[:, 1] += N * vel[:, 1] * dt
    h = sim.cell_matrix
    assert sim.shear_strain[0] == pytest.approx(g * N * dt, rel=1e-12)
    # the tilt was flipped back into [-L/2, L/2] and is the accumulated shear modulo the cell length
    assert abs(h[1, 0]) <= 0.5 * L * (1 + 1e-12)
    assert (h[1, 0] - g * N * dt * L) / L == pytest.approx(np.rint((h[1, 0] - g * N * dt * L) / L), abs=1e-9)
    ok, frac = _is_lattice_vector(sim.pos[np.argsort(sim.ids)] - exp, h, 1e-9)
    assert ok, frac
    # both crossing particles really were mapped through the y faces
    assert abs(np.rint(frac[1, 1])) >= 1 and abs(np.rint(frac[0, 1])) >= 1
    np.testing.assert_array_equal(sim.vel[np.argsort(sim.ids)], vel)  # no contacts: no force


def _brute_pairs(pos, radius, h, rc_extra):
    """All pairs within r_i + r_j + rc_extra over the 27 nearest images (the reference search)."""
    out = set()
    n = pos.shape[0]
    shifts = np.array(list(itertools.product((-1, 0, 1), repeat=3))) @ h
    for i in range(n):
        d = pos[i + 1:] - pos[i]
        dd = np.min(np.linalg.norm(d[:, None, :] + shifts[None, :, :], axis=2), axis=1)
        for k in np.flatnonzero(dd < radius[i] + radius[i + 1:] + rc_extra):
            out.add((i, i + 1 + int(k)))
    return out


@pytest.mark.parametrize("rates", [(3.0, 0.0, 0.0), (2.0, -1.5, 2.5)])
def test_neighbour_list_of_a_sheared_cell_matches_brute_force_minimum_image(rates):
    """A gas of colliding spheres in a cell sheared in one and in all three planes, through
    several tilt flips: after each rebuild the engine's pair list is exactly the set of pairs
    within r_i + r_j + skin over the 27 nearest images."""
    rng = np.random.default_rng(5)
    L = 0.3
    r = 0.01
    pts = []
    while len(pts) < 500:
        p = rng.uniform(0, L, 3)
        if all(np.linalg.norm((p - q) - L * np.rint((p - q) / L)) > 2.2 * r for q in pts):
            pts.append(p)
    pos = np.array(pts)
    sim = Simulation(law="mindlin", E=1e7, nu=NU, mu=0.5, density=RHO)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, r, velocities=rng.normal(0, 0.5, pos.shape))
    sim.setup()
    for plane, rate in zip(Simulation.SHEAR_PLANES, rates):
        sim.control_shear(plane, strain_rate=rate / sim.dt / 2000)  # 'rate' tilts per 2000 steps
    checked = 0
    for _ in range(6):
        sim.run(800)
        sim._rebuild()
        h = sim.cell_matrix
        assert abs(h[1, 0]) <= 0.5 * L + 1e-12 and abs(h[2, 0]) <= 0.5 * L + 1e-12 and abs(h[2, 1]) <= 0.5 * L + 1e-12
        m = int(sim.ictl[ICTL_NPAIRS])
        got = {(min(a, b), max(a, b)) for a, b in zip(sim.pi[:m].tolist(), sim.pj[:m].tolist())}
        ref = _brute_pairs(sim.pos, sim.radius, h, sim.skin)
        assert got == ref
        checked += len(ref)
    assert checked > 100
    assert np.max(np.abs(sim.shear_strain)) > 1.0  # the tilts flipped at least once


def _cubic_lattice(n, d, r, **kw):
    sim = Simulation(law="linear", E=E, nu=NU, density=RHO, **kw)
    g = (np.arange(n) + 0.5) * d
    pos = np.array(list(itertools.product(g, g, g)))
    sim.set_box((0, 0, 0), (n * d, n * d, n * d), periodic=(True, True, True))
    sim.add_particles(pos, r)
    return sim


def test_simple_cubic_lattice_shear_stress_matches_the_closed_form():
    """Simple-cubic lattice, spacing d = 2r - delta0, simple shear gamma (u_x = gamma y), linear
    tangential spring k_t. Hand derivation: every sphere is a centre of symmetry, so the centres
    follow the affine flow and all spheres turn by the same angle theta about z. Contact slips:
    y-neighbours d (gamma + theta) along x, x-neighbours -d theta along y, z-neighbours none. The
    torque balance 4 (d/2)^2 k_t [(gamma + theta) + theta] = 0 gives theta = -gamma/2 (the spheres
    turn with the vorticity), so both families carry a tangential force k_t d gamma / 2. Per sphere
    one contact of each family and a volume d^3: the tangential part of sigma_xy (sum f_x l_y / V,
    compression positive, f on j) is -k_t gamma / (2 d), the same for sigma_yx. The y-contacts' normal
    force N0 (Hertz at delta0) tilts with the branch, adding + N0 gamma / d^2 to both. Hence
    sigma_xy = sigma_yx = (N0 / d^2 - k_t / (2 d)) gamma, to first order in gamma (the next term is
    gamma^2 / 2 relative, 1e-8 here)."""
    r = 1e-3
    delta0 = 1e-6
    d = 2 * r - delta0
    kt = 1.5e6
    sim = _cubic_lattice(4, d, r, mu=0.5, kt_linear=kt, local_damping=0.3)
    sim.setup()
    estar = E / (2 * (1 - NU ** 2))
    N0 = 4 / 3 * estar * np.sqrt(r / 2) * delta0 ** 1.5
    G_ref = N0 / d ** 2 - kt / (2 * d)
    gamma_end = 1e-4  # tangential force k_t d gamma / 2 = 0.15 N against mu N0 = 0.55 N: no sliding
    steps = 4000
    sim.control_shear("xy", strain_rate=gamma_end / (steps * sim.dt))
    ratios = []
    for _ in range(4):
        sim.run(steps // 4)
        gamma = sim.shear_strain[0]
        sig = sim.stress()
        ratios.append((sig[0, 1] / (G_ref * gamma), sig[1, 0] / (G_ref * gamma)))
    sim.control_shear("xy", strain_rate=0.0)
    sim.run(3000)
    sig = sim.stress()
    gamma = sim.shear_strain[0]
    assert gamma == pytest.approx(gamma_end, rel=1e-9)
    m = sim.measure()
    assert m["n_contacts"] == 3 * 64 and m["sliding_fraction"] == 0.0
    # at rest after the ramp the closed form holds to the residual of the damped relaxation and the
    # O(gamma) terms dropped (measured 1e-6): 1e-4 also resolves the N0 term (7e-4 of the total)
    assert sig[0, 1] == pytest.approx(G_ref * gamma, rel=1e-4)
    assert sig[1, 0] == pytest.approx(G_ref * gamma, rel=1e-4)
    # during the slow ramp the stress follows the same line (rotations lag by a fraction of a per cent)
    np.testing.assert_allclose(np.array(ratios), 1.0, rtol=0.01)
    # the other shear components stay zero
    assert abs(sig[0, 2]) + abs(sig[1, 2]) < 1e-6 * abs(sig[0, 1])
    # the spheres turned by -gamma / 2 about z (the vorticity)
    turn = 2 * np.arctan2(sim.quat[:, 3], sim.quat[:, 0])
    np.testing.assert_allclose(turn, -gamma / 2, rtol=0.01)


@pytest.fixture(scope="module")
def packing():
    return prepare_packing(120, radius=1e-4, pressure=50e3, law="mindlin", seed=3, max_steps=150000)


def test_energy_balance_closes_under_simple_shear(packing):
    """Work of the shearing cell -V sigma:L dt (all nine components, trapezoid rule) = change of
    kinetic + normal and tangential elastic energy + frictional, viscous and local-damping
    dissipation, each counted by its own code. Constant-volume simple shear (diagonal rates 0), so
    all the work goes through the off-diagonal sigma_xy L_xy term."""
    arrays, meta = packing.state_dict()
    sim = Simulation.from_state(arrays, meta)
    sim.set_friction(0.5)
    sim.set_energy_accounting(True)
    sim.set_local_damping(0.05)
    rate = 1e-5 / sim.dt
    sim.control_shear("xy", strain_rate=rate)
    for k in range(3):
        sim.control_axis(k, strain_rate=0.0)

    def budget(m):
        return (m["kinetic_energy"] + m["elastic_normal_energy"] + m["tangential_energy"]
                + m["frictional_dissipation"] + m["viscous_dissipation"] + m["local_damping_dissipation"])

    m0 = sim.measure()
    sim.run(2000)
    m1 = sim.measure()
    work = m1["boundary_work"] - m0["boundary_work"]
    assert m1["shear_strain"][0] == pytest.approx(0.02, rel=1e-9)
    assert work > 0.0
    assert m1["frictional_dissipation"] > m0["frictional_dissipation"] + 0.1 * work  # friction really worked
    assert m1["sliding_fraction"] > 0.0
    # sums of per-step products with one-step offsets between the counters: 1 % of the work
    # (measured 3e-4)
    assert budget(m1) - budget(m0) == pytest.approx(work, rel=0.01)


def test_restart_under_shear_continues_bit_for_bit(packing, tmp_path):
    arrays, meta = packing.state_dict()
    base = Simulation.from_state(arrays, meta)
    base.set_friction(0.5)
    rate = 2e-4 / base.dt  # fast enough that the tilt flips within the run
    base.control_shear("xy", strain_rate=rate)
    base.control_shear("yz", strain_rate=-0.5 * rate)
    base.control_axis(0, stress=50e3, gain=50e-5 / base.dt, max_rate=1e-4 / base.dt)
    base.run(1500)
    path = checkpoint.save(base, tmp_path / "ck.h5")
    base.run(2000)
    again, _ = checkpoint.load(path)
    again.run(2000)
    assert abs(base.shear_strain[0]) > 0.6  # past one flip
    for name in Simulation.ARRAYS:
        a, b = getattr(base, name), getattr(again, name)
        if name in ("pi", "pj", "pfs", "pist", "pcq"):
            m = int(base.ictl[ICTL_NPAIRS])
            a, b = a[:m], b[:m]
        assert np.array_equal(a, b), name
    assert base.store.n_live == again.store.n_live


def test_bad_shear_input_is_rejected_with_the_cause():
    sim = Simulation()
    sim.set_box((0, 0, 0), (1, 1, 1), periodic=(True, True, False))
    with pytest.raises(ValueError, match="plane must be one of"):
        sim.control_shear("yx", strain_rate=1.0)
    with pytest.raises(ValueError, match="plane must be one of"):
        sim.control_shear("q", strain_rate=1.0)
    with pytest.raises(ValueError, match="strain_rate must be a finite number"):
        sim.control_shear("xy", strain_rate=float("nan"))
    with pytest.raises(ValueError, match="strain_rate must be a finite number"):
        sim.control_shear("xy", strain_rate="fast")
    with pytest.raises(ValueError, match="axis z is not periodic"):
        sim.control_shear("xz", strain_rate=1.0)
    with pytest.raises(ValueError, match="axis z is not periodic"):
        sim.control_shear("yz", strain_rate=1.0)
    sim.control_shear("xy", strain_rate=1.0)  # both axes periodic: accepted


def test_a_cell_too_thin_for_the_largest_tilt_is_rejected():
    """A box just above twice the cutoff (accepted orthogonal) shrinks below it at a
    tilt of half a cell length (height L / sqrt(1.25) for xy): rejected before the run, naming the axis."""
    r = 1e-3
    cutoff = 2 * r + 0.2 * r  # default skin: 0.2 r_max
    L = 2.1 * cutoff
    sim = Simulation()
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles([[L / 2, L / 2, L / 2]], r)
    sim.control_shear("xy", strain_rate=1.0)
    with pytest.raises(ValueError, match="height along axis 0 .* must exceed twice the neighbour cutoff"):
        sim.setup()


def test_scenario_key_shear_rate_is_checked():
    from graindem.io.scenario import validate_scenario
    cfg = validate_scenario({"loading": {"shear_rate": [2.0, 0, -1.5]}})
    assert cfg["loading"]["shear_rate"] == [2.0, 0.0, -1.5]
    assert validate_scenario({})["loading"]["shear_rate"] is None
    with pytest.raises(ValueError, match="loading.shear_rate"):
        validate_scenario({"loading": {"shear_rate": [1.0, 0.0]}})
    with pytest.raises(ValueError, match=r"loading.shear_rate\[1\]"):
        validate_scenario({"loading": {"shear_rate": [1.0, float("nan"), 0.0]}})


def test_scenario_shear_rate_reaches_the_engine_and_its_checkpoint(tmp_path):
    """`graindem run` with loading.shear_rate: the biaxial test shears the cell at that rate from
    its first step; the final checkpoint holds the rate and the strain rate * steps * dt."""
    from graindem.engine.cli import run_scenario
    from graindem.io.scenario import validate_scenario
    config = validate_scenario({
        "simulation": {"scenario": "biaxial", "steps": 3000, "output_interval": 100, "seed": 4},
        "contact": {"law": "jaeger"}, "particles": {"n": 100, "radius_mean": 1.5e-4},
        "loading": {"kind": "biaxial", "total_strain": 0.015, "preparation_mu": 0.1, "shear_rate": [40.0, 0.0, 0.0]},
        "material": {"damping": 0.1}, "output": {"vtk": False, "plots": False}})
    run_scenario(config, tmp_path, steps=200, quiet=True)
    sim, _ = checkpoint.load(tmp_path / "checkpoint.h5")
    np.testing.assert_array_equal(sim.shear, [40.0, 0.0, 0.0])
    assert sim.shear_strain[0] == pytest.approx(40.0 * 200 * sim.dt, rel=1e-9)
    assert sim.cell_matrix[1, 0] != 0.0
