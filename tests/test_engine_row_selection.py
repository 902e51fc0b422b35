"""The pair pass's branch-free row selection (engine.pair_pass.select_rows).

The kinematics visit only the rows the selection lists; the rows found touching must be exactly
those whose spheres overlap, and the run must be the one the plain scan over every row gives (the
selection only skips rows that neither touch nor hold state): the same touching rows every step,
the same state to rounding (see test_selected_pass_is_the_full_scan).

References: the touching set from the positions by numpy (|x_j - x_i| < r_i + r_j), and the
engine's own pass compiled without the selection (select=False), which visits every row.
"""

import math
from pathlib import Path

import numpy as np

from graindem._jit import njit
from graindem.contact import state as S
from graindem.boundaries.servo import servo
from graindem.boundaries.walls import wall_forces
from graindem.core.exact_sum import new_accumulator
from graindem.core.layout import CTL_SKIN, CTL_VISC, ICTL_N, ICTL_NPAIRS, ICTL_STEP, N_PRM, PAIR_INDEX
from graindem.engine.history import compact_on_schedule, refresh_live
from graindem.engine.integration import advance_particles
from graindem.engine.pair_pass import (ALL_STRESS_COMPONENTS, N_SC, pair_force_pass_mindlin, pair_forces, pair_kinematics,
                                      stress_sum, viscous_work_sum)
from graindem.engine.simulation import Simulation

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "packing_4000.csv"
E, NU, RHO, MU, DT = 70e9, 0.25, 2500.0, 0.5, 1e-7
BOX = 0.03


@njit(_nrt=False)
def _pair_forces_full_scan(pos, vel, omega, force, torque, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist, pcq,
                           pk, pm, pts, nxt, meta, acc, out, sc, act, live, limbs, want):
    na = pair_kinematics(False, False, pos, vel, omega, radius, prm, mtab, cell, ctl, ictl, pi, pj, pfs, pist,
                         pcq, pk, pm, pts, nxt, meta, out, sc, act, live)
    if na < 0:
        return False
    pair_force_pass_mindlin(force, torque, radius, prm, mtab, ctl, ictl, pi, pj, pfs, pist, pcq, pk, pm,
                            pts, nxt, meta, sc, act, na)
    stress_sum(sc, act, na, pi, ictl[ICTL_N], limbs, acc, want)
    if ctl[CTL_VISC] > 0.0:
        viscous_work_sum(sc, act, na, pi, ictl[ICTL_N], limbs)
    return True


