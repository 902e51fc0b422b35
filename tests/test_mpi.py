"""Spheres decomposed over 2 MPI ranks (graindem.parallel) against the serial run.

The MPI runs are child processes started with the MPI launcher (mpiexec of the environment, with
--oversubscribe for Open MPI: more ranks than free cores); the serial reference runs in this
process. A periodic box of 300 spheres, squeezed so that they overlap, with random velocities:
contacts open and close across the subdomain and periodic boundaries, Jäger histories grow, and
the neighbour list is rebuilt (with migration) several times in 300 steps. Stop requests that
reach one rank only and a divergence found by one rank only must stop every rank at the same step,
as the serial run stops.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import graindem
from graindem.contact import state as S
from graindem.core.cell import CELL_GAMMA, CELL_INTEGRAL, CELL_L, CELL_TILT
from graindem.core.layout import (ACC_BOUNDARY_WORK, ACC_DISS_RELEASED, ACC_LOCAL_WORK, ACC_VISC_WORK, ICTL_NPAIRS,
                                  ICTL_NREBUILDS, ICTL_NWCAND)
from graindem.engine import checkpoint
from graindem.engine.simulation import Simulation
from graindem.parallel.bisection import Bisection
from graindem.parallel.subdomain import check_decomposable
from graindem.parallel.world import launcher

SRC = Path(graindem.__file__).resolve().parents[1]
SCENARIO = Path(graindem.__file__).resolve().parent / "scenarios" / "biaxial.toml"

# the same case in this process and in the MPI children (the children import this text)
CASE = textwrap.dedent('''
    import numpy as np
    from graindem.engine.prepare import random_gas
    from graindem.engine.simulation import Simulation

    def build(n=300, law="jaeger", seed=1, **options):
        rng = np.random.default_rng(seed)
        r = rng.uniform(0.8, 1.2, n) * 1e-3
        L = (np.sum(4.0 / 3.0 * np.pi * r ** 3) / 0.35) ** (1.0 / 3.0)
        pos = random_gas(n, r, np.full(3, L), rng)
        sim = Simulation(law=law, E=70e9, nu=0.25, mu=0.5, density=2500.0, local_damping=0.1,
                         max_initial_overlap=0.5, dt_fraction=0.2, **options)
        sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
        # radii grown after placement: overlaps up to 12 % push the spheres apart
        sim.add_particles(pos, 1.12 * r, velocities=rng.normal(0.0, 0.05, (n, 3)))
        return sim

    def stretch(sim):
        """The periodic cell squeezed along y and stretched along x and z by prescribed strain rates."""
        sim.control_axis(0, strain_rate=100.0)
        sim.control_axis(1, strain_rate=-200.0)
        sim.control_axis(2, strain_rate=100.0)
        return sim

    def stretched():
        """stretch() with viscous damping, energy accounting and the time step adapted every 40 steps:
        the viscous work and the dissipation of the rows that leave the list are sums over the
        ranks, and the step follows the largest overlap of all ranks."""
        sim = stretch(build(restitution=0.3, energy_accounting=True))
        sim.set_adaptive_dt(True, 40)
        return sim

    def biaxial(sim):
        """A periodic biaxial test: x and z held at 5 MPa by the stress servo, y squeezed at 200/s."""
        sim.setup()
        rate = 2e-5 / sim.dt
        sim.control_axis(0, stress=5e6, gain=rate, max_rate=rate, integral_steps=200)
        sim.control_axis(1, strain_rate=-200.0)
        sim.control_axis(2, stress=5e6, gain=rate, max_rate=rate, integral_steps=200)
        return sim

    def walled(n=300, seed=2):
        """A box of four fixed walls, a lid moving down at 20 m/s and a wall (+x side) under a servo
        to a force smaller than the slanted gravity pushes it with: the spheres, placed in a periodic
        cube with the walls 1 mm outside it, start against the walls and each other (radii grown
        after placement) and are squeezed; wall rows cross the subdomain boundaries and travel with
        their spheres, with their rolling and twisting state; the servo reads the ranks' summed
        wall force."""
        rng = np.random.default_rng(seed)
        r = rng.uniform(0.8, 1.2, n) * 1e-3
        L = (np.sum(4.0 / 3.0 * np.pi * r ** 3) / 0.35) ** (1.0 / 3.0)
        pos = random_gas(n, r, np.full(3, L), rng)
        sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.5, density=2500.0, local_damping=0.1,
                         max_initial_overlap=0.5, dt_fraction=0.2, gravity=(2e4, 1e4, -5e4), restitution=0.5,
                         energy_accounting=True, rolling=0.1, twisting=True)
        lo, hi = np.full(3, -1e-3), np.full(3, L + 1e-3)
        sim.set_box(lo, hi)
        for k in range(3):
            sim.add_wall(lo, np.eye(3)[k])
            if k == 1:
                sim.add_wall(hi, -np.eye(3)[k])
            elif k == 0:
                sim.add_wall(hi, -np.eye(3)[k], force=20.0, servo_gain=1.0, max_speed=5.0)
        sim.add_wall(hi, (0.0, 0.0, -1.0), velocity=(0.0, 0.0, -20.0))
        sim.add_particles(pos, 1.12 * r, velocities=rng.normal(0.0, 0.05, (n, 3)))
        return sim

    def shear(sim):
        """A periodic shear test: y held at 5 MPa by the stress servo, the cell sheared in the xy
        plane at 10^4/s, fast enough for its tilt to pass half a cell length and flip in 600 steps."""
        sim.setup()
        rate = 2e-5 / sim.dt
        sim.control_axis(1, stress=5e6, gain=rate, max_rate=rate, integral_steps=200)
        sim.control_shear("xy", 1e4)
        return sim
''')
namespace = {}
exec(CASE, namespace)
build = namespace["build"]
stretched = namespace["stretched"]
biaxial = namespace["biaxial"]
shear = namespace["shear"]
walled = namespace["walled"]


needs_mpi = pytest.mark.skipif(launcher(2) is None, reason="no MPI launcher (mpiexec) with mpi4py in this "
                               "environment: pip install 'graindem[mpi]' installs both")


def _mpirun(tmp_path, script, ranks=2, check=True):
    path = tmp_path / "child.py"
    path.write_text(CASE + textwrap.dedent(script))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("NUMBA_NUM_THREADS", "1")
    argv, env = launcher(ranks, env)
    proc = subprocess.run(argv + [sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"mpiexec failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def _histories(sim):
    m = int(sim.ictl[ICTL_NPAIRS])
    return [sim.store.points(h) for h in sim.pist[:m, S.I_HEAD]]


def _wall_histories(sim):
    m = int(sim.ictl[ICTL_NWCAND])
    return [sim.store.points(h) for h in sim.wist[:m, S.I_HEAD]]


def assert_same_run(sim, ref):
    """The state of `sim` equals that of the serial `ref` bit for bit, the time step and every sum in
    acc included (the stress sum, the walls' forces, the boundary and viscous work, the dissipation
    of the rows that left the list), except the local damping work (summed per rank, then over ranks
    in rank order) and the store's point numbering."""
    a, _ = sim.state_dict()
    b, _ = ref.state_dict()
    for name in ("pos", "vel", "omega", "quat", "pos_build", "cell", "ctl", "ictl", "pstart"):
        assert np.array_equal(a[name], b[name]), name
    m = int(ref.ictl[ICTL_NPAIRS])
    for name in ("pi", "pj", "pfs", "pcq"):
        assert np.array_equal(a[name][:m], b[name][:m]), name
    assert np.array_equal(a["pist"][:m, S.I_LEN], b["pist"][:m, S.I_LEN])
    assert _histories(sim) == _histories(ref)
    # the wall rows (none in a periodic box), the walls and their forces
    assert np.array_equal(a["walls"], b["walls"])
    mw = int(ref.ictl[ICTL_NWCAND])
    for name in ("wcand", "wfs", "wcq"):
        assert np.array_equal(a[name][:mw], b[name][:mw]), name
    assert np.array_equal(a["wist"][:mw, S.I_LEN], b["wist"][:mw, S.I_LEN])
    assert _wall_histories(sim) == _wall_histories(ref)
    if "prs" in b:  # rolling and twisting state, and the energy of the rows that left the list
        assert np.array_equal(a["prs"][:m], b["prs"][:m])
        assert np.array_equal(a["wrs"][:mw], b["wrs"][:mw])
        assert np.array_equal(a["rrel"], b["rrel"])
    exact = np.arange(b["acc"].size) != ACC_LOCAL_WORK
    assert np.array_equal(a["acc"][exact], b["acc"][exact])
    assert a["acc"][ACC_LOCAL_WORK] == pytest.approx(b["acc"][ACC_LOCAL_WORK], rel=1e-12)
    assert sim.time == ref.time


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """The folder of the runs on 2 ranks the tests below compare (one MPI launch)."""
    tmp_path = tmp_path_factory.mktemp("two_ranks")
    half = build()
    half.run(150)
    checkpoint.save(half, tmp_path / "serial150.h5")
    _mpirun(tmp_path, '''
        from graindem.engine import checkpoint
        sim = build()
        sim.mpi_rebalance_every = 2  # the boxes bisected again every other rebuild
        sim.run(150)
        checkpoint.save(sim, "ranks150.h5")
        sim.run(150)
        checkpoint.save(sim, "ranks300.h5")
        # stop requests: a SIGTERM that only rank 0 receives, in a callback (the serial run stops
        # after it) and, through the run's stop flag, inside a chunk: every rank stops at the same step
        import os, signal
        from mpi4py import MPI
        from graindem.engine.interrupts import RunStopped
        from graindem.parallel.subdomain import run_decomposed
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        stopped = build()
        def kill_at_100(s):
            if rank == 0 and s.step_count == 100:
                os.kill(os.getpid(), signal.SIGTERM)
        steps = []
        try:
            stopped.run(300, callback=kill_at_100, every=50)
        except RunStopped as exc:
            steps.append((exc.step, stopped.step_count, exc.signal))
        class RequestAtCheck38:  # rank 0's flag set at its 38th check, within a chunk of 100 steps
            checks = 0
            @property
            def flag(self):
                self.checks += 1
                return signal.SIGINT if rank == 0 and self.checks >= 38 else None
        try:
            run_decomposed(stopped, comm, 150, None, 100, 0, stops=RequestAtCheck38())
        except RunStopped as exc:
            steps.append((exc.step, stopped.step_count, exc.signal))
        open(f"stops{rank}.txt", "w").write(repr(steps))
        stopped.run(300 - stopped.step_count)
        checkpoint.save(stopped, "stopped300.h5")
        restarted, _ = checkpoint.load("serial150.h5")
        restarted.run(150)
        checkpoint.save(restarted, "serial150_ranks300.h5")
        tiny = Simulation()
        tiny.set_box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), periodic=(True, True, True))
        tiny.add_particles([[0.5, 0.5, 0.5]], 0.01)
        try:
            tiny.run(10)
        except ValueError as exc:
            from mpi4py import MPI
            if MPI.COMM_WORLD.Get_rank() == 0:
                open("refused.txt", "w").write(str(exc))
        cell = stretched()
        cell.run(100)
        checkpoint.save(cell, "cell100.h5")
        cell.run(100)
        checkpoint.save(cell, "cell200.h5")
        servo = biaxial(build())
        servo.run(600)
        checkpoint.save(servo, "servo600.h5")
        servo.run(600)
        checkpoint.save(servo, "servo1200.h5")
        box = walled()
        box.run(150)
        checkpoint.save(box, "walled150.h5")
        box.run(150)
        checkpoint.save(box, "walled300.h5")
        sheared = shear(build())
        sheared.run(1)  # gathered before the first rebuild in the sheared cell (its list built untilted)
        sheared.run(299)
        checkpoint.save(sheared, "shear300.h5")
        sheared.run(300)
        checkpoint.save(sheared, "shear600.h5")
    ''')
    return tmp_path


