"""A run gives the same bits whether numba compiled the kernels afresh or loaded them from its cache.

Why this is a test: a restart continues in a new process, which loads the cached kernels, while the
interrupted run may have compiled them itself. Session 2 met a build of the pair loop (two inlined
variants in one function) whose fresh and cached machine code rounded differently, so a run and its
restart parted after a few thousand steps, although every in-process restart test passed. Here a
child process compiles into an empty cache directory and a second child loads from it; both run the
same mixed sequence (servo compression with jaeger histories, then a sheared cell) and print state
hashes along the way, which must agree exactly.
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
    assert len([line for line in fresh if line]) == 5
    assert fresh == cached
