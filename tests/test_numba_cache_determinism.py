"""A run gives the same bits whether numba compiled the kernels afresh or loaded them from its cache.

Why this is a test: a restart continues in a new process, which loads the cached kernels, while the
interrupted run may have compiled them itself. If freshly compiled and cached machine code round
differently (as a pair loop with two inlined variants in one function can), a run and its restart
part after a few thousand steps although every in-process restart test passes. Here a
child process compiles into an empty cache directory and a second child loads from it; both run the
same mixed sequence (servo compression with jaeger histories, then a sheared cell, then spheres
sliding on walls) and print state hashes along the way, which must agree exactly. The cause such
runs guard against: numba links a copy of every callee into its caller, and a process that compiles
afresh runs each callee's own library while one that loads from the cache runs the caller's copy,
optimised apart (graindem._jit gives every library its own internal copies); the stage that exposes
it: a box with a moving lid, many rebuilds and sorting.
"""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import hashlib
    import numpy as np
    from graindem.engine.simulation import Simulation
    from graindem.engine import prepare
    rng = np.random.default_rng(7)
    n = 60
    r = 1.5e-4 * (1 + 0.2 * rng.uniform(-1, 1, n))
    L = (np.sum(4 / 3 * np.pi * r ** 3) / 0.3) ** (1 / 3)
    pos = prepare.random_gas(n, r, np.full(3, L), rng)
    sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.3, density=2650.0, local_damping=0.7,
                     restitution=0.5, reference_overlap=1e-7)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, r)
    sim.setup()
    for k in range(3):
        sim.control_axis(k, stress=1e5, gain=2e-5 / sim.dt, max_rate=2e-5 / sim.dt)

    def digest():
        h = hashlib.sha1()
        for a in (sim.pos, sim.vel, sim.omega, sim.pfs):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:16]

    for _ in range(3):
        sim.run(1500)
        print("servo", sim.step_count, digest())
    sim.control_shear("xy", 2e-3 / (1e4 * sim.dt))
    for _ in range(2):
        sim.run(1500)
        print("shear", sim.step_count, digest())

    # Walls (their passes are compiled apart from the pair passes): a layer of spinning, sliding
    # spheres squeezed between a floor and a lid and against side walls, in contact from the start.
    r0 = 1.5e-4
    m = 6
    L = 2 * r0 * m * 0.999
    xy = (np.arange(m) * 2 * r0 * 0.999 + r0 * 0.999)
    X, Y = np.meshgrid(xy, xy)
    pos = np.column_stack([X.ravel(), Y.ravel(), np.full(m * m, r0 * 0.999)])
    rad = r0 * (1 + 0.01 * rng.uniform(-1, 1, m * m))
    walled = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.3, density=2650.0, restitution=0.5,
                        local_damping=0.3, gravity=(0, 0, -9.81), reference_overlap=1e-7)
    walled.set_box((0, 0, 0), (L, L, 4 * r0))
    walled.add_wall((0, 0, 0), (0, 0, 1))
    walled.add_wall((0, 0, 2 * r0 * 0.998), (0, 0, -1))
    for k in range(2):
        walled.add_wall((0, 0, 0), np.eye(3)[k])
        walled.add_wall((L, L, 0), -np.eye(3)[k])
    walled.add_particles(pos, rad, velocities=rng.normal(0, 0.05, (m * m, 3)) * (1, 1, 0),
                         angular_velocities=rng.normal(0, 2000.0, (m * m, 3)))
    walled.setup()
    for _ in range(2):
        walled.run(1500)
        h = hashlib.sha1()
        for a in (walled.pos, walled.vel, walled.omega, walled.pfs, walled.wfs):
            h.update(np.ascontiguousarray(a).tobytes())
        print("walls", walled.step_count, walled.measure()["n_wall_contacts"], h.hexdigest()[:16])

    # A box of five fixed walls and a lid moving down, slanted strong gravity, particles sorted at
    # the many rebuilds (without graindem._jit's per-library copies a fresh and a cached process part
    # here at step 527, in the last bits of a pair frame, pcq, hashed with the rest).
    rng = np.random.default_rng(3)
    n = 300
    L = 0.012
    pos = np.column_stack([rng.uniform(0.0012, L - 0.0012, n), rng.uniform(0.0012, L - 0.0012, n),
                           rng.uniform(0.0006, 0.012, n)])
    rad = rng.uniform(0.00045, 0.00055, n)
    keep = []
    for k in range(n):
        if all(np.linalg.norm(pos[k] - pos[q]) > rad[k] + rad[q] for q in keep):
            keep.append(k)
    boxed = Simulation(law="mindlin", E=7e8, nu=0.25, mu=0.4, density=2500.0, restitution=0.6,
                       gravity=(800, 500, -5000), sort_particles=True)
    boxed.set_box((0, 0, 0), (L, L, 0.08))
    for p, nn in (((0, 0, 0), (1, 0, 0)), ((L, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                  ((0, L, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        boxed.add_wall(p, nn)
    boxed.add_wall((0, 0, 0.013), (0, 0, -1), velocity=(0, 0, -0.3))
    boxed.add_particles(pos[keep], rad[keep])
    for steps in (600, 900):
        boxed.run(steps)
        h = hashlib.sha1()
        for a in (boxed.pos, boxed.vel, boxed.omega, boxed.quat, boxed.pfs, boxed.pcq, boxed.wfs, boxed.walls):
            h.update(np.ascontiguousarray(a).tobytes())
        m = boxed.measure()
        print("lid", boxed.step_count, m["n_wall_contacts"], m["n_rebuilds"], h.hexdigest()[:16])
""")


def _run(cache_dir):
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env["GRAINDEM_NUMBA_CACHE"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split("\n")


@pytest.mark.slow
def test_fresh_compile_and_cached_kernels_give_identical_runs(tmp_path):
    fresh = _run(tmp_path)          # compiles everything into the empty directory
    assert any(tmp_path.rglob("*.nbi")), "the first run should have filled the numba cache"
    cached = _run(tmp_path)         # loads the same kernels from the cache
    lines = [line for line in fresh if line]
    assert len(lines) == 9
    # the walled stages must keep wall contacts (else they test no wall pass), the lid's stage must
    # rebuild (sorting the particles) on the way
    assert all(int(line.split()[2]) > 0 for line in lines if line.startswith(("walls", "lid")))
    assert all(int(line.split()[3]) > 10 for line in lines if line.startswith("lid"))
    assert fresh == cached