@pytest.fixture(scope="module")
def three_ranks(two_ranks, tmp_path_factory):
    """The folder of runs written on 2 ranks and continued on 3 (one MPI launch)."""
    tmp_path = tmp_path_factory.mktemp("three_ranks")
    _mpirun(tmp_path, f'''
        from graindem.engine import checkpoint
        for name, steps in (("cell100", 100), ("walled150", 150)):
            sim, _ = checkpoint.load({str(two_ranks)!r} + "/" + name + ".h5")
            sim.run(steps)
            checkpoint.save(sim, name + "_3ranks.h5")
    ''', ranks=3)
    return tmp_path


@needs_mpi
def test_two_ranks_run_the_serial_trajectory_stop_together_restart_across_rank_counts_and_refuse_more_ranks_than_spheres(two_ranks):
    tmp_path = two_ranks
    assert "2 MPI ranks for 1 spheres" in (tmp_path / "refused.txt").read_text()
    ref = build()
    ref.run(300)
    assert ref.measure()["n_rebuilds"] >= 5  # bodies and rows migrated several times
    assert ref.measure()["mean_history_length"] > 1.0
    decomposed, _ = checkpoint.load(tmp_path / "ranks300.h5")
    assert_same_run(decomposed, ref)
    assert decomposed.ictl[ICTL_NREBUILDS] == ref.ictl[ICTL_NREBUILDS]
    m, r = decomposed.measure(), ref.measure()
    for key in ("pressure", "kinetic_energy", "n_contacts", "coordination", "mean_history_length"):
        assert m[key] == r[key], key
    # stopped by requests on rank 0 only, at the same step on both ranks, then continued
    for rank in (0, 1):
        assert (tmp_path / f"stops{rank}.txt").read_text() == "[(100, 100, 15), (138, 138, 2)]"
    assert_same_run(checkpoint.load(tmp_path / "stopped300.h5")[0], ref)
    # written on 2 ranks, continued on 1
    one, _ = checkpoint.load(tmp_path / "ranks150.h5")
    one.run(150)
    assert_same_run(one, ref)
    # written on 1 rank, continued on 2
    two, _ = checkpoint.load(tmp_path / "serial150_ranks300.h5")
    assert_same_run(two, ref)


