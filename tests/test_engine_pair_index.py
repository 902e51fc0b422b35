"""The pair rows' particle indices are int32 (core.layout.PAIR_INDEX).

Checked here: a schema-1 checkpoint with int64 pi, pj loads with int32 indices and
continues bit for bit as the uninterrupted run does (reference: the same run never checkpointed);
and a particle count or pair capacity beyond what PAIR_INDEX can number is refused with a
ValueError before any work (the limit, which Simulation reads, is patched down to a small number, so the refusal is
exercised without allocating 2^31 rows).
"""

import numpy as np
import pytest

from graindem.core.layout import ICTL_NPAIRS, ICTL_NREBUILDS, PAIR_INDEX
from graindem.engine import prepare
from graindem.engine import simulation as simulation_module
from graindem.engine.simulation import Simulation

STATE = ("pos", "vel", "omega", "quat", "force", "torque", "pfs", "pist", "pcq", "acc", "cell")


def _compressed_gas(n=150, seed=5):
    rng = np.random.default_rng(seed)
    r = 1.5e-4 * (1 + 0.2 * rng.uniform(-1, 1, n))
    L = (np.sum(4 / 3 * np.pi * r ** 3) / 0.4) ** (1 / 3)
    pos = prepare.random_gas(n, r, np.full(3, L), rng)
    sim = Simulation(law="jaeger", E=70e9, nu=0.25, mu=0.3, density=2650.0, local_damping=0.7,
                     restitution=0.5, reference_overlap=1e-7)
    sim.set_box((0, 0, 0), (L, L, L), periodic=(True, True, True))
    sim.add_particles(pos, r)
    sim.setup()
    for k in range(3):
        sim.control_axis(k, stress=1e5, gain=2e-5 / sim.dt, max_rate=2e-5 / sim.dt)
    return sim


def test_int64_checkpoint_loads_as_int32_and_continues_bit_for_bit():
    sim = _compressed_gas()
    sim.run(4000)
    arrays, meta = sim.state_dict()
    assert arrays["pi"].dtype == PAIR_INDEX and sim.qi.dtype == PAIR_INDEX
    old = dict(arrays)
    old["pi"] = arrays["pi"].astype(np.int64)
    old["pj"] = arrays["pj"].astype(np.int64)
    restarted = Simulation.from_state(old, meta)
    for name in ("pi", "pj", "qi", "qj"):
        assert getattr(restarted, name).dtype == PAIR_INDEX, name
    m = int(sim.ictl[ICTL_NPAIRS])
    np.testing.assert_array_equal(restarted.pi[:m], sim.pi[:m])
    rebuilds = int(sim.ictl[ICTL_NREBUILDS])
    sim.run(2000)
    restarted.run(2000)
    # contacts and renumbering rebuilds happened in the compared stretch
    assert int((sim.pfs[:, 0] > 0).sum()) > 40
    assert int(sim.ictl[ICTL_NREBUILDS]) > rebuilds
    for name in STATE + ("pi", "pj"):
        np.testing.assert_array_equal(getattr(restarted, name), getattr(sim, name), err_msg=name)


def test_particle_count_beyond_pair_index_is_refused(monkeypatch):
    monkeypatch.setattr(simulation_module, "PAIR_INDEX_MAX", 50)
    rng = np.random.default_rng(1)
    r = np.full(60, 1e-4)
    sim = Simulation(law="mindlin")
    sim.set_box((0, 0, 0), (3e-3, 3e-3, 3e-3), periodic=(True, True, True))
    sim.add_particles(prepare.random_gas(60, r, np.full(3, 3e-3), rng), r)
    with pytest.raises(ValueError, match="number of particles must be at most 50"):
        sim.setup()


def test_pair_capacity_beyond_pair_index_is_refused(monkeypatch):
    reference = _compressed_gas()
    rows_loose = int(reference.ictl[ICTL_NPAIRS])
    reference.run(4000)
    rows = int(reference.ictl[ICTL_NPAIRS])
    arrays, meta = reference.state_dict()
    # a limit below the rows the compressed list needs, above those of the loose gas and the particle count
    limit = (rows_loose + rows) // 2
    assert max(rows_loose, reference.n) < limit < rows
    monkeypatch.setattr(simulation_module, "PAIR_INDEX_MAX", limit)
    with pytest.raises(ValueError, match="checkpoint has"):
        Simulation.from_state(arrays, meta)
    sim = _compressed_gas()
    assert sim.pi.shape[0] == limit
    with pytest.raises(ValueError, match="pair capacity must be at most"):
        sim.run(4000)
