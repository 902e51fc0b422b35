"""The contact law of level-set grains chosen per material pair (Simulation.set_pair_shape_law).

References: each pair of a run that mixes the laws moves exactly as in the run of its own law alone
(the other pair far away, so the two never meet): a "hertz_curvature" pair of material 0 and an
"area" pair of material 1 with a wall of material 1; a mixed run continued from its state equals the
uninterrupted run bit for bit; energy conservation (kinetic + contact elastic + dissipated) in the
mixed run with no damping.
"""

import math

import numpy as np
import pytest

from graindem.engine import Simulation
from graindem.particles import LevelSetGrain

L = 8.0
Q1 = np.array([math.cos(0.4), 0.0, math.sin(0.4) * 0.6, math.sin(0.4) * 0.8])
Q2 = np.array([math.cos(0.9), math.sin(0.9), 0.0, 0.0])


@pytest.fixture(scope="module")
def ellipsoid():
    return LevelSetGrain.ellipsoid(1.0, 0.7, 0.5, spacing=0.1, n_nodes=200)


def scene(grain, default, pair_laws=(), energy=False):
    """Pair A (grains 0, 1, material 0) colliding at y = 2, pair B (grains 2, 3, material 1) colliding
    at y = 6 and falling onto the wall z = 0 (material 1); jaeger friction for the Hertz law, no
    damping, no gravity. default: the law of the pairs not in pair_laws ((m1, m2, law) triples)."""
    sim = Simulation(law="jaeger", E=1e5, nu=0.3, mu=0.4, density=1.0, dt=2e-3, allow_unstable_dt=True, skin=0.05,
                     energy_accounting=energy)
    sim.add_material(E=2e5, nu=0.25, mu=0.3, density=1.2)
    sim.set_box((0, 0, 0), (L, L, L))
    sim.set_grain_contact(law="hertz_curvature", default=default == "hertz_curvature")
    sim.set_grain_contact(2e5, law="area", default=default == "area")
    for m1, m2, law in pair_laws:
        sim.set_pair_shape_law(m1, m2, law)
    a = np.array([2.0, 2.0, 4.0])
    sim.add_grains(grain, [a, a + (2.0, 0.25, 0.1)], orientations=np.array([Q1, Q2]),
                   velocities=[(0.3, 0.0, 0.0), (-0.3, 0.05, 0.0)], angular_velocities=[(0.0, 0.0, 0.5), (0.3, 0, 0)],
                   material=0)
    b = np.array([2.0, 6.0, 0.85])
    sim.add_grains(grain, [b, b + (2.0, 0.25, 0.1)], orientations=np.array([Q2, Q1]),
                   velocities=[(0.3, 0.0, -0.4), (-0.3, 0.05, -0.45)], angular_velocities=[(0.0, 0.2, 0.5), (0.3, 0, 0)],
                   material=1)
    sim.add_wall((0, 0, 0), (0, 0, 1), material=1)
    return sim


def trajectory(sim, n=30, every=10):
    """Poses, forces and moments of the grains every `every` steps; the set of pairs that touched
    ((i, j), j < 0: a wall)."""
    rows, seen = [], set()
    for _ in range(n):
        sim.run(every)
        g = sim.grains
        rows.append(np.concatenate([g.pos.ravel(), g.quat.ravel(), g.force.ravel(), g.torque.ravel()]))
        net = g.contact_network()
        seen |= {(int(i), int(j)) for i, j in zip(net["i"], net["j"])}
    return np.array(rows), seen


def _grain_rows(traj, grains, n=4):
    """The columns of the trajectory rows that belong to `grains`."""
    cols = []
    for base, width in ((0, 3), (3 * n, 4), (7 * n, 3), (10 * n, 3)):
        for g in grains:
            cols += list(range(base + width * g, base + width * (g + 1)))
    return traj[:, cols]


def test_each_pair_moves_as_in_the_run_of_its_own_law(ellipsoid):
    mixed, seen = trajectory(scene(ellipsoid, "area", [(0, 0, "hertz_curvature")]))
    assert {(0, 1), (2, 3)} <= seen and any(j < 0 for _, j in seen), seen  # both pairs touched, pair B the wall
    hertz, _ = trajectory(scene(ellipsoid, "hertz_curvature"))
    area, _ = trajectory(scene(ellipsoid, "area"))
    assert not np.allclose(_grain_rows(hertz, (2, 3)), _grain_rows(area, (2, 3)))  # the laws differ
    np.testing.assert_array_equal(_grain_rows(mixed, (0, 1)), _grain_rows(hertz, (0, 1)))
    np.testing.assert_array_equal(_grain_rows(mixed, (2, 3)), _grain_rows(area, (2, 3)))
    # the same with the other default: material 1's pairs (and its wall) named
    other, _ = trajectory(scene(ellipsoid, "hertz_curvature", [(1, 1, "area")]))
    np.testing.assert_array_equal(other, mixed)


