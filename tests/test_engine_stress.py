"""Boundaries and measurements: the stress servo of the periodic cell, rigid walls, restarts.

References: static equilibrium makes the Love-Weber stress of the contact forces equal to the
boundary tractions (the servo's target for a periodic cell; wall force / area for walls), and a
restarted run must repeat the uninterrupted one bit for bit.
"""

import numpy as np
import pytest

from graindem.engine import checkpoint
from graindem.engine.prepare import prepare_packing
from graindem.engine.simulation import Simulation


@pytest.fixture(scope="module")
def packing():
    return prepare_packing(120, radius=1e-4, pressure=50e3, law="mindlin", seed=3, max_steps=150000)


def test_isotropic_servo_packing_has_the_target_love_weber_stress(packing):
    m = packing.measure()
    sig = m["stress"]
    # The servo acts on the kernel's per-step stress sum (damping forces included); `measure`
    # recomputes Love-Weber from the stored elastic contact forces and the geometry. At rest both
    # are the boundary stress: diagonal within 1 % of the target (servo tolerance 0.5 %).
    np.testing.assert_allclose(np.diag(sig), 50e3, rtol=0.01)
    assert m["pressure"] == pytest.approx(50e3, rel=0.005)
    # symmetric to the residual unbalanced torque
    assert np.max(np.abs(sig - sig.T)) < 1e-3 * 50e3
    assert m["coordination"] > 4.0 and 0.5 < m["void_ratio"] < 0.8
    assert m["unbalanced_force_ratio"] < 1e-3


def test_wall_forces_equal_love_weber_stress_times_area_and_the_hertz_column_solution():
    """Columns of 3 spheres between a floor and a lid, periodic (and not touching) sideways.

    Hand derivation: every contact of a column carries the same force F; the two sphere-sphere
    contacts (R* = r/2) and the two sphere-wall contacts (R* = r) overlap (F / C)^(2/3) each, and
    the overlaps add up to the lid's travel D. So sigma_zz = 9 F / A with F from that equation.
    """
    from scipy.optimize import brentq
    r = 1e-3
    E, nu = 70e9, 0.25
    estar = E / (2 * (1 - nu * nu))
    a = 2.02 * r
    nx = 3
    pos = np.array([[(ix + 0.5) * a, (iy + 0.5) * a, r + 2 * r * iz]
                    for ix in range(nx) for iy in range(nx) for iz in range(3)])
    sim = Simulation(law="mindlin", E=E, nu=nu, mu=0.3, density=2650.0, local_damping=0.5,
                     reference_overlap=1e-6)
    sim.set_box((0, 0, -r), (nx * a, nx * a, 7 * r), periodic=(True, True, False))
    floor = sim.add_wall((0, 0, 0), (0, 0, 1))
    lid = sim.add_wall((0, 0, 6 * r), (0, 0, -1))
    sim.add_particles(pos, np.full(len(pos), r))
    sim.setup()
    travel = 2e-6
    steps = 4000
    sim.set_wall_velocity(lid, (0, 0, -travel / (steps * sim.dt)))
    sim.run(steps)
    sim.set_wall_velocity(lid, (0, 0, 0))
    sim.run(6000)
    D = 6 * r - (sim.wall_positions()[lid][2] - sim.wall_positions()[floor][2])
    assert D == pytest.approx(travel, rel=1e-9)
    c_pp = 4 / 3 * estar * np.sqrt(r / 2)
    c_pw = 4 / 3 * estar * np.sqrt(r)
    F = brentq(lambda f: 2 * (f / c_pp) ** (2 / 3) + 2 * (f / c_pw) ** (2 / 3) - D, 0.0, 1e6, xtol=1e-14)
    area = (nx * a) ** 2
    sigma_ref = nx * nx * F / area
    m = sim.measure()
    assert m["unbalanced_force_ratio"] < 1e-6
    height = 6 * r - D
    sig = sim.stress(volume=area * height)
    f_lid = sim.wall_forces()[lid]
    f_floor = sim.wall_forces()[floor]
    # at rest the three agree to the residual of the damped relaxation (1e-6) and round-off
    assert sig[2, 2] == pytest.approx(sigma_ref, rel=1e-5)
    assert f_lid[2] / area == pytest.approx(sigma_ref, rel=1e-5)
    assert -f_floor[2] / area == pytest.approx(sigma_ref, rel=1e-5)
    assert abs(sig[0, 0]) < 1e-9 * sigma_ref and abs(sig[1, 1]) < 1e-9 * sigma_ref


@pytest.mark.parametrize("law", ["jaeger"])
def test_restart_from_checkpoint_continues_bit_for_bit(packing, tmp_path, law):
    arrays, meta = packing.state_dict()
    base = Simulation.from_state(arrays, meta)
    f_before = base.contact_arrays()
    base.set_law(law)
    f_after = base.contact_arrays()
    # reloading along the proportional path reproduces every contact force (exact for jaeger)
    np.testing.assert_allclose(f_after["N"], f_before["N"], rtol=1e-12)
    np.testing.assert_allclose(f_after["T"], f_before["T"], rtol=1e-9, atol=1e-12 * f_before["N"].max())
    base.control_axis(2, strain_rate=-2e-5 / base.dt)
    base.control_axis(0, stress=50e3, gain=1e-5 / base.dt, max_rate=1e-5 / base.dt)
    base.run(300)
    path = checkpoint.save(base, tmp_path / "ck.h5")
    base.run(700)
    again, _ = checkpoint.load(path)
    again.run(700)
    assert base.measure()["mean_history_length"] > 1.0  # the histories were really exercised
    for name in Simulation.ARRAYS:
        a, b = getattr(base, name), getattr(again, name)
        if name in ("pi", "pj", "pfs", "pist", "pcq"):
            m = int(base.ictl[2 + 7])  # ICTL_NPAIRS
            a, b = a[:m], b[:m]
        assert np.array_equal(a, b), name
    # the history points themselves, read through the contacts' stacks
    assert base.store.n_live == again.store.n_live


@pytest.mark.parametrize("law", ["jaeger", "mindlin"])
def test_energy_balance_closes_in_plane_strain_compression(packing, law):
    """Work done by the deforming cell = change of kinetic + normal elastic + tangential elastic
    energy + frictional, viscous and local-damping dissipation (each counted by its own code)."""
    arrays, meta = packing.state_dict()
    sim = Simulation.from_state(arrays, meta)
    sim.set_law(law)
    sim.set_energy_accounting(True)
    sim.set_local_damping(0.05)
    rate = -1e-5 / sim.dt
    sim.control_axis(2, strain_rate=rate)
    sim.control_axis(1, strain_rate=0.0)
    sim.control_axis(0, stress=50e3, gain=50 * abs(rate), max_rate=5 * abs(rate), integral_steps=200)

    def budget(m):
        return (m["kinetic_energy"] + m["elastic_normal_energy"] + m["tangential_energy"]
                + m["frictional_dissipation"] + m["viscous_dissipation"] + m["local_damping_dissipation"])

    m0 = sim.measure()
    sim.run(1500)
    m1 = sim.measure()
    work = m1["boundary_work"] - m0["boundary_work"]
    assert work > 0.0
    assert m1["frictional_dissipation"] > m0["frictional_dissipation"]  # friction really worked
    # sums of per-step products with one-step offsets between the counters: 1 % of the work
    assert budget(m1) - budget(m0) == pytest.approx(work, rel=0.01)
