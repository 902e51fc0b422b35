"""Force-controlled walls (boundaries.walls.servo_wall_velocity) for every body kind.

References: static equilibrium, independent of the servo: at rest the grains press the lid with the
servo's target force P* exactly (the servo's speed vanishes only there), and the floor carries the
target plus the whole weight of the grains (frictionless side walls carry no vertical force, or there
are none); the energy balance (the wall's work -F . v dt with the velocity of each step) closes as for
walls at a prescribed velocity; a restarted run repeats the uninterrupted one bit for bit.
"""

import numpy as np
import pytest

from graindem.boundaries.walls import WALL_MODE, WALL_PRESCRIBED, WALL_SERVO, WALL_TARGET, wall_rows
from graindem.engine import Simulation, checkpoint


def sphere_column(force):
    """36 spheres in 3 x 3 columns of 4 (periodic sideways) on a floor under a lid servo-controlled
    to `force`, starting 0.02 r above the top spheres."""
    r, g = 1e-3, 9.81
    a, nz = 2.2 * r, 4
    pos = np.array([[(ix + 0.5) * a, (iy + 0.5) * a, r + 2 * r * iz] for ix in range(3) for iy in range(3)
                    for iz in range(nz)])
    sim = Simulation(law="mindlin", E=1e8, nu=0.25, mu=0.3, density=2650.0, local_damping=0.3, gravity=(0, 0, -g))
    sim.set_box((0, 0, -r), (3 * a, 3 * a, 12 * r), periodic=(True, True, False))
    floor = sim.add_wall((0, 0, 0), (0, 0, 1))
    # Hertz at the target: ~3e4 N/m over the lid's 9 contacts, dt 6.3e-6 s: gain k dt ~ 0.2
    lid = sim.add_wall((0, 0, 2 * nz * r + 0.02 * r), (0, 0, -1), force=force, servo_gain=1.0, max_speed=0.005)
    sim.add_particles(pos, np.full(len(pos), r))
    sim.set_energy_accounting(True)
    return sim, floor, lid


def sphere_budget(sim, g=9.81):
    """Kinetic + stored + dissipated + gravity's potential - the walls' work: constant while the
    balance closes."""
    m = sim.measure()
    return (m["kinetic_energy"] + m["elastic_normal_energy"] + m["tangential_energy"] + m["frictional_dissipation"]
            + m["viscous_dissipation"] + m["local_damping_dissipation"] - m["boundary_work"]
            + float(np.sum(sim.mass * g * sim.pos[:, 2]))), m


def test_sphere_column_under_a_servo_lid_is_in_equilibrium_balances_energy_and_restarts(tmp_path):
    force = 0.02   # N, about five times the column's weight
    sim, floor, lid = sphere_column(force)
    sim.setup()
    weight = float(sim.mass.sum()) * 9.81
    b0, _ = sphere_budget(sim)
    sim.run(SPHERE_STEPS)
    b1, m = sphere_budget(sim)
    f = sim.wall_forces()
    assert m["kinetic_energy"] < 1e-9 * m["boundary_work"]   # at rest
    assert f[lid][2] == pytest.approx(force, rel=0.01)
    assert -f[floor][2] == pytest.approx(force + weight, rel=0.01)
    assert m["boundary_work"] > 0.0   # the lid did work on the column
    assert abs(b1 - b0) < 0.01 * m["boundary_work"]
    # a checkpoint mid-way continues bit for bit
    first, _, _ = sphere_column(force)
    first.run(400)
    checkpoint.save(first, tmp_path / "servo.h5")
    first.run(300)
    again, _ = checkpoint.load(tmp_path / "servo.h5")
    again.run(300)
    a, _ = first.state_dict()
    b, _ = again.state_dict()
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=name)
    assert a["walls"][lid, WALL_MODE] == WALL_SERVO and a["walls"][lid, 8] != 0.0


SPHERE_STEPS = 2000


