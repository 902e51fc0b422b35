"""Rolling and twisting resistance in the sphere engine (Simulation(rolling=..., twisting=...)):
runs without it unchanged, objectivity under a rigid rotation of the whole set-up, the energy
balance with it on, its limiting moments, restarts bit for bit (in the process and through an HDF5
checkpoint), checkpoint validation and bad input. The decay of a rolling and a spinning sphere
against the closed forms is in benchmarks/impact_suite.py (tests/test_impact_suite.py)."""

import math

import numpy as np
import pytest

from graindem.contact import rolling as RL
from graindem.contact import state as S
from graindem.contact.frames import quat_rotate
from graindem.engine import checkpoint
from graindem.engine.simulation import Simulation

R = 1e-3
ROLL = {"mu_r": 0.3, "damping": 0.3}


def _pile(rolling=ROLL, twisting=True, law="mindlin", seed=3, n_side=3, layers=3, materials=False):
    """Spheres packed on a floor in a box periodic in x and y, slightly overlapping, with spins
    and under gravity: contacts that roll, twist, open and close, and neighbour rebuilds (small skin)."""
    rng = np.random.default_rng(seed)
    sim = Simulation(law=law, mu=0.4, gravity=(0.0, 0.0, -9.81), restitution=0.6, rolling=rolling, twisting=twisting,
                     energy_accounting=True, skin=0.05 * R)
    L = 1.97 * R * n_side
    sim.set_box((0.0, 0.0, 0.0), (L, L, 10 * R * layers), periodic=(True, True, False))
    if materials:
        sim.add_material(70e9, 0.25, 0.4, 2500.0)
    sim.add_wall((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    g = (np.arange(n_side) + 0.5) * L / n_side
    pos = np.stack(np.meshgrid(g, g, 0.99 * R + 1.97 * R * np.arange(layers), indexing="ij"), -1).reshape(-1, 3)
    sim.add_particles(pos, R * rng.uniform(0.96, 1.0, len(pos)), velocities=rng.normal(0.0, 0.05, pos.shape),
                      angular_velocities=rng.normal(0.0, 100.0, pos.shape))
    return sim


def _same_state(a, b):
    da, _ = a.state_dict()
    db, _ = b.state_dict()
    assert set(da) == set(db)
    for name in da:
        assert np.array_equal(da[name], db[name]), name


def test_runs_without_rolling_resistance_are_unchanged():
    """No rolling state, no rolling arrays in checkpoints, zero rolling energies; and a run whose
    rolling resistance acts only between materials absent from it (the rolling pass runs, every row
    gets rolling state, no row has parameters) ends bit for bit where a run without it ends."""
    plain = _pile(rolling=None, twisting=None, materials=True)
    plain.run(1500)
    arrays, _ = plain.state_dict()
    assert not set(RL.ENGINE_ARRAYS) & set(arrays)
    assert plain.prs.shape[1] == 0 and plain.wrs.shape[1] == 0
    m = plain.measure()
    assert m["rolling_energy"] == 0.0 and m["rolling_dissipation"] == 0.0
    absent = _pile(rolling=None, twisting=None, materials=True)
    absent.set_pair_rolling(1, 1, ROLL, True)
    absent.run(1500)
    assert absent.prs.shape[1] == RL.N_ROLL_STATE
    assert plain.measure()["n_rebuilds"] > 1
    assert np.any(absent.prs[:, RL.R_STEP] > 0.0)  # the rolling pass visited the touching rows
    for name in Simulation.ARRAYS:
        assert np.array_equal(getattr(plain, name), getattr(absent, name)), name


def _rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def _pair(Q, law):
    """Two spheres meeting along Q x at 0.02 m/s, sliding past each other and spinning differently:
    while they touch they roll, twist and slide on each other."""
    sim = Simulation(law=law, mu=0.3, rolling={"mu_r": 0.1, "damping": 0.2}, twisting={"damping": 0.1})
    sim.set_box((-0.02, -0.02, -0.02), (0.02, 0.02, 0.02))
    x = Q @ np.array([R * (1 - 1e-7), 0.0, 0.0])
    w = np.array([[30.0, -80.0, 120.0], [-50.0, 60.0, -90.0]])
    v = np.array([[0.01, 0.01, 0.0], [-0.01, -0.01, 0.002]])
    sim.add_particles(np.array([-x, x]), R, velocities=v @ Q.T, angular_velocities=w @ Q.T)
    return sim


@pytest.mark.parametrize("law", ["mindlin", "jaeger"])
def test_a_rigid_rotation_of_a_rolling_pair_changes_nothing(law):
    """The same pair seen after a rigid rotation Q: positions, velocities and spins are Q
    times the unrotated ones and the rolling state (in the contact frame) is the same, to rounding:
    during the contact and after it."""
    Q = _rotation([0.3, -1.0, 0.6], 2.1)
    a, b = _pair(np.eye(3), law), _pair(Q, law)
    for steps, touching in ((20, True), (400, False)):
        for sim in (a, b):
            sim.run(steps)
        assert (a.pfs[0, S.F_DELTA] > 0.0) == touching
        if touching:
            assert a.prs[0, RL.R_DISS] > 0.0 and np.max(np.abs(a.prs[0, :3])) > 0.0  # the springs worked
            # the springs in world axes (a frame's in-plane axes are its own choice at first touch)
            ta = np.array(quat_rotate(*a.pcq[0], *a.prs[0, :3]))
            tb = np.array(quat_rotate(*b.pcq[0], *b.prs[0, :3]))
            assert np.max(np.abs(Q @ ta - tb)) <= 1e-9 * np.max(np.abs(ta))
            assert abs(a.prs[0, RL.R_DISS] - b.prs[0, RL.R_DISS]) <= 1e-9 * a.prs[0, RL.R_DISS]
        for name in ("pos", "vel", "omega"):
            x, y = getattr(a, name) @ Q.T, getattr(b, name)
            assert np.allclose(x, y, rtol=0, atol=1e-9 * np.max(np.abs(x))), name


def _budget(m):
    return (m["kinetic_energy"] + m["elastic_normal_energy"] + m["tangential_energy"] + m["rolling_energy"]
            + m["frictional_dissipation"] + m["viscous_dissipation"] + m["rolling_dissipation"])


def test_energy_balance_closes_with_rolling_and_twisting():
    """Spinning spheres colliding in a periodic box (no gravity, no walls): kinetic + normal,
    tangential, rolling/twisting elastic energy + frictional, viscous and rolling dissipation stay
    the initial kinetic energy; each term counted by its own code (the rolling dissipation by the
    springs' yield and dashpots, not as a remainder)."""
    rng = np.random.default_rng(5)
    sim = Simulation(law="mindlin", mu=0.3, restitution=0.8, energy_accounting=True, rolling={"mu_r": 0.3,
                     "damping": 0.5}, twisting={"damping": 0.3})
    L = 8.8 * R
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    g = (np.arange(4) + 0.5) * L / 4
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    sim.add_particles(pos, R * rng.uniform(0.95, 1.05, len(pos)), velocities=rng.normal(0.0, 0.3, pos.shape),
                      angular_velocities=rng.normal(0.0, 1000.0, pos.shape))
    sim.setup()
    m0 = sim.measure()
    sim.run(6000)
    m1 = sim.measure()
    e0 = _budget(m0)
    assert m1["rolling_dissipation"] > 0.02 * e0  # the rolling resistance really worked
    assert m1["n_rebuilds"] > 1
    assert abs(_budget(m1) - e0) < 0.01 * e0, (_budget(m1), e0, m1)


def test_limiting_moments_hold_while_a_sphere_rolls_and_spins():
    """A sphere rolling and spinning on the floor: the rolling moment stays at most mu_r R N and
    the twisting moment at most 2/3 mu a N (a = sqrt(R delta)), and both reach them."""
    sim = Simulation(law="jaeger", mu=0.5, gravity=(0.0, 0.0, -9.81), restitution=0.3,
                     rolling={"mu_r": 0.2}, twisting=True)
    sim.set_box((-0.05, -0.05, 0.0), (0.05, 0.05, 0.01))
    sim.add_wall((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    sim.add_particles([[0.0, 0.0, R * (1 - 1e-6)]], R, velocities=[[0.01, 0.0, 0.0]],
                      angular_velocities=[[0.0, 10.0, 5.0]])
    reached = [False, False]
    for _ in range(60):
        sim.run(200)
        row = sim.wrs[0]
        N = sim.wfs[0, S.F_N]
        a = math.sqrt(R * sim.wfs[0, S.F_DELTA])
        m_roll = row[RL.R_KR] * math.hypot(row[RL.R_THX], row[RL.R_THY])
        m_twist = row[RL.R_KT] * abs(row[RL.R_THZ])
        assert m_roll <= 0.2 * R * N * (1 + 1e-12)
        assert m_twist <= 2.0 / 3.0 * 0.5 * a * N * (1 + 1e-12)
        reached[0] |= m_roll > 0.2 * R * N * (1 - 1e-9)
        reached[1] |= m_twist > 2.0 / 3.0 * 0.5 * a * N * (1 - 1e-9)
    assert all(reached)


def test_restart_bit_for_bit_in_process_and_through_a_checkpoint(tmp_path):
    base = _pile(law="jaeger")
    base.run(800)
    arrays, meta = base.state_dict()
    assert set(RL.ENGINE_ARRAYS) <= set(arrays)
    path = checkpoint.save(base, tmp_path / "ck.h5")
    again = Simulation.from_state(arrays, meta)
    loaded, _ = checkpoint.load(path)
    for sim in (base, again, loaded):
        sim.run(1200)
    assert base.measure()["n_rebuilds"] > 2 and base.measure()["rolling_dissipation"] > 0.0
    _same_state(base, again)
    _same_state(base, loaded)


def test_checkpoints_with_damaged_rolling_arrays_are_refused():
    sim = _pile()
    sim.run(50)
    arrays, meta = sim.state_dict()
    bad = dict(arrays)
    bad["prs"] = arrays["prs"].copy()
    bad["prs"][0, RL.R_THX] = np.nan
    with pytest.raises(ValueError, match="prs"):
        Simulation.from_state(bad, meta)
    bad = {k: v for k, v in arrays.items() if k != "wrs"}
    with pytest.raises(ValueError, match="rolling resistance arrays"):
        Simulation.from_state(bad, meta)
    bad = dict(arrays)
    bad["rolling_pairs"] = arrays["rolling_pairs"].copy()
    bad["rolling_pairs"][0, 0, RL.RP_ETA_R] = 2.0
    with pytest.raises(ValueError, match="rolling_pairs"):
        Simulation.from_state(bad, meta)


@pytest.mark.parametrize("kw, match", [
    ({"rolling": {"mu": 0.1}}, "mu_r"),
    ({"rolling": {"mu_r": -0.1}}, "rolling mu_r"),
    ({"rolling": {"mu_r": 0.1, "damping": 1.5}}, "rolling damping"),
    ({"rolling": {"mu_r": 0.1, "stiffness": 0.0}}, "rolling stiffness"),
    ({"rolling": "yes"}, "rolling must be"),
    ({"twisting": "on"}, "twisting must be"),
    ({"twisting": {"damping": -1}}, "twisting damping"),
])
def test_bad_rolling_input_is_refused_naming_the_parameter(kw, match):
    with pytest.raises(ValueError, match=match):
        Simulation(**kw)


def test_scenario_keys_set_rolling_per_pair():
    from graindem.engine.cli import apply_rolling
    from graindem.io.scenario import validate_scenario
    config = validate_scenario({"contact": {"rolling_friction": 0.1, "twisting": True, "rolling_damping": 0.2},
                                "materials": {"E": [1e9], "nu": [0.3], "density": [1000.0], "mu": [0.3],
                                              "pair_rolling_friction": [0, 1, 0.05]}})
    sim = Simulation()
    sim.add_material(1e9, 0.3, 0.3, 1000.0)
    apply_rolling(sim, config["contact"], config["materials"])
    assert sim.rolling_record(0, 0)[RL.RP_MU_R] == 0.1 and sim.rolling_record(1, 1)[RL.RP_MU_R] == 0.1
    assert sim.rolling_record(1, 0)[RL.RP_MU_R] == 0.05 and sim.rolling_record(0, 1)[RL.RP_ETA_R] == 0.2
    assert np.all(sim.rolling_pairs[..., RL.RP_TWIST] == 1.0)
    with pytest.raises(ValueError, match="rolling_friction"):
        validate_scenario({"contact": {"rolling_friction": -1.0}})