@needs_mpi
def test_a_stretched_cell_with_viscous_damping_energy_accounting_and_adaptive_dt_runs_the_serial_trajectory_on_2_ranks_and_continues_on_1_and_3(  # noqa: E501
        two_ranks, three_ranks):
    ref = stretched()
    ref.setup()
    dt0 = ref.dt
    ref.run(200)
    m = ref.measure()
    assert m["n_rebuilds"] >= 5 and m["mean_history_length"] > 1.0
    assert ref.cell[CELL_L + 1] < 0.999 * ref.cell[CELL_L]  # the cell deformed
    work = ref.acc[ACC_BOUNDARY_WORK]
    assert work != 0.0
    # the sums over the ranks are there to compare: viscous work, dissipation of rows that left the
    # list, a time step adapted away from the first one
    assert ref.acc[ACC_VISC_WORK] > 0.0 and ref.acc[ACC_DISS_RELEASED] > 0.0
    assert ref.dt != dt0
    one, _ = checkpoint.load(two_ranks / "cell100.h5")
    one.run(100)  # written on 2 ranks, continued on 1
    for sim in (checkpoint.load(two_ranks / "cell200.h5")[0], one, checkpoint.load(three_ranks / "cell100_3ranks.h5")[0]):
        assert_same_run(sim, ref)