def _bottom_layer(n=700, seed=3):
    """The n lowest spheres of the settled packing, in the walled box, shaken by random velocities
    so that contacts open and close during the test."""
    if DATA.exists():
        a = np.loadtxt(DATA, delimiter=",", skiprows=1)
        a = a[np.argsort(a[:, 2])[:n]]
        pos, r = a[:, :3].copy(), a[:, 3].copy()
    else:  # a loose lattice with overlaps, if the shared data is not there
        rng = np.random.default_rng(seed)
        m = int(math.ceil(n ** (1 / 3)))
        g = np.stack(np.meshgrid(*[np.arange(m)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
        r = np.full(n, 0.5e-3)
        pos = 1.0e-3 + g * 0.999e-3 + rng.normal(0, 2e-6, (n, 3))
    rng = np.random.default_rng(seed)
    sim = Simulation(law="mindlin", E=E, nu=NU, mu=MU, density=RHO, restitution=0.5, gravity=(0, 0, -9.81), dt=DT)
    sim.set_box((0, 0, 0), (BOX, BOX, float((pos[:, 2] + r).max()) + 0.005))
    for p, nrm in (((0, 0, 0), (1, 0, 0)), ((BOX, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                   ((0, BOX, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(p, nrm)
    sim.add_particles(pos, r, velocities=rng.normal(0.0, 0.05, (n, 3)),
                      angular_velocities=rng.normal(0.0, 50.0, (n, 3)))
    sim.setup()
    return sim


def _scratch(sim):
    cap = sim.pi.shape[0]
    live = np.empty(cap, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    return np.full(N_PRM, -1.0), np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX), live


def _touching_rows(sim):
    npairs = int(sim.ictl[ICTL_NPAIRS])
    i, j = sim.pi[:npairs], sim.pj[:npairs]
    d2 = ((sim.pos[j] - sim.pos[i]) ** 2).sum(1)
    rs2 = (sim.radius[i] + sim.radius[j]) ** 2
    return d2, rs2


def _step(sim, pair_fn, scratch, check=None):
    """One engine step split as run_steps does it, with the given pair pass; check(sim, act) runs
    right after the pair pass."""
    prm, sc, act, live = scratch
    st = sim.store
    st.ensure_free(int(sim.ictl[ICTL_NPAIRS]) + sim.n * sim.walls.shape[0] + 1024)
    ok = pair_fn(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab, sim.cell, sim.ctl,
                 sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm, st.pts, st.nxt, st.meta,
                 sim.acc, sim.out, sc, act, live, sim.stress_limbs, ALL_STRESS_COMPONENTS)
    assert ok
    if check is not None:
        check(sim, act)
    assert wall_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab, sim.ctl,
                       sim.ictl, sim.walls, sim.wcand, sim.wfs, sim.wist, sim.wcq, sim.wk, sim.wm, st.pts, st.nxt,
                       st.meta, sim.acc, sim.out, sim.stress_limbs, new_accumulator(3 * sim.walls.shape[0]),
                       ALL_STRESS_COMPONENTS)
    servo(sim.cell, sim.ctl, sim.ictl, sim.acc)
    maxd2 = advance_particles(sim.pos, sim.vel, sim.omega, sim.quat, sim.force, sim.torque, sim.mass, sim.inertia,
                              sim.cell, sim.ctl, sim.ictl, sim.pos_build, sim.acc, sim.out)
    assert maxd2 >= 0.0
    sim.ictl[ICTL_STEP] += 1
    if 2.0 * math.sqrt(maxd2) > sim.ctl[CTL_SKIN]:
        sim._rebuild()
        scratch[:] = _scratch(sim)
    compact_on_schedule(sim.ictl, sim.pist, sim.wist, st.pts, st.nxt, st.meta)


def test_touching_rows_are_exactly_the_overlapping_pairs():
    sim = _bottom_layer()
    scratch = list(_scratch(sim))
    seen = []

    def check(sim, act):
        # after the pass the touching rows are listed in act[0:na] in row order, and hold F_DELTA > 0
        npairs = int(sim.ictl[ICTL_NPAIRS])
        expect = np.flatnonzero(before[0] < before[1])
        np.testing.assert_array_equal(np.flatnonzero(sim.pfs[:npairs, S.F_DELTA] > 0.0), expect)
        np.testing.assert_array_equal(act[:expect.size], expect)
        seen.append(expect.size)

    for _ in range(40):
        before = _touching_rows(sim)
        # no pair here sits within rounding of touching, so the numpy set compares exactly
        assert np.min(np.abs(before[0] / before[1] - 1.0)) > 1e-12
        _step(sim, pair_forces, scratch, check)
    assert len(seen) == 40 and min(seen) > 500


def test_selected_pass_is_the_full_scan():
    """Every step the two passes find the same touching rows, and the runs end in the same state.

    The state is compared to 1e-9 relative, not bit for bit: the two passes are separately compiled
    copies of the same source, and with fastmath LLVM may fuse a multiply-add in one and not in the
    other (on the fallback lattice, a clone without ../shared/data, a frame quaternion component
    differs by 3e-21 after two steps, the velocities by 3e-16 after 300; on the settled packing the
    runs are bit for bit the same). A row the selection wrongly skipped would lose a
    whole contact force, a difference of order one."""
    a = _bottom_layer()
    b = _bottom_layer()
    sa = list(_scratch(a))
    sb = list(_scratch(b))
    openings = 0
    for _ in range(300):
        npairs = int(a.ictl[ICTL_NPAIRS])
        d2, rs2 = _touching_rows(a)
        openings += int(np.sum((sa[3][:npairs] != 0) & (d2 >= rs2)))
        _step(a, pair_forces, sa)
        _step(b, _pair_forces_full_scan, sb)
        m = int(a.ictl[ICTL_NPAIRS])
        assert m == int(b.ictl[ICTL_NPAIRS])
        np.testing.assert_array_equal(a.pfs[:m, S.F_DELTA] > 0.0, b.pfs[:m, S.F_DELTA] > 0.0)
    # the shaking opens contacts, so the selection's `live` branch is exercised
    assert openings > 0
    np.testing.assert_array_equal(a.pist, b.pist)
    for name in ("pos", "vel", "omega", "quat", "pfs", "pcq", "wfs", "wcq", "acc"):
        x, y = getattr(a, name), getattr(b, name)
        # the absolute floor scaled per column: pfs holds overlaps (~1e-6 m) beside forces
        scale = np.max(np.abs(y), axis=0) if y.ndim == 2 else np.max(np.abs(y))
        np.testing.assert_array_less(np.abs(x - y), 1e-9 * (np.abs(y) + scale) + 1e-300, err_msg=name)
