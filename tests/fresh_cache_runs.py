"""The two child runs of tests/test_numba_cache_determinism.py: one compiles into an empty numba cache,
the next loads from it. They take minutes of compiling, so tests/conftest.py starts them when the suite
starts, and they use a core while other tests run. With pytest-xdist the controlling process starts them
and the worker that runs the test reads their result from a file.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time

# where pytest-xdist's controlling process tells its workers the runs' result will be written
RESULT_FILE_ENV = "GRAINDEM_FRESH_RUNS_RESULT"

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
    # the many rebuilds (without graindem._jit's own copies a fresh and a cached process part here
    # within a few hundred steps, in the last bits of a pair frame, pcq, hashed with the rest).
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


class FreshAndCachedRuns:
    """The two child runs, one after the other in a background thread; with `result_file` the outcome is
    also written there as JSON (for a pytest-xdist worker in another process)."""

    def __init__(self, cache_dir, result_file=None):
        self.cache_dir = pathlib.Path(cache_dir)
        self.result_file = None if result_file is None else pathlib.Path(result_file)
        self.result = None
        self._child = None
        self._stopped = False
        self._thread = threading.Thread(target=self._both, daemon=True)
        self._thread.start()

    def _run(self):
        env = dict(os.environ)
        env.pop("NUMBA_CACHE_DIR", None)
        env["GRAINDEM_NUMBA_CACHE"] = str(self.cache_dir)
        if self._stopped:
            raise RuntimeError("stopped")
        self._child = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
        out, err = self._child.communicate(timeout=1800)
        assert self._child.returncode == 0, err[-3000:]
        return out.split("\n")

    def _both(self):
        try:
            fresh = self._run()     # compiles everything into the empty directory
            filled = any(self.cache_dir.rglob("*.nbi"))
            cached = self._run()    # loads the same kernels from the cache
            self.result = (fresh, filled, cached)
            record = {"fresh": fresh, "filled": filled, "cached": cached}
        except BaseException as exc:  # handed to the test, which reports it
            self.result = exc
            record = {"error": f"{type(exc).__name__}: {exc}"}
        if self.result_file is not None:
            part = self.result_file.with_suffix(".part")
            part.write_text(json.dumps(record))
            os.replace(part, self.result_file)  # the reader never sees half a file

    def wait(self):
        self._thread.join()
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result

    def stop(self):
        """End a child still running (the suite stopped before this test waited for it)."""
        self._stopped = True
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
        self._thread.join()




def read_result_file(path, timeout=1800.0):
    """Wait for the runs started in another process to write `path`; their (fresh, filled, cached)."""
    path = pathlib.Path(path)
    end = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > end:
            raise TimeoutError(f"no result from the fresh and cached runs in {path} after {timeout:.0f} s")
        time.sleep(1.0)
    record = json.loads(path.read_text())
    if "error" in record:
        raise RuntimeError(record["error"])
    return record["fresh"], record["filled"], record["cached"]