@needs_mpi
def test_a_biaxial_stress_servo_runs_the_serial_trajectory_on_2_ranks_and_continues_on_1(two_ranks):
    # the servo reads the stress sum every step; summed in floating point per rank and then over
    # the ranks, this case left the serial trajectory by 1e-5 within 150 steps
    ref = biaxial(build())
    start = ref.cell[CELL_L:CELL_L + 3].copy()
    ref.run(600)
    half = ref.state_dict()
    ref.run(600)
    m = ref.measure()
    assert m["n_rebuilds"] >= 5 and m["mean_history_length"] > 1.0
    strain = ref.cell[CELL_L:CELL_L + 3] / start - 1.0
    assert strain[1] < -0.02 and abs(strain[0]) > 1e-3 and abs(strain[2]) > 1e-3  # the servo moved x and z
    assert np.all(ref.cell[CELL_INTEGRAL:CELL_INTEGRAL + 3:2] != 0.0)
    assert_same_run(checkpoint.load(two_ranks / "servo1200.h5")[0], ref)
    one, _ = checkpoint.load(two_ranks / "servo600.h5")  # written on 2 ranks, continued on 1
    assert np.array_equal(one.state_dict()[0]["pos"], half[0]["pos"])
    one.run(600)
    assert_same_run(one, ref)


