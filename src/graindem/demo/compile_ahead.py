"""The biaxial part's numba kernels compiled on both cores while the contact-law part runs.

On a fresh machine most of `graindem demo` is numba compiling kernels, and numba compiles one
kernel at a time in one process. The sphere engine's time loop (`engine.loop.run_steps`) is
compiled with its callees, each a kernel of its own with its own entry in numba's on-disk cache;
the largest is the pair pass (`engine.pair_pass.pair_forces`, with its pass for every law: more
than half of the engine's compile time), then the wall pass. So the work is shared out:

- a second process, started with the demo, compiles the neighbour list and the pair pass by calling
  them on a small set-up packing (`compile_pair_pass`);
- the demo's own process runs the contact-law part (its own kernels), then compiles the random gas
  placement, the wall pass, the particle pass and the store's compaction the same way
  (`compile_setup_and_walls`), waits for the second process, and starts the biaxial part, which
  finds those kernels in the cache and compiles only the time loop around them and its small callees.

numba's on-disk cache is what hands the kernels over: a kernel is written there when compiled (by
an atomic rename, so processes may write at once) and looked up there by its argument types before
it is compiled, also when it is a callee of a kernel being compiled. The small packing's arrays have
the types of the demo's (the same set-up calls), so the lookups find what was compiled; anything a
lookup misses is compiled where it is needed, so a failure here costs only time.
"""

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

# The small packing the kernels are compiled on (its size does not change their types).
SPHERES = 64


def start():
    """Start the second process (compile_pair_pass); returns it, or None on a machine with one core
    (where it would only compete with the first process for that core)."""
    if (os.cpu_count() or 1) < 2:
        return None
    import graindem
    env = dict(os.environ)
    # the sources this process runs and the cache folder it chose (graindem._jit), whatever the
    # working directory and the environment of the second process would give
    src = str(Path(graindem.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = numba.config.CACHE_DIR
    return spawn(["-m", __name__], env)


def spawn(args, env=None):
    """`python args...` in a new process, its output kept in a temporary file (proc.log) for `wait`."""
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, *args], env=env, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    proc.log = log
    return proc


def wait(proc, say):
    """Wait for the second process to finish, saying so when it is not done yet; a failure is reported
    in one line (the first process then compiles what is missing itself)."""
    if proc is None:
        return
    if proc.poll() is None:
        say("   waiting for the second process to finish compiling the pair pass ...")
        t0 = time.perf_counter()
        proc.wait()
        say(f"   ... done after {time.perf_counter() - t0:.0f} s more")
    if proc.returncode != 0:
        proc.log.seek(0)
        lines = proc.log.read().strip().splitlines()
        say(f"   (the second process stopped with exit code {proc.returncode}: "
            f"{lines[-1] if lines else 'no message'}; compiling here instead)")
    proc.log.close()


def stop(proc):
    """End the second process if it still runs (the demo stopped or failed before waiting for it)."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.log.close()


def small_packing(n=SPHERES, seed=0, gas=True):
    """n spheres in a periodic cube set up as the demo's preparation sets its packing up (the same
    material and law, `Simulation.setup`), not run: a loose random gas placed as the preparation places
    it, or (gas=False) a cubic lattice, which compiles nothing to place the spheres."""
    from ..engine.prepare import random_gas
    from ..engine.simulation import Simulation
    from ..particles.size_distribution import Uniform
    from ..scenarios.biaxial import QUARTZ, RADIUS, SPREAD
    rng = np.random.default_rng(seed)
    r = Uniform(RADIUS, SPREAD).sample(n, rng)
    L = (np.sum(4.0 / 3.0 * np.pi * r ** 3) / 0.3) ** (1.0 / 3.0)
    if gas:
        pos = random_gas(n, r, np.full(3, L), rng)
    else:
        side = math.ceil(n ** (1.0 / 3.0))
        pos = (np.argwhere(np.ones((side,) * 3))[:n] + 0.5) * (L / side)
    sim = Simulation(law="mindlin", E=QUARTZ["E"], nu=QUARTZ["nu"], mu=0.1, density=QUARTZ["density"],
                     local_damping=0.7)
    sim.set_box((0.0, 0.0, 0.0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, r)
    sim.setup()
    return sim


def _prm():
    # the force passes' scratch record, as run_steps makes it
    from ..core.layout import N_PRM
    return np.full(N_PRM, -1.0)


def compile_pair_pass(sim=None):
    """Compile (or load) the pair pass by one call on a small packing; returns whether it ran."""
    from ..core.layout import ICTL_NPAIRS, PAIR_INDEX
    from ..engine.history import refresh_live
    from ..engine.pair_pass import ALL_STRESS_COMPONENTS, N_SC, pair_forces
    sim = small_packing(gas=False) if sim is None else sim
    cap = sim.pi.shape[0]
    live = np.empty(cap, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    st = sim.store
    return bool(pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, _prm(), sim.mtab,
                            sim.cell, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm,
                            st.pts, st.nxt, st.meta, sim.acc, sim.out, np.empty((cap, N_SC)),
                            np.empty(cap, dtype=PAIR_INDEX), live, sim.stress_limbs, ALL_STRESS_COMPONENTS))


def compile_setup_and_walls(sim=None):
    """Compile (or load) the random gas placement and the neighbour list (small_packing), the wall pass,
    the particle pass and the history store's compaction (one call each); returns whether the wall pass
    ran."""
    from ..boundaries.walls import wall_forces
    from ..engine.history import compact_on_schedule
    from ..core.exact_sum import new_accumulator
    from ..engine.integration import advance_particles
    from ..engine.pair_pass import ALL_STRESS_COMPONENTS
    sim = small_packing() if sim is None else sim
    st = sim.store
    ok = bool(wall_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, _prm(), sim.mtab,
                          sim.ctl, sim.ictl, sim.walls, sim.wcand, sim.wfs, sim.wist, sim.wcq, sim.wk, sim.wm,
                          st.pts, st.nxt, st.meta, sim.acc, sim.out, sim.stress_limbs,
                          new_accumulator(3 * sim.walls.shape[0]), ALL_STRESS_COMPONENTS))
    advance_particles(sim.pos, sim.vel, sim.omega, sim.quat, sim.force, sim.torque, sim.mass, sim.inertia, sim.cell,
                      sim.ctl, sim.ictl, sim.pos_build, sim.acc, sim.out)
    compact_on_schedule(sim.ictl, sim.pist, sim.wist, st.pts, st.nxt, st.meta)
    return ok


if __name__ == "__main__":
    compile_pair_pass()
