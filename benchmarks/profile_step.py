"""Where a step of the sphere engine spends its time: a split profile.

    python benchmarks/profile_step.py [--case packing|biaxial|both] [--steps 500] [--law mindlin] [--json FILE]

The production kernel runs all of a step inside one njit call; here Python calls the parts one by
one on the real state (the trajectory is the production one), and times per step:
neighbour rebuilds, the history store's compaction (kernels.compact_on_schedule), walls, servo,
the fused particle pass, and the pair loop split by extra read-only passes over the same pairs: the
branch-free row selection alone (engine.pair_pass.select_rows, the start of the pair loop); geometry only;
geometry + frame update (on a scratch copy of the frames); geometry + frame + force accumulation
without the law (scratch force arrays).
law = full pair loop - (geometry + frame + accumulation). Differences of separately timed loops
are estimates (shared cache misses are counted in the first pass that makes them); CPU time.
"""

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from graindem._jit import njit  # noqa: E402
from graindem.contact import state as S  # noqa: E402
from graindem.contact.frames import contact_point_velocity, from_frame, to_frame  # noqa: E402
from graindem.boundaries.servo import servo
from graindem.boundaries.walls import wall_forces
from graindem.contact.rows import turn_frame
from graindem.core.cell import CELL_L, CELL_LBUILD, min_image
from graindem.core.exact_sum import new_accumulator
from graindem.core.layout import CTL_RMAX, CTL_SKIN, ICTL_NPAIRS, ICTL_PERIODIC, ICTL_STEP, N_PRM, PAIR_INDEX
from graindem.engine.history import compact_on_schedule, refresh_live
from graindem.engine.integration import advance_particles
from graindem.engine.pair_pass import ALL_STRESS_COMPONENTS, N_SC, cell_box, pair_forces, select_rows
from provenance import provenance


@njit(_nrt=False)
def pass_geometry(pos, radius, cell, ictl, pi, pj, mode, pcq, force, torque, omega, vel, pfs):
    """mode 0: geometry; 1: + frame update (pcq is scratch); 2: + accumulation (force, torque scratch)."""
    Lx = cell[CELL_L]
    Ly = cell[CELL_L + 1]
    Lz = cell[CELL_L + 2]
    perx = ictl[ICTL_PERIODIC] != 0
    pery = ictl[ICTL_PERIODIC + 1] != 0
    perz = ictl[ICTL_PERIODIC + 2] != 0
    total = 0.0
    dt = 1e-7
    for c in range(ictl[ICTL_NPAIRS]):
        i = pi[c]
        j = pj[c]
        dx = pos[j, 0] - pos[i, 0]
        dy = pos[j, 1] - pos[i, 1]
        dz = pos[j, 2] - pos[i, 2]
        dx, dy, dz = min_image(dx, dy, dz, Lx, Ly, Lz, perx, pery, perz)
        ri = radius[i]
        rj = radius[j]
        rs = ri + rj
        d2 = dx * dx + dy * dy + dz * dz
        if d2 >= rs * rs or not (pfs[c, S.F_DELTA] > 0.0):
            continue
        dist = math.sqrt(d2)
        delta = rs - dist
        inv = 1.0 / dist
        nx = dx * inv
        ny = dy * inv
        nz = dz * inv
        vx, vy, vz = contact_point_velocity(vel[i, 0], vel[i, 1], vel[i, 2], omega[i, 0], omega[i, 1], omega[i, 2],
                                            vel[j, 0], vel[j, 1], vel[j, 2], omega[j, 0], omega[j, 1], omega[j, 2],
                                            nx, ny, nz, ri, rj, delta)
        vn = vx * nx + vy * ny + vz * nz
        total += delta + vn
        if mode == 0:
            continue
        # the engine's own frame update in the orthogonal cell, so the split follows it
        turn_frame(pcq, c, nx, ny, nz, 0.5 * (omega[i, 0] + omega[j, 0]), 0.5 * (omega[i, 1] + omega[j, 1]),
                   0.5 * (omega[i, 2] + omega[j, 2]), dt, True)
        dsx, dsy, _ = to_frame(pcq, c, (vx - vn * nx) * dt, (vy - vn * ny) * dt, (vz - vn * nz) * dt)
        total += dsx + dsy
        if mode == 1:
            continue
        fn = pfs[c, S.F_N]
        Tx, Ty, Tz = from_frame(pcq, c, pfs[c, S.F_TX], pfs[c, S.F_TY], 0.0)
        fx = fn * nx - Tx
        fy = fn * ny - Ty
        fz = fn * nz - Tz
        force[j, 0] += fx
        force[j, 1] += fy
        force[j, 2] += fz
        force[i, 0] -= fx
        force[i, 1] -= fy
        force[i, 2] -= fz
        cx = ny * fz - nz * fy
        cy = nz * fx - nx * fz
        cz = nx * fy - ny * fx
        li = ri - 0.5 * delta
        lj = rj - 0.5 * delta
        torque[i, 0] -= li * cx
        torque[i, 1] -= li * cy
        torque[i, 2] -= li * cz
        torque[j, 0] -= lj * cx
        torque[j, 1] -= lj * cy
        torque[j, 2] -= lj * cz
        total += fx * dx + fy * dy + fz * dz
    return total