def test_mixed_restart_continues_bit_for_bit(ellipsoid):
    laws = [(0, 0, "hertz_curvature")]
    whole = scene(ellipsoid, "area", laws)
    whole.run(300)
    ref = whole.state_dict()[0]
    first = scene(ellipsoid, "area", laws)
    first.run(120)
    again = Simulation.from_state(*first.state_dict())
    again.run(180)
    arrays = again.state_dict()[0]
    assert np.any(ref["grain_hertz_laws"] == 0) and np.any(ref["grain_hertz_laws"] == 1)
    for k, v in arrays.items():
        if k.startswith("grain_"):
            assert np.array_equal(v, ref[k]), k


def _total(m):
    return (m["kinetic_energy"] + m["elastic_normal_energy"] + m["tangential_energy"] + m["frictional_dissipation"]
            + m["viscous_dissipation"])


def test_mixed_energy_balance_closes(ellipsoid):
    sim = scene(ellipsoid, "area", [(0, 0, "hertz_curvature")], energy=True)
    e0 = _total(sim.measure())
    worst = 0.0
    for _ in range(40):
        sim.run(10)
        m = sim.measure()
        worst = max(worst, abs(_total(m) - e0))
    assert m["frictional_dissipation"] > 0.05 * e0  # friction worked
    # the Hertz pair's bound (test_levelset_hertz: 3e-3 for ellipsoids) and the area law's time-step error
    assert worst / e0 < 5e-3, worst / e0


def test_bad_pair_laws_are_refused(ellipsoid):
    sim = Simulation()
    with pytest.raises(ValueError, match="law must be one of"):
        sim.set_pair_shape_law(0, 0, "hertz")
    with pytest.raises(ValueError, match="m2"):
        sim.set_pair_shape_law(0, 3, "area")
    sim = Simulation(E=1e5, nu=0.3, density=1.0, dt=1e-3, allow_unstable_dt=True)
    sim.set_box((0, 0, 0), (L, L, L))
    sim.set_grain_contact(1e3, law="area")
    sim.set_pair_shape_law(0, 0, "hertz_curvature")
    sim.add_grains(ellipsoid, [(3.0, 3.0, 3.0)])
    with pytest.raises(ValueError, match="default=False"):
        sim.setup()


MIXED_SCENARIO = {
    "particles": {"kind": "levelset", "n": 27, "radius_mean": 1e-3},
    "grains": {"nodes": 100, "grid_cells": 4, "size_classes": 1},
    "contact": {"shape_law": "area"},
    "materials": {"E": [2e9], "nu": [0.25], "density": [2650.0], "mu": [0.5], "fraction": [0.5],
                  "hertz_curvature_pairs": [0, 1, 1, 1]},
}


def test_scenario_pairs_choose_the_law():
    from graindem.io.scenario import refuse_unused_keys, validate_scenario
    from graindem.scenarios.levelset_biaxial import build_assembly

    config = validate_scenario(MIXED_SCENARIO)
    refuse_unused_keys(config)  # both laws' keys are in use
    sim, _ = build_assembly(config, 0.1)
    sim.setup()
    laws = sim.grains.hertz.laws.reshape(2, 2)
    np.testing.assert_array_equal(laws, [[0, 1], [1, 1]])  # LAW_NODE = 0, LAW_HERTZ = 1
    assert sim.grain_contact["law"] == "hertz_curvature" and sim.grain_contact["node"]["law"] == "area"
    assert set(np.unique(sim.grains.material)) == {0, 1}
    bad = {**MIXED_SCENARIO, "materials": {**MIXED_SCENARIO["materials"], "area_pairs": [1, 0]}}
    with pytest.raises(ValueError, match="both name the pair"):
        validate_scenario(bad)
    bad["materials"]["area_pairs"] = [0, 2]
    with pytest.raises(ValueError, match=r"materials\.area_pairs must hold material indices in \[0, 1\]"):
        validate_scenario(bad)
