"""Preparation of a packing of size ratio 9 (engine.prepare.prepare_packing).

A 9:1 uniform spread (radius_spread = 0.8) must reach the target pressure in static equilibrium
within a bounded number of steps, and come back with the true masses (checked against
density * 4/3 pi r^3 computed here) and a time step stable for them. The mass factor of the
preparation leaves spheres within a factor 2 of the largest alone and gives every smaller one
the critical step of a sphere of half the largest radius (k_n ~ sqrt(r) at a common overlap).
"""

import math

import numpy as np

from graindem.engine.prepare import preparation_mass_factor, prepare_packing

DENSITY = 2650.0
PRESSURE = 100e3


def test_mass_factor_leaves_narrow_sizes_alone_and_equalises_the_critical_step():
    r = np.linspace(0.2, 1.8, 50)
    f = preparation_mass_factor(r)
    assert np.all(f[r >= 0.9] == 1.0)
    assert np.all(preparation_mass_factor(np.linspace(1.0, 1.99, 20)) == 1.0)
    small = r < 0.9
    # critical step ~ sqrt(m / k_n), m ~ r^3 f, k_n ~ sqrt(r): equal to the one of r = 0.9
    step = np.sqrt(r[small] ** 3 * f[small] / np.sqrt(r[small]))
    np.testing.assert_allclose(step, math.sqrt(0.9 ** 3 / math.sqrt(0.9)), rtol=1e-12)


def test_size_ratio_9_prepares_within_a_bounded_number_of_steps():
    n = 500
    max_steps = 120000
    sim = prepare_packing(n, radius=1.5e-4, radius_spread=0.8, pressure=PRESSURE, E=66.7e9, nu=0.15,
                          density=DENSITY, mu=0.5, mu_prep=0.1, seed=2, dt_fraction=0.2, max_steps=max_steps)
    assert sim.step_count <= max_steps
    r = sim.radius
    assert r.max() / r.min() > 8.0
    np.testing.assert_allclose(sim.mass, DENSITY * 4.0 / 3.0 * math.pi * r ** 3, rtol=1e-14)
    np.testing.assert_allclose(sim.inertia, 0.4 * sim.mass * r ** 2, rtol=1e-14)
    assert sim.dt <= 0.2 * sim.critical_time_step() * (1 + 1e-12)
    m = sim.measure()
    assert abs(m["pressure"] / PRESSURE - 1.0) < 0.005
    assert m["unbalanced_force_ratio"] < 1e-3
    # a dense state: solid fraction of a compressed polydisperse packing
    assert 1.0 / (1.0 + m["void_ratio"]) > 0.6
    # and it stays there with the true masses: a further stretch keeps the pressure
    sim.run(2000)
    assert abs(sim.measure()["pressure"] / PRESSURE - 1.0) < 0.01


def test_interrupted_preparation_continues_to_the_packing_of_the_uninterrupted_one(tmp_path, monkeypatch):
    """A stop request during the compression (as SIGINT/SIGTERM would make) leaves packing.partial.h5;
    the same call then continues from it and ends with the packing of an uninterrupted preparation,
    bit for bit (reference: that preparation, run here in the same process). A 3:1 spread, so that the
    preparation's mass scaling and its undoing are part of the state carried over."""
    from graindem.engine.interrupts import RunStopped, StopRequests
    from graindem.engine.simulation import Simulation
    from graindem.scenarios.biaxial import prepared_packing

    kwargs = dict(seed=4, pressure=PRESSURE, radius=1.5e-4, spread=0.5, mu_prep=0.1)
    monkeypatch.setattr(Simulation, "max_chunk_steps", 50)  # chunk ends to stop at (same trajectory)
    ref = prepared_packing(100, cache=tmp_path / "a" / "packing.h5", **kwargs)
    assert ref.step_count > 1000

    original = StopRequests.after_chunk
    stop_at = 700  # inside the second check interval of 500 steps

    def stop_once(self, steps_done, step):
        original(self, steps_done, step)
        if step >= stop_at and not getattr(stop_once, "fired", False):
            stop_once.fired = True
            raise RunStopped(2, step)

    monkeypatch.setattr(StopRequests, "after_chunk", stop_once)
    cache = tmp_path / "b" / "packing.h5"
    try:
        prepared_packing(100, cache=cache, **kwargs)
        raise AssertionError("the preparation was not stopped")
    except RunStopped as exc:
        assert "packing.partial.h5" in str(exc)
    partial = cache.with_name("packing.partial.h5")
    assert partial.exists() and not cache.exists()
    done = []

    def count(self, steps_done, step):
        done.append(steps_done)
        original(self, steps_done, step)

    monkeypatch.setattr(StopRequests, "after_chunk", count)
    got = prepared_packing(100, cache=cache, **kwargs)
    assert cache.exists() and not partial.exists()
    assert sum(done) == ref.step_count - stop_at  # continued from the stop, not started afresh
    a, _ = ref.state_dict()
    b, _ = got.state_dict()
    assert got.step_count == ref.step_count
    for name in ("pos", "vel", "omega", "mass", "inertia", "radius", "cell", "pfs", "pist"):
        assert np.array_equal(a[name], b[name]), name
    # the true masses are back: density * 4/3 pi r^3, computed here
    np.testing.assert_allclose(got.mass, DENSITY * 4.0 / 3.0 * math.pi * got.radius ** 3, rtol=1e-12)