def test_level_set_column_under_a_servo_lid_is_in_equilibrium_and_balances_energy():
    from graindem.particles import LevelSetGrain

    R, g0, force = 1.0, 10.0, 300.0
    s = LevelSetGrain.sphere(R, spacing=R / 5, n_nodes=100)
    sim = Simulation(mu=0.0, density=1.0, gravity=(0, 0, -g0), dt=1e-3, allow_unstable_dt=True, local_damping=0.3)
    sim.set_box((-3, -3, -1), (3, 3, 10))
    sim.set_grain_contact(1e5, law="area", damping_ratio=0.3)
    floor = sim.add_wall((0, 0, 0), (0, 0, 1))
    # frictionless side walls just clear of the column keep it upright
    for p, n in (((-1.02, 0, 0), (1, 0, 0)), ((1.02, 0, 0), (-1, 0, 0)), ((0, -1.02, 0), (0, 1, 0)),
                 ((0, 1.02, 0), (0, -1, 0))):
        sim.add_wall(p, n)
    # gain x contact stiffness x dt ~ 0.04, gain x contact damping ~ 0.3 (docs/guide/boundaries.md)
    lid = sim.add_wall((0, 0, 6.3), (0, 0, -1), force=force, servo_gain=0.002, max_speed=0.2)
    q = np.array([0.3, 0.2, 0.5, 0.1]) / np.linalg.norm([0.3, 0.2, 0.5, 0.1])
    sim.add_grains(s, [[0, 0, 1.0], [0, 0, 3.05], [0, 0, 5.1]], orientations=np.array([q, q, q]))
    sim.run(1000)   # the grains settle on the floor and the lid reaches them
    m0 = sim.measure()
    sim.run(5000)
    m = sim.measure()
    f = sim.wall_forces()
    weight = float(sim.grains.mass.sum()) * g0
    assert m["kinetic_energy"] < 1e-6 * m["boundary_work"]
    assert f[lid][2] == pytest.approx(force, rel=0.01)
    assert -f[floor][2] == pytest.approx(force + weight, rel=0.01)
    work = m["boundary_work"] - m0["boundary_work"]
    assert work > 0.0
    assert abs(m["energy_balance_error"] - m0["energy_balance_error"]) < 0.01 * work


def test_deformable_grains_under_a_servo_lid_are_in_equilibrium_and_balance_energy():
    """Three deformable spheres (one compaction mode) side by side between a floor and a servo lid."""
    from graindem.deform.response import LinearResponse
    from graindem.deform.scenes import compaction_sphere

    force = 5000.0
    tpl = compaction_sphere(n_nodes=100)
    sim = Simulation(dt=0.01, allow_unstable_dt=True, density=1.0, mu=0.0, gravity=(0, 0, -1.0))
    sim.set_box((-40, -40, -40), (40, 40, 40))
    floor = sim.add_wall((0, 0, -10.0), (0, 0, 1))
    lid = sim.add_wall((0, 0, 10.2), (0, 0, -1), force=force, servo_gain=1e-4, max_speed=0.1)
    sim.add_deformable_grains(tpl, [[-20.5, 0, 0.05], [0, 0, 0.05], [20.5, 0, 0.05]], modal_mass=[[1e5]],
                              response=LinearResponse([[1e6]]), modal_damping=[[2e5]],
                              dofs=[True, True, True, False, False, False])
    sim.set_deformable_contact(1e4, damping=600.0)
    e0 = sim.deformable_energies()
    sim.run(2600)
    e = sim.deformable_energies()
    f = sim.wall_forces()
    weight = float(sim.deformable.mass.sum())
    assert f[lid][2] == pytest.approx(force, rel=0.01)
    assert -f[floor][2] == pytest.approx(force + weight, rel=0.01)
    # the lid's work (-F . v dt with each step's servo velocity) closes the balance
    assert e["wall_work"] > 0.0
    assert abs(e["balance"] - e0["balance"]) < 0.01 * e["wall_work"]


