"""Wall contacts kept in candidate rows: rows q < ictl[ICTL_NWCAND], keyed wcand[q] = i * n_walls + w.

References: (1) the rows must hold exactly the (particle, wall) pairs within r + skin of the wall, in key
order, with their state carried across rebuilds by key: checked against a plain numpy evaluation of the
wall distances and against the contacts' own overlaps; (2) a checkpoint in the dense wall layout (one row
per (particle, wall), row i * n_walls + w) must load and continue bit for bit as the same state saved in
the candidate-row layout, with the dissipation its non-candidate rows held counted in the total.
"""

import numpy as np

from graindem.contact import state as S
from graindem.engine import kernels as K
from graindem.engine.simulation import Simulation


def _walled_sim():
    """Jaeger spheres with energy accounting tumbling into a box under a slanted gravity, with a lid
    coming down: wall contacts form, slip and open, and the neighbour list is rebuilt often."""
    rng = np.random.default_rng(5)
    L = 0.006
    pos, r = [], []
    while len(pos) < 90:
        x = rng.uniform((0.6e-3, 0.6e-3, 0.6e-3), (L - 0.6e-3, L - 0.6e-3, 0.0075))
        ri = rng.uniform(0.4e-3, 0.5e-3)
        if pos and np.any(np.linalg.norm(np.asarray(pos) - x, axis=1) < np.asarray(r) + ri):
            continue
        pos.append(x)
        r.append(ri)
    sim = Simulation(law="jaeger", E=7e8, nu=0.25, mu=0.4, density=2500.0, restitution=0.6,
                     gravity=(800.0, 500.0, -5000.0), sort_particles=True)
    sim.set_box((0, 0, 0), (L, L, 0.01))
    for p, n in (((0, 0, 0), (1, 0, 0)), ((L, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)), ((0, L, 0), (0, -1, 0)),
                 ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(p, n)
    sim.add_wall((0, 0, 0.0085), (0, 0, -1), velocity=(0, 0, -0.3))
    sim.add_particles(np.asarray(pos), np.asarray(r))
    sim.set_energy_accounting(True)
    return sim


def test_candidate_rows_are_the_walls_near_pairs_in_key_order():
    sim = _walled_sim()
    sim.run(3000)
    nw = sim.walls.shape[0]
    nwc = int(sim.ictl[K.ICTL_NWCAND])
    # the candidates of the last rebuild, from the build positions and wall points
    h = np.einsum("iwk,wk->iw", sim.pos_build[:, None, :] - sim.walls[None, :, 9:12], sim.walls[:, 3:6])
    near = np.flatnonzero((h < sim.radius[:, None] + sim.skin).ravel())
    assert int(sim.ictl[K.ICTL_NREBUILDS]) > 5
    np.testing.assert_array_equal(sim.wcand[:nwc], near)
    # every touching row is a candidate whose overlap is the particle's reach past the wall now
    wc = sim.wall_contact_arrays()
    assert wc["i"].size > 10
    key = wc["i"] * nw + wc["wall"]
    assert np.all(np.isin(key, near))
    # each row's stored overlap is its particle's reach past its wall where the last forces were
    # computed: one drift back, x - v dt for the particle and p - v_wall dt for the wall point (the
    # step kicks, then drifts with the new velocity, then moves the walls); rounding ~1e-18 m
    i, w, dt = wc["i"], wc["wall"], sim.dt
    h_then = np.einsum("ik,ik->i", sim.pos[i] - sim.vel[i] * dt - (sim.walls[w, :3] - sim.walls[w, 6:9] * dt),
                       sim.walls[w, 3:6])
    stored = sim.wfs[:nwc][sim.wfs[:nwc, S.F_DELTA] > 0, S.F_DELTA]
    assert np.max(np.abs(sim.radius[i] - wc["h"] - stored)) > 1e-9   # the drift is visible at this tolerance
    np.testing.assert_allclose(sim.radius[i] - h_then, stored, rtol=0, atol=1e-15)
    # rows past the candidates hold nothing (the history store counts only live rows)
    assert np.all(sim.wfs[nwc:, S.F_DELTA] == 0.0) and np.all(sim.wist[nwc:, S.I_HEAD] == -1)


def _to_dense(arrays, n, nw, moved_dissipation):
    """The dense wall layout of the same state: row i * nw + w; one non-candidate row holds some
    dissipation that the candidate-row layout keeps in ACC_DISS_RELEASED."""
    nwc = int(arrays["ictl"][K.ICTL_NWCAND])
    keys = arrays["wcand"][:nwc]
    fs = np.zeros((n * nw, S.N_FSTATE))
    ist = np.zeros((n * nw, S.N_ISTATE), dtype=np.int64)
    ist[:, S.I_HEAD] = -1
    cq = np.zeros((n * nw, 4))
    cq[:, 0] = 1.0
    fs[keys] = arrays["wfs"][:nwc]
    ist[keys] = arrays["wist"][:nwc]
    cq[keys] = arrays["wcq"][:nwc]
    spare = np.setdiff1d(np.arange(n * nw), keys)[0]
    fs[spare, S.F_DISS] = moved_dissipation
    acc = arrays["acc"].copy()
    acc[K.ACC_DISS_RELEASED] -= moved_dissipation
    return dict(arrays, wfs=fs, wist=ist, wcq=cq, acc=acc)


def test_old_dense_checkpoint_continues_bit_for_bit():
    sim = _walled_sim()
    sim.run(2500)
    arrays, meta = sim.state_dict()
    assert len(sim.wall_contact_arrays()["i"]) > 10
    assert np.any(sim.wist[:int(sim.ictl[K.ICTL_NWCAND]), S.I_LEN] > 0)   # histories to carry
    moved = 0.25 * float(sim.measure()["frictional_dissipation"])
    assert moved > 0.0
    old_meta = {k: v for k, v in meta.items() if k != "wall_rows"}
    old = Simulation.from_state(_to_dense(arrays, sim.n, sim.walls.shape[0], moved), old_meta)
    new = Simulation.from_state(arrays, meta)
    d_old = old.measure()["frictional_dissipation"]
    d_new = new.measure()["frictional_dissipation"]
    # the same sum in another order: equal to rounding
    np.testing.assert_allclose(d_old, d_new, rtol=1e-12)
    old.run(1500)
    new.run(1500)
    for name in ("pos", "vel", "omega", "quat", "pfs", "pcq", "wfs", "wist", "wcq", "wcand"):
        np.testing.assert_array_equal(getattr(old, name), getattr(new, name), err_msg=name)
    assert int(new.ictl[K.ICTL_NREBUILDS]) > int(sim.ictl[K.ICTL_NREBUILDS])