@njit(_nrt=False)
def pass_select(pos, radius, cell, ictl, pi, pj, live, act, sc):
    """The pair pass's branch-free row selection alone (kernels._select_rows) on scratch act, sc."""
    per = (ictl[ICTL_PERIODIC] != 0, ictl[ICTL_PERIODIC + 1] != 0, ictl[ICTL_PERIODIC + 2] != 0)
    return select_rows(False, cell_box(cell), per, pos, radius, pi, pj, live, ictl[ICTL_NPAIRS], act, sc)


def _pair_scratch(sim):
    """The pair loop's scratch rows and skip flags (made again after each rebuild, as run_steps does)."""
    cap = sim.pi.shape[0]
    live = np.empty(cap, dtype=np.uint8)
    refresh_live(sim.pfs, sim.pist, sim.ictl[ICTL_NPAIRS], live)
    return np.empty((cap, N_SC)), np.empty(cap, dtype=PAIR_INDEX), live


def profile(sim, steps):
    sim.setup()
    st = sim.store
    prm = np.full(N_PRM, -1.0)  # scratch record of the force loops
    nw = sim.walls.shape[0]
    wall_limbs = new_accumulator(3 * nw)
    skin = sim.ctl[CTL_SKIN]
    cutoff = 2.0 * sim.ctl[CTL_RMAX] + skin
    t = dict.fromkeys(["select", "geometry", "geometry_frame", "geometry_frame_accumulate", "pair_loop", "walls", "servo",
                       "particle_pass", "rebuild", "compact", "measure"], 0.0)
    f2 = np.zeros_like(sim.force)
    t2 = np.zeros_like(sim.torque)
    pc = time.process_time
    # warm the scratch passes (compile) outside the timing
    q2 = sim.pcq.copy()
    for mode in range(3):
        pass_geometry(sim.pos, sim.radius, sim.cell, sim.ictl, sim.pi, sim.pj, mode, q2, f2, t2, sim.omega, sim.vel,
                      sim.pfs)
    rebuilds = 0
    sc, act, live = _pair_scratch(sim)
    sc2, act2 = sc.copy(), act.copy()
    pass_select(sim.pos, sim.radius, sim.cell, sim.ictl, sim.pi, sim.pj, live, act2, sc2)
    nselect = 0
    for step in range(steps):
        st.ensure_free(int(sim.ictl[ICTL_NPAIRS]) + sim.n * nw + 1024)
        t0 = pc()
        nselect = pass_select(sim.pos, sim.radius, sim.cell, sim.ictl, sim.pi, sim.pj, live, act2, sc2)
        t["select"] += pc() - t0
        for mode, key in enumerate(("geometry", "geometry_frame", "geometry_frame_accumulate")):
            q2[:] = sim.pcq
            t0 = pc()
            pass_geometry(sim.pos, sim.radius, sim.cell, sim.ictl, sim.pi, sim.pj, mode, q2, f2, t2, sim.omega,
                          sim.vel, sim.pfs)
            t[key] += pc() - t0
        t0 = pc()
        ok = pair_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab,
                         sim.cell, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.pk, sim.pm,
                         st.pts, st.nxt, st.meta, sim.acc, sim.out, sc, act, live, sim.stress_limbs, ALL_STRESS_COMPONENTS)
        t["pair_loop"] += pc() - t0
        if nw:
            t0 = pc()
            ok = ok and wall_forces(sim.pos, sim.vel, sim.omega, sim.force, sim.torque, sim.radius, prm, sim.mtab,
                                    sim.ctl, sim.ictl, sim.walls, sim.wcand, sim.wfs, sim.wist, sim.wcq, sim.wk,
                                    sim.wm, st.pts, st.nxt, st.meta, sim.acc, sim.out, sim.stress_limbs, wall_limbs,
                                    ALL_STRESS_COMPONENTS)
            t["walls"] += pc() - t0
        if not ok:
            raise RuntimeError("diverged")
        t0 = pc()
        servo(sim.cell, sim.ctl, sim.ictl, sim.acc)
        t["servo"] += pc() - t0
        t0 = pc()
        maxd2 = advance_particles(sim.pos, sim.vel, sim.omega, sim.quat, sim.force, sim.torque, sim.mass,
                                  sim.inertia, sim.cell, sim.ctl, sim.ictl, sim.pos_build, sim.acc, sim.out)
        t["particle_pass"] += pc() - t0
        wmove = 0.0
        for w in range(nw):
            sim.walls[w, :3] += sim.walls[w, 6:9] * sim.dt
            wmove = max(wmove, abs(float((sim.walls[w, :3] - sim.walls[w, 9:12]) @ sim.walls[w, 3:6])))
        sim.ictl[ICTL_STEP] += 1
        stretch = float(np.max(np.abs(sim.cell[CELL_L:CELL_L + 3] / sim.cell[CELL_LBUILD:CELL_LBUILD + 3] - 1)))
        if 2.0 * math.sqrt(maxd2) + stretch * cutoff > skin or math.sqrt(maxd2) + wmove > skin:
            t0 = pc()
            sim._rebuild()
            t["rebuild"] += pc() - t0
            sc, act, live = _pair_scratch(sim)
            sc2, act2 = sc.copy(), act.copy()
            rebuilds += 1
        t0 = pc()
        compact_on_schedule(sim.ictl, sim.pist, sim.wist, st.pts, st.nxt, st.meta)
        t["compact"] += pc() - t0
    nmeas = 3
    t0 = pc()
    for _ in range(nmeas):
        m = sim.measure()
    t["measure"] = (pc() - t0) / nmeas
    ncont = m["n_contacts"]
    per_step_us = {k: 1e6 * v / steps for k, v in t.items() if k != "measure"}
    law = t["pair_loop"] - t["geometry_frame_accumulate"]
    split = {
        "neighbour_rebuild_us_per_step": per_step_us["rebuild"],
        "store_compaction_us_per_step": per_step_us["compact"],
        "pair_select_us_per_step": per_step_us["select"],
        "pair_rows": int(sim.ictl[ICTL_NPAIRS]),
        "pair_rows_selected": int(nselect),
        "pair_geometry_ns_per_contact": 1e9 * t["geometry"] / steps / ncont,
        "pair_frame_update_ns_per_contact": 1e9 * (t["geometry_frame"] - t["geometry"]) / steps / ncont,
        "pair_accumulate_ns_per_contact": 1e9 * (t["geometry_frame_accumulate"] - t["geometry_frame"]) / steps / ncont,
        "pair_law_and_rest_ns_per_contact": 1e9 * law / steps / ncont,
        "pair_loop_ns_per_contact": 1e9 * t["pair_loop"] / steps / ncont,
        "pair_loop_us_per_step": per_step_us["pair_loop"],
        "walls_us_per_step": per_step_us["walls"],
        "servo_us_per_step": per_step_us["servo"],
        "particle_pass_us_per_step": per_step_us["particle_pass"],
        "particle_pass_ns_per_particle": 1e3 * per_step_us["particle_pass"] / sim.n,
        "measure_ms_per_call": 1e3 * t["measure"],
    }
    step_total = per_step_us["pair_loop"] + per_step_us["walls"] + per_step_us["servo"] + per_step_us["particle_pass"] \
        + per_step_us["rebuild"] + per_step_us["compact"]
    split["step_us"] = step_total
    split["contacts"] = ncont
    split["rebuilds"] = rebuilds
    split["n"] = sim.n
    return split