@needs_mpi
def test_a_sheared_cell_runs_the_serial_trajectory_across_a_tilt_flip_on_2_ranks_and_continues_on_1(two_ranks):
    ref = shear(build())
    ref.run(300)
    half = ref.state_dict()
    ref.run(300)
    m = ref.measure()
    assert m["n_rebuilds"] >= 5 and m["mean_history_length"] > 1.0
    # the tilt passed half a cell length after step 300 and was flipped back (to about -L/2)
    assert 0.0 < half[0]["cell"][CELL_TILT] <= 0.5 * half[0]["cell"][CELL_L]
    assert ref.cell[CELL_TILT] < 0.0 and ref.cell[CELL_GAMMA] > 0.5
    assert_same_run(checkpoint.load(two_ranks / "shear600.h5")[0], ref)
    one, _ = checkpoint.load(two_ranks / "shear300.h5")  # written on 2 ranks, continued on 1
    assert np.array_equal(one.state_dict()[0]["pos"], half[0]["pos"])
    one.run(300)
    assert_same_run(one, ref)


@needs_mpi
def test_a_walled_box_with_a_moving_lid_and_a_servo_wall_runs_the_serial_trajectory_on_2_ranks_and_continues_on_1_and_3(  # noqa: E501
        two_ranks, three_ranks):
    ref = walled()
    ref.setup()
    lid = ref.walls[5, 2]
    servo_x = ref.walls[1, 0]
    ref.run(150)
    half = ref.state_dict()
    ref.run(150)
    m = ref.measure()
    assert m["n_rebuilds"] >= 3 and m["n_wall_contacts"] >= 20
    assert ref.walls[5, 2] < lid and ref.acc[ACC_BOUNDARY_WORK] != 0.0  # the lid moved and worked
    assert ref.walls[1, 0] != servo_x  # the servo wall moved
    assert ref.acc[ACC_VISC_WORK] > 0.0  # viscous damping in pair and wall rows
    assert m["rolling_energy"] > 0.0 and ref.rrel[0] > 0.0  # rolling state, and rows that left with some
    assert max(len(h) for h in _wall_histories(ref)) >= 2  # Jäger histories of wall contacts
    one, _ = checkpoint.load(two_ranks / "walled150.h5")  # written on 2 ranks, continued on 1
    assert np.array_equal(one.state_dict()[0]["wfs"], half[0]["wfs"])
    one.run(150)
    for sim in (checkpoint.load(two_ranks / "walled300.h5")[0], one,
                checkpoint.load(three_ranks / "walled150_3ranks.h5")[0]):
        assert_same_run(sim, ref)


CLI_CONFIG = {
    "simulation": {"scenario": "biaxial", "steps": 3000, "output_interval": 50, "checkpoint_interval": 100,
                   "seed": 4},
    "contact": {"law": "jaeger"},
    "particles": {"n": 100, "radius_mean": 1.5e-4},
    "loading": {"kind": "biaxial", "total_strain": 0.015, "preparation_mu": 0.1},
    "material": {"damping": 0.1},
    "output": {"vtk": False, "plots": False},
}


def _cli_state(path):
    arrays, _ = checkpoint.load(path)[0].state_dict()
    return arrays