@pytest.mark.parametrize("kwargs, match", [
    ({"force": 1.0, "servo_gain": -1.0, "max_speed": 1.0}, "servo_gain"),
    ({"force": 1.0, "servo_gain": 1.0, "max_speed": 0.0}, "max_speed"),
    ({"force": float("nan"), "servo_gain": 1.0, "max_speed": 1.0}, "force"),
    ({"force": -1.0, "servo_gain": 1.0, "max_speed": 1.0}, "force"),
    ({"force": 1.0, "stress": 1.0, "area": 1.0, "servo_gain": 1.0, "max_speed": 1.0}, "not both"),
    ({"stress": 1.0, "servo_gain": 1.0, "max_speed": 1.0}, "area"),
    ({"stress": 1.0, "area": float("inf"), "servo_gain": 1.0, "max_speed": 1.0}, "area"),
    ({"force": 1.0, "area": 2.0, "servo_gain": 1.0, "max_speed": 1.0}, "area"),
    ({"force": 1.0, "max_speed": 1.0}, "servo_gain"),
    ({"force": 1.0, "servo_gain": 1.0}, "max_speed"),
    ({"servo_gain": 1.0}, "servo_gain"),
    ({"force": 1.0, "servo_gain": 1.0, "max_speed": 1.0, "velocity": (0, 0, 0.1)}, "velocity"),
])
def test_bad_servo_wall_input_is_refused_naming_the_parameter(kwargs, match):
    sim = Simulation()
    with pytest.raises(ValueError, match=match):
        sim.add_wall((0, 0, 0), (0, 0, 1), **kwargs)
    assert len(sim._walls) == 0 and len(sim._wall_materials) == 0   # nothing added
    w = sim.add_wall((0, 0, 0), (0, 0, 1))
    with pytest.raises(ValueError, match="force"):
        sim.control_wall(w)
    with pytest.raises(ValueError, match="wall must be an index"):
        sim.control_wall(3, force=1.0, servo_gain=1.0, max_speed=1.0)


def test_stress_wall_targets_stress_times_area_and_old_rows_load_as_prescribed():
    sim = Simulation()
    w = sim.add_wall((0, 0, 0), (0, 0, 2), velocity=(0.1, 0, 0), stress=5.0, area=3.0, servo_gain=1.0,
                     max_speed=1.0)
    row = sim._walls[w]
    assert row[WALL_MODE] == WALL_SERVO and row[WALL_TARGET] == 15.0
    sim.set_wall_velocity(w, (0, 0, 1.0))
    assert sim._walls[w][WALL_MODE] == WALL_PRESCRIBED and sim._walls[w][8] == 1.0
    old = np.arange(24, dtype=np.float64).reshape(2, 12)   # rows of checkpoints before the servo
    new = wall_rows(old)
    assert new.shape == (2, 19) and np.array_equal(new[:, :12], old) and np.all(new[:, WALL_MODE] == WALL_PRESCRIBED)


def test_mixed_run_servo_lid_reads_the_grains_force_and_moves_both_copies():
    """A level-set grain and a sphere on a floor, the lid over the taller grain only: the sphere step's
    servo must read the grains' force on the lid (run_steps' `more`), or the lid would press on at
    its full approach speed; at rest it carries its target, the floor the target plus both weights,
    and the grains' copy of the walls has moved with the spheres' bit for bit."""
    from graindem.particles import LevelSetGrain

    g0, force = 10.0, 300.0
    sim = Simulation(mu=0.0, E=1e6, nu=0.3, density=1.0, gravity=(0, 0, -g0), dt=1e-3, allow_unstable_dt=True,
                     local_damping=0.3)
    sim.set_box((-3, -3, -1), (4, 3, 10))
    sim.set_grain_contact(1e5, law="area", damping_ratio=0.3)
    floor = sim.add_wall((0, 0, 0), (0, 0, 1))
    lid = sim.add_wall((0, 0, 2.1), (0, 0, -1), force=force, servo_gain=0.002, max_speed=0.2)
    sim.add_grains(LevelSetGrain.sphere(1.0, spacing=0.2, n_nodes=100), [[0, 0, 1.0]])
    sim.add_particles([[2.5, 0, 0.4]], 0.4)
    sim.run(MIXED_STEPS)
    f = sim.wall_forces()
    weight = (float(sim.grains.mass.sum()) + float(sim.mass.sum())) * g0
    assert f[lid][2] == pytest.approx(force, rel=0.01)
    assert -f[floor][2] == pytest.approx(force + weight, rel=0.01)
    assert np.array_equal(sim.mixed.grain_walls[:, :9], sim.walls[:, :9])   # points, normals, velocities


MIXED_STEPS = 3000
