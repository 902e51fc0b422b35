"""`graindem demo` on two cores: the numba kernels compiled once each, shared out between two
processes, and the contact-law part run beside the biaxial test.

On a fresh machine most of `graindem demo` is numba compiling kernels, and numba compiles one
kernel at a time in one process. Every force pass of the sphere engine calls the per-contact
dispatcher `contact.laws.contact_step` (the law with energy accounting), so that kernel, which the
contact-law part uses too, is compiled first, and only once; the largest kernel after it is the
Jäger force pass (`engine.pair_pass.pair_force_pass_jaeger`, the law inlined in the loop). The two
processes share the work so that neither waits long and none of it is done twice:

- the demo's own process compiles `contact_step` (one step of a single Jäger contact) and tells
  the second process so, then compiles the Jäger force pass and tells it again, then waits for it
  and runs the biaxial test (which compiles only the time loop around the cached kernels);
- the second process, started with the demo, first compiles what needs neither (the random gas
  placement and the neighbour list on a small packing, the particle pass, the history store's
  compaction, the rolling pass and the servos), waits for the first word, compiles the wall pass
  and the other parts of the pair pass (kinematics and the force passes of the other laws), waits
  for the second word, compiles the pair pass itself (whose callees are all in the cache), says it
  is ready and then runs the contact-law part, whose kernels are all in the cache by then, while
  the first process runs the biaxial test. Its report is printed after the biaxial test's.

numba's on-disk cache is what hands the kernels over: a kernel is written there when compiled (by
an atomic rename, so processes may write at once) and looked up there by its argument types before
it is compiled, also when it is a callee of a kernel being compiled. The small packing's arrays have
the types of the demo's (the same set-up calls), so the lookups find what was compiled; anything a
lookup misses is compiled where it is needed, and a second process that fails or ends early leaves
its part to the first: a failure here costs only time.

The words go through pipes: the first process writes a line on the second's standard input for
each, the second writes READY on its standard output (its own printing goes to a log). A closed
pipe (the other process ended) counts as the word, so neither waits for a process that is gone.
"""

import math
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

# The small packing the kernels are compiled on (its size does not change their types).
SPHERES = 64
# What the second process writes on its standard output once the pair pass is in the cache.
READY = "pair pass compiled"


def start(contact_out=None):
    """Start the second process (main); returns it, or None on a machine with one core (where it
    would only compete with the first process for that core). contact_out: the folder the second
    process writes the contact-law part into once it has compiled its share (None: it only compiles)."""
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
    args = ["-m", __name__] + ([str(contact_out)] if contact_out is not None else [])
    return spawn(args, env, words=True)


def spawn(args, env=None, words=False):
    """`python args...` in a new process, its output kept in a temporary file (proc.log) for `wait`;
    with `words`, its standard input and output are pipes for `tell` and `wait_ready`."""
    log = tempfile.TemporaryFile(mode="w+")
    pipe = subprocess.PIPE if words else None
    proc = subprocess.Popen([sys.executable, *args], env=env, stdin=pipe or subprocess.DEVNULL,
                            stdout=pipe or log, stderr=log if words else subprocess.STDOUT, text=True)
    proc.log = log
    return proc


def tell(proc):
    """Tell the second process that a kernel it waits for is in the cache (one line on its input)."""
    if proc is None or proc.stdin is None:
        return
    try:
        proc.stdin.write("cached\n")
        proc.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass  # it has ended: wait() reports how


def wait_ready(proc, say):
    """Wait until the second process has compiled its share (READY) or has ended; returns True if
    it is ready. A process that ended is reported by `wait`."""
    if proc is None:
        return False
    if proc.stdout is None:
        return False
    t0 = time.perf_counter()
    said = not select.select([proc.stdout], [], [], 0.0)[0]  # READY is not there yet
    if said:
        say("   waiting for the second process to finish compiling the pair pass ...")
    while True:
        line = proc.stdout.readline()
        if line == "" or line.strip() == READY:
            break
    if said:
        say(f"   ... done after {time.perf_counter() - t0:.0f} s more")
    return line.strip() == READY


def wait(proc, say):
    """Wait for the second process to end, saying so when it is not done yet; a failure is reported
    in one line (the first process then does what is missing itself). Returns True if it ended well;
    what it printed is then proc.printed."""
    if proc is None:
        return False
    if proc.poll() is None:
        say("   waiting for the second process to finish ...")
        t0 = time.perf_counter()
        proc.wait()
        say(f"   ... done after {time.perf_counter() - t0:.0f} s more")
    ok = proc.returncode == 0
    proc.log.seek(0)
    proc.printed = proc.log.read()
    if not ok:
        lines = proc.printed.strip().splitlines()
        say(f"   (the second process stopped with exit code {proc.returncode}: "
            f"{lines[-1] if lines else 'no message'}; its part is done here instead)")
    _close(proc)
    return ok


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
    _close(proc)


def _close(proc):
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
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


def _pair_scratch(sim):
    """run_steps's scratch rows of the pair pass (sc, act) and its live flags, for sim's pair arrays."""
    from ..core.layout import ICTL_NPAIRS, PAIR_INDEX
    from ..engine.history import refresh_live
    from ..engine.pair_pass import N_SC
    cap = sim.pi.shape[0]
    live = np.empty(cap, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    return np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX), live


def compile_contact_law():
    """Compile (or load) the per-contact dispatcher laws.contact_step, with its energy integrators,
    by one step of a single Jäger contact; returns its normal force (> 0)."""
    from ..contact import SingleContact
    return SingleContact("jaeger").step(1e-6, (1e-8, 0.0))[0]


