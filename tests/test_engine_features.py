"""`graindem run` features: periodic checkpoints, packings from a CSV file, adaptive time step,
restitution and an explicit dt through the scenario file.

References: the uninterrupted run (a run killed after an intermediate checkpoint and restarted
must repeat it bit for bit), the packing written to the CSV (the run must hold exactly those
spheres, brought to the confining pressure by the servo), the Hertz-Mindlin critical time step
computed here by hand from the overlaps, and the rebound velocity of a two-sphere collision
(the requested coefficient of restitution).
"""

import json
import math
import shutil

import numpy as np
import pytest

from graindem.cli import main
from graindem.contact import state as S
from graindem.engine import checkpoint
from graindem.core.cell import CELL_LO
from graindem.core.layout import CTL_VISC, ICTL_NPAIRS
from graindem.engine.cli import run_scenario
from graindem.engine.simulation import Simulation
from graindem.io.scenario import scenario_to_toml, validate_scenario
from graindem.io.timeseries import read_timeseries
from graindem.scenarios import biaxial as B

CONFIG = {
    "simulation": {"scenario": "biaxial", "steps": 3000, "output_interval": 100, "seed": 7},
    "contact": {"law": "jaeger"},
    "particles": {"n": 100, "radius_mean": 1.5e-4},
    "loading": {"kind": "biaxial", "total_strain": 0.015, "preparation_mu": 0.1},
    "material": {"damping": 0.1},
    "output": {"vtk": False, "plots": False},
}


def _config(**sections):
    raw = {k: dict(v) for k, v in CONFIG.items()}
    for section, keys in sections.items():
        raw.setdefault(section, {}).update(keys)
    return validate_scenario(raw)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """600 steps of the test in one go (the reference of the restart test)."""
    out = tmp_path_factory.mktemp("uninterrupted")
    run_scenario(_config(), out, steps=600, quiet=True)
    return out