def packing_case(law):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import vs_lammps as V
    from graindem.engine.simulation import Simulation
    pos, r = V.load_packing()
    sim = Simulation(law=law, E=V.E, nu=V.NU, mu=V.MU, density=V.RHO, restitution=V.E_REST, gravity=(0, 0, -9.81),
                     dt=V.DT)
    top = float((pos[:, 2] + r).max())
    sim.set_box((0, 0, 0), (V.BOX, V.BOX, top + 0.005))
    for p, n in (((0, 0, 0), (1, 0, 0)), ((V.BOX, 0, 0), (-1, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                 ((0, V.BOX, 0), (0, -1, 0)), ((0, 0, 0), (0, 0, 1))):
        sim.add_wall(p, n)
    sim.add_particles(pos, r)
    sim.run(20)
    return sim


def biaxial_case(law, n=4096):
    from graindem.engine import checkpoint
    from graindem.scenarios.biaxial import prepared_packing, start_test
    cache = Path(tempfile.gettempdir()) / "graindem_bench" / f"biaxial_packing_{n}.h5"
    prepared_packing(n, seed=1, cache=cache, announce=lambda m: print(m, flush=True))
    sim, _ = checkpoint.load(cache)
    start_test(sim, law, steps=40000)
    sim.run(20)
    return sim


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="both", choices=("packing", "biaxial", "both"))
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--law", default="mindlin")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = {"provenance": provenance(__file__, argv)}
    cases = ("packing", "biaxial") if args.case == "both" else (args.case,)
    for case in cases:
        for law in args.law.split(","):
            sim = packing_case(law) if case == "packing" else biaxial_case(law)
            res = profile(sim, args.steps)
            out[f"{case}/{law}"] = res
            print(f"{case}/{law}: " + ", ".join(f"{k} {v:.3g}" for k, v in res.items()), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