@needs_mpi
def test_mpirun_graindem_run_writes_the_serial_outputs_and_restarts_on_another_rank_count(tmp_path):
    import shutil
    from graindem.cli import main
    from graindem.io.scenario import scenario_to_toml, validate_scenario
    toml = tmp_path / "run.toml"
    toml.write_text(scenario_to_toml(validate_scenario(CLI_CONFIG)))
    serial = tmp_path / "serial"
    assert main(["run", str(toml), "--out", str(serial), "--steps", "200", "--quiet"]) == 0
    # the biaxial test (stress servo on x) on 2 ranks for 100 steps, then on 1 rank to step 200
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copy(serial / "packing.h5", ranks / "packing.h5")
    _mpirun(tmp_path, f'''
        from graindem.cli import main
        raise SystemExit(main(["run", {str(toml)!r}, "--out", {str(ranks)!r}, "--steps", "100", "--quiet"]))
    ''')
    assert sorted(p.name for p in ranks.iterdir()) == sorted(p.name for p in serial.iterdir())
    head = (serial / "series.csv").read_text().splitlines()
    assert (ranks / "series.csv").read_text().splitlines() == head[:len(head) // 2 + 1]
    assert main(["run", "--restart", str(ranks / "checkpoint.h5"), "--out", str(ranks), "--steps", "100",
                 "--quiet"]) == 0
    # and the reverse: 100 steps on 1 rank, continued on 2
    back = tmp_path / "back"
    back.mkdir()
    shutil.copy(serial / "packing.h5", back / "packing.h5")
    assert main(["run", str(toml), "--out", str(back), "--steps", "100", "--quiet"]) == 0
    _mpirun(tmp_path, f'''
        from graindem.cli import main
        raise SystemExit(main(["run", "--restart", {str(back / "checkpoint.h5")!r}, "--out", {str(back)!r},
                               "--steps", "100", "--quiet"]))
    ''')
    ref = _cli_state(serial / "checkpoint.h5")
    for out in (ranks, back):
        assert (out / "series.csv").read_text() == (serial / "series.csv").read_text()
        state = _cli_state(out / "checkpoint.h5")
        for name in ("pos", "vel", "omega", "quat", "cell", "ictl"):
            assert np.array_equal(state[name], ref[name]), name
        exact = np.arange(ref["acc"].size) != ACC_LOCAL_WORK  # the damping work: summed per rank
        assert np.array_equal(state["acc"][exact], ref["acc"][exact])
        assert state["acc"][ACC_LOCAL_WORK] == pytest.approx(ref["acc"][ACC_LOCAL_WORK], rel=1e-12)
        summary = json.loads((out / "summary.json").read_text())
        expect = json.loads((serial / "summary.json").read_text())
        for key in expect:
            if key != "runtime_s" and "rate" not in key and "steps_per" not in key:
                assert summary[key] == expect[key], key


def test_bad_decompositions_are_refused_with_the_reason():
    sim = build(n=40)
    sim.setup()
    with pytest.raises(ValueError, match="3 MPI ranks for 2 bodies"):
        Bisection(np.random.default_rng(0).random((2, 3)), np.arange(2), 3, np.ones(3))

    def one_wall(**options):
        sim = Simulation(**options)
        sim.set_box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
        sim.add_wall((0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
        sim.add_particles([[0.5, 0.5, 0.5], [0.2, 0.2, 0.2]], 0.01)
        sim.setup()
        return sim

    with pytest.raises(ValueError, match=r"sort_particles=True does not run decomposed"):
        check_decomposable(one_wall(sort_particles=True), 2)
    # walls, viscous damping, energy accounting, an adapted time step and rolling resistance run decomposed
    check_decomposable(one_wall(restitution=0.5, energy_accounting=True, adaptive_dt=True, rolling=0.1), 2)
    with pytest.raises(ValueError, match="41 MPI ranks for 40 spheres"):
        check_decomposable(sim, 41)
    sim.control_axis(0, stress=1e5)
    check_decomposable(sim, 2)  # the stress servo runs decomposed
    sim.control_axis(0, strain_rate=1.0)
    check_decomposable(sim, 2)  # so do prescribed strain rates
    sim.control_shear("xy", 1.0)
    check_decomposable(sim, 2)  # and a sheared cell
    # bodies crowded near x = 0: the median cut leaves a box thinner than the halo
    frac = np.random.default_rng(1).random((100, 3))
    frac[:, 0] *= 0.05
    tree = Bisection(frac, np.arange(100), 2, np.array([3.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="subdomain of MPI rank 0 is .* thinner than the halo"):
        tree.check_thickness(0.5)


def test_bisection_balances_counts_and_finds_every_halo_neighbour():
    rng = np.random.default_rng(2)
    frac = rng.random((1000, 3))
    lengths = np.array([2.0, 1.0, 1.0])
    tree = Bisection(frac, np.arange(1000), 4, lengths)
    owner = tree.owner(frac)
    assert sorted(np.bincount(owner)) == [250, 250, 250, 250]
    lo, hi = tree.boxes[owner, 0], tree.boxes[owner, 1]
    assert np.all((frac >= lo) & (frac < hi))
    # brute force: a point is within the halo of a box iff some point of the box's bodies' region
    # (sampled densely) lies within the halo of its periodic images
    halo = 0.15
    near = tree.halo_ranks(frac, (True, True, True), halo)
    for r in range(4):
        b = tree.boxes[r]
        # nearest point of box r to each position, image by image
        best = np.full(1000, np.inf)
        for sx in (-1, 0, 1):
            for sy in (-1, 0, 1):
                for sz in (-1, 0, 1):
                    f = frac + np.array([sx, sy, sz])
                    q = np.clip(f, b[0], b[1])
                    best = np.minimum(best, np.linalg.norm((f - q) * lengths, axis=1))
        assert np.array_equal(near[:, r], best < halo)


def test_in_a_tilted_cell_the_halo_holds_every_body_within_its_distance_of_a_box():
    from graindem.core.cell import cell_heights
    from graindem.parallel.subdomain import cell_sizes
    L = np.array([2.0, 1.5, 1.0])
    tilts = np.array([0.9, -0.4, 0.45])  # near the flip limits: faces far from orthogonal
    cell = np.zeros(27)
    cell[CELL_L:CELL_L + 3] = L
    cell[CELL_TILT:CELL_TILT + 3] = tilts
    heights, tilted = cell_sizes(cell)
    assert tilted and np.array_equal(heights, cell_heights(L, tilts))
    h = np.diag(L)
    h[1, 0], h[2, 0], h[2, 1] = tilts
    # the heights: the cell's volume over the area of the face spanned by the two other vectors
    for k in range(3):
        face = np.linalg.norm(np.cross(h[(k + 1) % 3], h[(k + 2) % 3]))
        assert heights[k] == pytest.approx(np.prod(L) / face, rel=1e-14)
    rng = np.random.default_rng(3)
    frac = rng.random((250, 3))
    tree = Bisection(frac, np.arange(250), 4, heights)
    halo = 0.2
    near = tree.halo_ranks(frac, (True, True, True), halo, tilted=True)
    # brute force: the distance to a box sampled on a grid of its fractional coordinates, through
    # every image (whole shifts of the fractional coordinates), is at least the true distance
    grid = np.stack(np.meshgrid(*[np.linspace(0.0, 1.0, 11)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    shifts = np.array([[a, b, c] for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)], dtype=float)
    for r in range(4):
        lo, hi = tree.boxes[r]
        box = (lo + grid * (hi - lo)) @ h
        best = np.full(250, np.inf)
        for s in shifts:
            p = (frac + s) @ h
            d2 = ((p[:, None, :] - box[None, :, :]) ** 2).sum(axis=2)
            best = np.minimum(best, np.sqrt(d2.min(axis=1)))
        within = best < halo
        assert within.sum() > 10 and np.all(near[within, r])
        assert not near[:, r].all()  # and not every body


DIVERGING = textwrap.dedent('''
    def diverging():
        """Eight spheres at rest in a periodic box but one pair, in rank 1's half, colliding head-on
        at 100 m/s with a time step far beyond the stable one: the pair bounces apart with the energy
        the unstable step adds, one of its spheres crosses the periodic face into rank 0's half and
        drives sphere 0 into sphere 1 beyond diverge_overlap (found by rank 0 only)."""
        R = 1e-3
        sim = Simulation(law="linear", E=70e9, nu=0.25, density=2500.0, dt=2e-6, allow_unstable_dt=True)
        sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01), periodic=(True, True, True))
        pos = [[-0.008, 0.0, 0.0], [-0.005, 0.0, 0.0], [-0.002, 0.0, 0.0], [-0.008, 0.005, 0.0],
               [0.005 - R - 1e-6, 0.0, 0.0], [0.005 + R + 1e-6, 0.0, 0.0], [0.008, 0.005, 0.0], [0.008, -0.005, 0.0]]
        vel = np.zeros((8, 3))
        vel[4, 0], vel[5, 0] = 50.0, -50.0
        sim.add_particles(pos, [R] * 8, velocities=vel)
        return sim

    def diverging_at_walls():
        """Eight spheres at rest in a box of four walls, x = -+10 mm (walls 0, 1), y = -+10 mm
        (walls 2, 3): sphere 1 (x < 0) overlaps wall 3 and sphere 5 (x > 0) wall 2 by 0.2 R, beyond
        diverge_overlap; each rank finds one, and the serial wall pass stops at the first row in
        its key order (sphere, then wall): sphere 1's."""
        R = 1e-3
        sim = Simulation(law="linear", E=70e9, nu=0.25, density=2500.0, max_initial_overlap=0.5,
                         diverge_overlap=0.1)
        sim.set_box((-0.01, -0.01, -0.01), (0.01, 0.01, 0.01))
        for k in range(2):
            sim.add_wall((-0.01, -0.01, 0.0), np.eye(3)[k])
            sim.add_wall((0.01, 0.01, 0.0), -np.eye(3)[k])
        pos = [[-0.008, 0.0, 0.0], [-0.005, 0.01 - 0.8 * R, 0.0], [-0.002, 0.0, 0.0], [-0.008, 0.005, 0.0],
               [0.002, 0.0, 0.0], [0.005, -0.01 + 0.8 * R, 0.0], [0.008, 0.005, 0.0], [0.008, -0.005, 0.0]]
        sim.add_particles(pos, [R] * 8)
        return sim
''')
exec(DIVERGING, namespace)


@needs_mpi
def test_a_divergence_found_by_one_rank_stops_every_rank_names_the_serial_contact_and_calls_on_diverge(tmp_path):
    from graindem.engine.simulation import Diverged
    _mpirun(tmp_path, DIVERGING + textwrap.dedent('''
        from mpi4py import MPI
        from graindem.engine import checkpoint
        from graindem.engine.simulation import Diverged
        rank = MPI.COMM_WORLD.Get_rank()
        sim = diverging()
        calls = []
        def save(s):
            calls.append(s.step_count)
            checkpoint.save(s, "diverged.h5")
            return "diverged.h5"
        try:
            sim.run(1000, on_diverge=save)
        except Diverged as exc:
            open(f"diverged{rank}.txt", "w").write(repr((str(exc), exc.particles, exc.contacts, calls)))
        try:
            diverging_at_walls().run(10)
        except Diverged as exc:
            open(f"wall_diverged{rank}.txt", "w").write(repr((str(exc), exc.particles, exc.contacts)))
    '''))
    ref = namespace["diverging"]()
    with pytest.raises(Diverged) as info:
        ref.run(1000)
    serial = info.value
    assert serial.contacts == [(0, 1)] and ref.step_count == 6
    for rank in (0, 1):
        text = (tmp_path / f"diverged{rank}.txt").read_text()
        assert text == repr((str(serial) + "; checkpoint written to diverged.h5", serial.particles, serial.contacts,
                             [ref.step_count]))
    written, _ = checkpoint.load(tmp_path / "diverged.h5")
    assert written.step_count == ref.step_count
    # the spheres of the rank that found the fault are where the serial run left them
    assert np.array_equal(written.pos[:4], ref.pos[:4])
    # faults in the wall pass on both ranks: the serial run's first, named as it names it
    with pytest.raises(Diverged) as info:
        namespace["diverging_at_walls"]().run(10)
    serial = info.value
    assert "particle 1 and wall 3" in str(serial) and serial.contacts == [(1, -4)]
    for rank in (0, 1):
        assert (tmp_path / f"wall_diverged{rank}.txt").read_text() == repr((str(serial), serial.particles,
                                                                           serial.contacts))