def _assert_same_state(a, b):
    assert a.step_count == b.step_count
    m = int(a.ictl[ICTL_NPAIRS])
    for name in ("pos", "vel", "omega", "quat", "cell", "ctl", "acc", "pos_build", "pstart"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("pi", "pj", "pfs", "pist", "pcq"):
        assert np.array_equal(getattr(a, name)[:m], getattr(b, name)[:m]), name


class _Killed(Exception):
    pass


def test_run_killed_after_a_periodic_checkpoint_restarts_bit_for_bit(uninterrupted, tmp_path, monkeypatch):
    shutil.copy(uninterrupted / "packing.h5", tmp_path / "packing.h5")
    real_save = checkpoint.save
    saved_at = []

    def save_then_die_at_400(sim, path, extra=None):
        result = real_save(sim, path, extra=extra)
        if extra and "biaxial" in extra:
            k = sim.step_count - extra["biaxial"]["start_step"]
            saved_at.append(k)
            if k == 400:  # the process dies right after the second periodic checkpoint
                raise _Killed
        return result

    monkeypatch.setattr(B.checkpoint, "save", save_then_die_at_400)
    with pytest.raises(_Killed):
        run_scenario(_config(simulation={"checkpoint_interval": 200}), tmp_path, steps=600, quiet=True)
    monkeypatch.undo()
    assert saved_at == [200, 400]
    assert main(["run", "--restart", str(tmp_path / "checkpoint.h5"), "--out", str(tmp_path), "--steps", "200",
                 "--quiet"]) == 0
    a, _ = checkpoint.load(uninterrupted / "checkpoint.h5")
    b, _ = checkpoint.load(tmp_path / "checkpoint.h5")
    _assert_same_state(a, b)
    sa = read_timeseries(uninterrupted / "series.csv")
    sb = read_timeseries(tmp_path / "series.csv")
    assert len(sa["step"]) == len(sb["step"]) == 7  # rows 0..600 once each: none lost or repeated
    for key in sa:
        np.testing.assert_array_equal(sa[key], sb[key], err_msg=key)


def test_particles_file_is_read_relative_to_the_scenario_and_brought_to_the_confining_stress(uninterrupted, tmp_path,
                                                                                              capsys):
    packed, _ = checkpoint.load(uninterrupted / "packing.h5")
    L = packed.box_lengths
    lo = packed.cell[CELL_LO:CELL_LO + 3]
    pos = np.mod(packed.pos - lo, L)
    case = tmp_path / "case"
    case.mkdir()
    np.savetxt(case / "pack.csv", np.column_stack([pos, packed.radius]), delimiter=",", header="x,y,z,r",
               comments="", fmt="%.17g")
    cfg = {k: dict(v) for k, v in CONFIG.items()}
    for key in ("n", "radius_mean"):
        cfg["particles"].pop(key)
    cfg["particles"]["file"] = "pack.csv"
    cfg["boundary"] = {"box": L.tolist()}
    text = scenario_to_toml(cfg)
    (case / "run.toml").write_text(text)
    out = tmp_path / "out"
    assert main(["run", str(case / "run.toml"), "--out", str(out), "--steps", "200", "--quiet"]) == 0
    sim, _ = checkpoint.load(out / "checkpoint.h5")
    # exactly the spheres of the file (radii are not changed by the run)
    assert sim.n == packed.n
    assert np.array_equal(np.sort(sim.radius), np.sort(packed.radius))
    series = read_timeseries(out / "series.csv")
    # servo tolerance of the preparation is 0.5 %; the packing was already at 100 kPa
    assert series["stress_xx"][0] == pytest.approx(100e3, rel=0.01)
    assert series["stress_ratio"][0] == pytest.approx(1.0, abs=0.02)
    assert json.loads((out / "summary.json").read_text())["n_particles"] == packed.n

    # bad files stop before the run, naming the key and the row
    lines = (case / "pack.csv").read_text().splitlines()
    lines[5] = "0.1,0.1,0.1,-1e-4"
    (case / "pack.csv").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["run", str(case / "run.toml"), "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "particles.file" in err and "line 6" in err and "r > 0" in err  # line 1 is the header
    (case / "pack.csv").unlink()
    assert main(["run", str(case / "run.toml"), "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "particles.file" in err and "does not exist" in err


def _hand_dt_crit(pos, radius, L, E, nu, density):
    """2/omega_max of one Hertz-Mindlin contact at the largest overlap (brute force, minimum image)."""
    d = pos[None, :, :] - pos[:, None, :]
    d -= L * np.round(d / L)
    dist = np.sqrt((d * d).sum(axis=2))
    overlap = radius[:, None] + radius[None, :] - dist
    np.fill_diagonal(overlap, -1.0)
    dmax = overlap.max()
    estar = E / (2.0 * (1.0 - nu * nu))
    gstar = E / (2.0 * (1.0 + nu)) / (2.0 * (2.0 - nu))
    m = density * 4.0 / 3.0 * math.pi * radius ** 3
    inertia = 0.4 * m * radius ** 2
    a = np.sqrt(0.5 * radius * dmax)  # contact radius of two spheres of this size at dmax
    kn, kt = 2.0 * estar * a, 8.0 * gstar * a
    w2 = np.maximum(kn * 2.0 / m, kt * 2.0 * (1.0 / m + radius ** 2 / inertia))
    return 2.0 / math.sqrt(w2.max())


def _loaded_sim(packed, **kw):
    """The prepared packing rebuilt through the API, compressed fast along z (the load rises)."""
    sim = Simulation(law="mindlin", E=packed.E, nu=packed.nu, mu=0.5, density=packed.density,
                     local_damping=0.3, reference_overlap=1e-12, **kw)
    lo = packed.cell[CELL_LO:CELL_LO + 3]
    sim.set_box(lo, lo + packed.box_lengths, periodic=(True, True, True))
    sim.add_particles(packed.pos, packed.radius)
    sim.setup()
    sim.control_axis(2, strain_rate=-4e-3 / (3000 * sim.dt))  # 0.4 % axial strain in 3000 steps
    return sim


def test_adaptive_dt_keeps_the_fraction_of_the_hand_critical_step_under_rising_load(uninterrupted, tmp_path):
    packed, _ = checkpoint.load(uninterrupted / "packing.h5")
    E, nu, rho = packed.E, packed.nu, packed.density
    fixed = _loaded_sim(packed, dt_fraction=0.2)
    adaptive = _loaded_sim(packed, dt_fraction=0.2, adaptive_dt=True, adaptive_dt_interval=50)
    assert adaptive.dt == fixed.dt  # the flag changes nothing before contacts stiffen
    ratios_fixed, ratios_adaptive, ratios_updated, p = [], [], [], []
    for _ in range(6):
        fixed.run(500)
        adaptive.run(500)
        ratios_fixed.append(fixed.dt / _hand_dt_crit(fixed.pos, fixed.radius, fixed.box_lengths, E, nu, rho))
        crit = _hand_dt_crit(adaptive.pos, adaptive.radius, adaptive.box_lengths, E, nu, rho)
        ratios_adaptive.append(adaptive.dt / crit)  # dt set 50 steps ago: the load has risen since
        adaptive.adapt_dt()  # the update the next run() starts with, at this step (a multiple of 50)
        ratios_updated.append(adaptive.dt / crit)
        p.append(adaptive.measure()["pressure"])
    # the load rises well above the 100 kPa start, so the fixed step drifts above its fraction ...
    assert p[-1] > 5 * 100e3
    assert ratios_fixed[-1] > 0.2 * 1.2
    # ... while the adaptive one stays at it: right after an update exactly (the hand formula and
    # the engine evaluate the same Hertz-Mindlin bound at the same overlap: 1e-9 is rounding),
    # and 50 steps later within the stiffening of those 50 steps (< 2 % here)
    np.testing.assert_allclose(ratios_updated, 0.2, rtol=1e-9)
    np.testing.assert_allclose(ratios_adaptive, 0.2, rtol=0.02)
    assert adaptive.dt < 0.85 * fixed.dt
    # time is the sum of the steps actually taken: the adaptive run covered less of it
    assert adaptive.time < fixed.time and fixed.time == pytest.approx(3000 * fixed.dt, rel=1e-12)


def test_adaptive_dt_restarts_bit_for_bit_and_the_flag_off_equals_a_fixed_explicit_dt(uninterrupted, tmp_path):
    packed, _ = checkpoint.load(uninterrupted / "packing.h5")
    a = _loaded_sim(packed, adaptive_dt=True, adaptive_dt_interval=50)
    a.run(1230)  # stop between two dt updates
    checkpoint.save(a, tmp_path / "mid.h5")
    a.run(770)
    b, _ = checkpoint.load(tmp_path / "mid.h5")
    b.run(770)
    _assert_same_state(a, b)
    assert a.time == b.time
    # flag off: dt never moves, and the run is the same as one with that dt given explicitly
    off = _loaded_sim(packed)
    explicit = _loaded_sim(packed, dt=off.dt)
    dt0 = off.dt
    off.run(1000)
    explicit.run(1000)
    assert off.dt == dt0
    _assert_same_state(off, explicit)


def test_restitution_and_dt_of_the_scenario_reach_the_engine(uninterrupted, tmp_path, capsys):
    packed, _ = checkpoint.load(uninterrupted / "packing.h5")
    dt = float(f"{0.5 * packed.dt:.3g}")  # a user's round number, well below the critical step
    cfg = {k: dict(v) for k, v in CONFIG.items()}
    cfg["material"]["restitution"] = 0.5
    cfg["simulation"]["dt"] = dt
    (tmp_path / "run.toml").write_text(scenario_to_toml(cfg))
    assert main(["run", str(tmp_path / "run.toml"), "--out", str(tmp_path / "o"), "--steps", "200", "--quiet"]) == 0
    sim, _ = checkpoint.load(tmp_path / "o" / "checkpoint.h5")
    assert sim.dt == dt and sim.restitution == 0.5
    series = read_timeseries(tmp_path / "o" / "series.csv")
    k = series["step"] + (sim.step_count - 200)  # the test starts after the preparation's steps
    np.testing.assert_allclose(series["time"], k * dt, rtol=1e-12)
    # the damping the run used gives e = 0.5 in a head-on collision of two of its spheres
    R = float(sim.radius.max())
    pair = Simulation(law="mindlin", E=sim.E, nu=sim.nu, mu=0.5, density=sim.density, dt=dt,
                      restitution=sim.restitution)
    pair.set_box((-20 * R, -20 * R, -20 * R), (20 * R, 20 * R, 20 * R), periodic=(True, True, True))
    pair.add_particles([[-R - 1e-3 * R, 0, 0], [R + 1e-3 * R, 0, 0]], [R, R], velocities=[[0.1, 0, 0], [-0.1, 0, 0]])
    pair.setup()
    assert pair.ctl[CTL_VISC] == sim.ctl[CTL_VISC]
    touched = False
    for _ in range(2000):
        pair.run(50)
        touched = touched or pair.pfs[0, S.F_DELTA] > 0.0
        if touched and pair.pfs[0, S.F_DELTA] <= 0.0 and pair.vel[1, 0] > pair.vel[0, 0]:
            break
    else:
        raise AssertionError("the collision did not finish")
    # e is exact for the continuous Hertz-damped collision; the time step (~100 steps per
    # collision here) and the free flight before contact leave well under 1 %
    assert (pair.vel[1, 0] - pair.vel[0, 0]) / 0.2 == pytest.approx(0.5, rel=0.01)
    # a dt above the critical step stops the run before it starts, naming the cause
    cfg["simulation"]["dt"] = 1e-3
    (tmp_path / "bad.toml").write_text(scenario_to_toml(cfg))
    capsys.readouterr()
    assert main(["run", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    assert "exceeds the critical time step" in capsys.readouterr().err


def test_graindem_run_adaptive_dt_announces_the_change_and_keeps_the_fraction(uninterrupted, tmp_path, capsys):
    shutil.copy(uninterrupted / "packing.h5", tmp_path / "packing.h5")
    (tmp_path / "run.toml").write_text(scenario_to_toml(_config(simulation={"adaptive_dt_interval": 50})))
    capsys.readouterr()
    assert main(["run", str(tmp_path / "run.toml"), "--out", str(tmp_path), "--steps", "200", "--adaptive-dt"]) == 0
    # the packing's dt was set for a generous reference overlap: the real contacts are softer
    assert "(was" in capsys.readouterr().out
    sim, extra = checkpoint.load(tmp_path / "checkpoint.h5")
    assert sim.adaptive_dt and extra["biaxial"]["config"]["simulation"]["adaptive_dt"]
    crit = _hand_dt_crit(sim.pos, sim.radius, sim.box_lengths, sim.E, sim.nu, sim.density)
    # the last update was 50 steps ago; the largest overlap (an extreme of a noisy set) moves by
    # ~10 % in that time at the start of loading, dt_crit ~ overlap^(-1/4) by ~3 %
    assert sim.dt / crit == pytest.approx(0.2, rel=0.05)
    sim.adapt_dt()  # what the next step would do: exactly the fraction of the hand value
    assert sim.dt / crit == pytest.approx(0.2, rel=1e-9)
    with pytest.raises(ValueError, match="adaptive_dt"):
        _config(simulation={"adaptive_dt": True, "dt": 1e-9})


@pytest.mark.parametrize("turn_per_step", [1e-5, 0.02])
def test_free_spin_orientation_is_the_exact_rotation(turn_per_step):
    """Torque-free spheres keep their spin, so after k steps the orientation is exactly the rotation by
    |omega| k dt about omega applied to the start (q <- exp(omega dt / 2) q, spatial spin): closed form
    (cos(theta/2), sin(theta/2) omega/|omega|) * q0. Two sizes of turn per step: the Taylor branch of
    core.rotations.turn_by_spin and the sine/cosine branch. Tolerance: one rounding per step, 2000 steps."""
    from graindem.core.rotations import quat_mul
    dt = 1e-6
    rng = np.random.default_rng(2)
    axes = rng.normal(size=(3, 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    wn = turn_per_step / dt * np.array([1.0, 0.5, 2.0])
    omega = axes * wn[:, None]
    sim = Simulation(law="mindlin", E=7e8, nu=0.25, mu=0.4, density=2500.0, gravity=(0, 0, 0), dt=dt)
    sim.set_box((0, 0, 0), (0.1, 0.1, 0.1))
    sim.add_particles([[0.02, 0.05, 0.05], [0.05, 0.05, 0.05], [0.08, 0.05, 0.05]], [1e-3] * 3,
                      angular_velocities=omega)
    sim.setup()
    q0 = rng.normal(size=(3, 4))
    q0 /= np.linalg.norm(q0, axis=1)[:, None]
    sim.quat[:] = q0
    steps = 2000
    sim.run(steps)
    for k in range(3):
        theta = wn[k] * steps * dt
        r = (math.cos(theta / 2), *(math.sin(theta / 2) * axes[k]))
        expected = np.array(quat_mul(*r, *q0[k]))
        np.testing.assert_allclose(sim.quat[k], expected, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(sim.omega[k], omega[k])