def compile_jaeger_force_pass(sim=None):
    """Compile (or load) the Jäger force pass of the pair pass by one call over no rows."""
    from ..engine.pair_pass import pair_force_pass_jaeger
    sim = small_packing(gas=False) if sim is None else sim
    sc, act, _ = _pair_scratch(sim)
    st = sim.store
    pair_force_pass_jaeger(sim.force, sim.torque, sim.radius, _prm(), sim.mtab, sim.ctl, sim.ictl, sim.pi, sim.pj,
                           sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm, st.pts, st.nxt, st.meta, sc, act, 0)


def compile_pair_parts(sim):
    """Compile (or load) the pair pass's kinematics (orthogonal and sheared cell, one call each on
    sim's pairs) and the force passes of the laws other than jaeger (one call each over no rows)."""
    from ..engine import pair_pass as pp
    sc, act, live = _pair_scratch(sim)
    st = sim.store
    kinematics_args = (sim.pos, sim.vel, sim.omega, sim.radius, _prm(), sim.mtab, sim.cell, sim.ctl, sim.ictl,
                       sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm, st.pts, st.nxt, st.meta, sim.out,
                       sc, act, live)
    pp._pair_kinematics_orthogonal(*kinematics_args)
    pp._pair_kinematics_sheared(*kinematics_args)
    for force_pass in (pp.pair_force_pass_mindlin, pp.pair_force_pass_md_incremental, pp.pair_force_pass_linear):
        force_pass(sim.force, sim.torque, sim.radius, _prm(), sim.mtab, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs,
                   sim.pist, sim.pcq, sim.pk, sim.pm, st.pts, st.nxt, st.meta, sc, act, 0)


def compile_pair_pass(sim=None):
    """Compile (or load) the pair pass by one call on a small packing; returns whether it ran."""
    from ..engine.pair_pass import ALL_STRESS_COMPONENTS, pair_forces
    sim = small_packing(gas=False) if sim is None else sim
    sc, act, live = _pair_scratch(sim)
    st = sim.store
    return bool(pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, _prm(), sim.mtab,
                            sim.cell, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm,
                            st.pts, st.nxt, st.meta, sim.acc, sim.out, sc, act, live, sim.stress_limbs,
                            ALL_STRESS_COMPONENTS))


def compile_moves(sim):
    """Compile (or load) the particle pass and the history store's compaction (one call each)."""
    from ..engine.history import compact_on_schedule
    from ..engine.integration import advance_particles
    advance_particles(sim.pos, sim.vel, sim.omega, sim.quat, sim.force, sim.torque, sim.mass, sim.inertia, sim.cell,
                      sim.ctl, sim.ictl, sim.pos_build, sim.acc, sim.out)
    compact_on_schedule(sim.ictl, sim.pist, sim.wist, sim.store.pts, sim.store.nxt, sim.store.meta)


def compile_loop_parts(sim):
    """Compile (or load) the time loop's callees that need no contact law: the rolling pass (one
    call over no rows), the cell servo and the walls' servo."""
    from ..boundaries.servo import servo
    from ..boundaries.walls import servo_walls
    from ..core.layout import ICTL_NPAIRS, ICTL_NWALLS, ICTL_NWCAND
    from ..engine.loop import NO_MORE_STRESS
    from ..engine.rolling_pass import rolling_pass
    from ..contact import rolling as RL
    none = sim.ictl.copy()
    none[ICTL_NPAIRS] = 0
    none[ICTL_NWCAND] = 0
    rolling_pass(sim.omega, sim.torque, sim.radius, sim.mass, sim.inertia, sim.mtab,
                 sim.rolling_pairs.reshape(-1, RL.N_ROLL_PARAM), sim.ctl, none, sim.pi, sim.pj, sim.pfs, sim.pcq,
                 sim.pk, sim.pm, sim.prs, sim.wcand, sim.wfs, sim.wcq, sim.wk, sim.wm, sim.wrs)
    servo(sim.cell, sim.ctl, sim.ictl, sim.acc)
    servo_walls(sim.walls, sim.ictl[ICTL_NWALLS], sim.acc, NO_MORE_STRESS)


def compile_walls(sim):
    """Compile (or load) the wall pass (one call); returns whether it ran."""
    from ..boundaries.walls import wall_forces
    from ..core.exact_sum import new_accumulator
    from ..engine.pair_pass import ALL_STRESS_COMPONENTS
    st = sim.store
    return bool(wall_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, _prm(), sim.mtab,
                            sim.ctl, sim.ictl, sim.walls, sim.wcand, sim.wfs, sim.wist, sim.wcq, sim.wk, sim.wm,
                            st.pts, st.nxt, st.meta, sim.acc, sim.out, sim.stress_limbs,
                            new_accumulator(3 * sim.walls.shape[0]), ALL_STRESS_COMPONENTS))


def _wait_for_word():
    # one line from the first process (an empty read: it has ended, and the kernel is compiled here)
    sys.stdin.readline()


def main(argv):
    """The second process: its share of the kernels, READY, then the contact-law part into argv[0]
    if given."""
    words = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # its own printing goes to the log, the pipe carries READY only
    sim = small_packing()
    compile_moves(sim)
    compile_loop_parts(sim)
    _wait_for_word()  # contact_step
    compile_walls(sim)
    compile_pair_parts(sim)
    _wait_for_word()  # the jaeger force pass
    compile_pair_pass(sim)
    words.write(READY + "\n")
    words.close()
    if argv:
        from .contact import run_demo as contact_demo
        from .traction import write_traction_demo
        say = lambda msg: print(msg, flush=True)  # noqa: E731
        contact_demo(Path(argv[0]), announce=say)
        write_traction_demo(Path(argv[0]), announce=say)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
