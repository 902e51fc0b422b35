"""The step of a run with spheres and level-set grains whose grain contacts take the
"hertz_curvature" law (some material pairs may keep the node law): `engine.mixed_loop.run_mixed`'s
order, phases (its phase functions), statuses and resumption (the sphere step first, with the one servo and the cell's
move; then the grains), with the grains' Hertz rows (bodies.levelset_hertz: rows carried at
the grains' rebuild, `hertz_forces`) and the grain-sphere rows (bodies.mixed_hertz: rows carried at
the grain-sphere rebuild, `sphere_grain_hertz_forces`).

Before the sphere phase of a step the kernel returns (status done, fewer steps) when either history store has
less free room than one point per row, the most a step can push; the caller grows the stores and
calls again. One compiled entry per tangential law (as `levelset_hertz.LAW_KERNELS`)."""

from .._jit import njit
from ..bodies.levelset import GC_NCP, GC_NPAIRS, GC_STEP, complete_step, neighbour_cutoff
from ..bodies.levelset_hertz import carry_rows, hertz_forces
from ..bodies.mixed import MC_GRAIN_DIVERGED, MC_NPAIRS, MC_SG_DIVERGED, MC_STATUS, sphere_grain_cutoff
from ..bodies.mixed_hertz import sphere_grain_hertz_forces
from ..contact.rows import step_jaeger_outlined, step_linear, step_md_incremental, step_mindlin
from ..contact.store import M_CAPACITY, M_LIVE
from ..core.layout import CTL_LOCAL_DAMP
from .mixed_loop import (PHASE_GRAIN_LIST, PHASE_GRAINS, PHASE_SG_LIST, PHASE_SPHERES, PHASE_START, STATUS_DONE,
                         grain_list_phase, grain_phase, sphere_grain_list_phase, sphere_phase)

# what a call does
MODE_RUN = 0
MODE_FORCES = 1   # only the forces at the current state (counted as the grains' current step)


@njit(inline="always")
def mixed_hertz_forces(law_step, count, step, dt, limit, tmpls, grains, env, lawp, nodes, rows, nbr, out, spheres,
                       sg_pairs, sgrows, sg_energy, node_pairs, mctl):
    """Forces at the current positions, counted as step `step`: the grains' (gravity, grain pairs,
    walls; levelset_hertz.hertz_forces), then the grain-sphere contacts. False if a contact
    diverged (gctl or mctl names it)."""
    gravity, cell, ctl, ictl, periodic, walls, wall_rot, wmat, acc = env
    pairs, pos_build, gctl, hctl, hkey = nbr
    cp_x, cp_f, cp_ij, energy, _ = out
    n_cp = hertz_forces(law_step, count, step, dt, limit, pairs, gctl[GC_NPAIRS], tmpls, grains, env, lawp, nodes,
                        rows, out)
    if n_cp < 0:
        mctl[MC_STATUS] = MC_GRAIN_DIVERGED
        return False
    n_cp = sphere_grain_hertz_forces(law_step, count, step, dt, limit, sg_pairs, mctl[MC_NPAIRS], tmpls, grains, lawp,
                                     nodes, spheres, sgrows, cell, periodic, walls, acc, cp_x, cp_f, cp_ij, n_cp,
                                     sg_energy, node_pairs, mctl)
    if n_cp < 0:
        mctl[MC_STATUS] = MC_SG_DIVERGED
        return False
    gctl[GC_NCP] = n_cp  # the grains' contact points, grain-sphere ones included (contact_network)
    return True


@njit(inline="always")
def run_mixed_hertz(law_step, count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                    out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows, sg_hkey, sg_hctl,
                    sg_energy, node_pairs, mctl):
    """Advance up to n_steps steps of both kinds, the first from `phase` (module docstring; the
    phases, statuses and order of engine.mixed_loop.run_mixed); returns the steps completed. mode
    MODE_FORCES: only the forces (returns 1 unless they diverged). tmpls..out: the grains' HertzRows
    groups; sph: the arguments of engine.loop.run_steps after the step count; g_record, sg_record:
    the build records of the grains' list and of the grain-sphere list (bodies.mixed.REC_*);
    sgrows: SphereGrainHertz.rows()."""
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, req, force, torque = grains
    gravity, cell, ctl, ictl, periodic, walls, wall_rot, wmat, acc = env
    pfs, pist, pcq, prow, wfs, wist, wcq, wrow, hacc, pts, nxt, meta = rows
    pairs, pos_build, gctl, hctl, hkey = nbr
    energy = out[3]
    s_pos, s_vel, s_omega, s_quat, s_force, s_torque, s_radius, s_mass = sph[:8]
    s_material = sph[9]
    fs, ist, cq, row, sg_hacc, sg_pts, sg_nxt, sg_meta = sgrows
    spheres = (s_pos, s_vel, s_omega, s_radius, s_mass, s_material, s_force, s_torque)
    mctl[MC_STATUS] = STATUS_DONE
    if mode == MODE_FORCES:
        return 1 if mixed_hertz_forces(law_step, count, gctl[GC_STEP], dt, limit, tmpls, grains, env, lawp, nodes,
                                       rows, nbr, out, spheres, sg_pairs, sgrows, sg_energy, node_pairs, mctl) else 0
    alpha = ctl[CTL_LOCAL_DAMP]
    cutoff = neighbour_cutoff(radius, skin)
    sg_cutoff = sphere_grain_cutoff(radius, s_radius, skin)
    G = pos.shape[0]
    N = s_pos.shape[0]
    for it in range(n_steps):
        if phase <= PHASE_SPHERES:
            # each row pushes at most one history point a step, a rebuild lists at most len(keys) pairs
            if meta[M_CAPACITY] - meta[M_LIVE] < hkey.shape[0] + wfs.shape[0] or \
                    sg_meta[M_CAPACITY] - sg_meta[M_LIVE] < sg_hkey.shape[0]:
                return it
            if not sphere_phase(sph, dt, gravity, sg_energy, mctl):
                return it
        if phase <= PHASE_GRAINS and not grain_phase(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass,
                                                     inertia, motion, force, torque, gravity, cell, walls, sph[15],
                                                     pos_build, g_record, energy, acc, gctl, mctl):
            return it
        if phase <= PHASE_GRAIN_LIST:
            listed = grain_list_phase(pos, radius, cell, periodic, skin, pairs, pos_build, gctl, g_record, mctl)
            if listed < 0:
                return it
            if listed > 0:
                carry_rows(pairs, gctl[GC_NPAIRS], G, hctl, hkey, pfs, pist, pcq, prow, hacc, pts, nxt, meta)
        if phase <= PHASE_SG_LIST:
            listed = sphere_grain_list_phase(pos, radius, s_pos, s_radius, cell, periodic, skin, sg_cutoff, sg_pairs,
                                             sg_g_build, sg_s_build, sg_record, mctl)
            if listed < 0:
                return it
            if listed > 0:
                carry_rows(sg_pairs, mctl[MC_NPAIRS], G + N, sg_hctl, sg_hkey, fs, ist, cq, row, sg_hacc, sg_pts,
                           sg_nxt, sg_meta)
        if not mixed_hertz_forces(law_step, count, gctl[GC_STEP] + 1, dt, limit, tmpls, grains, env, lawp, nodes,
                                  rows, nbr, out, spheres, sg_pairs, sgrows, sg_energy, node_pairs, mctl):
            return it
        complete_step(dt, alpha, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, walls, energy,
                      acc, gctl)
        phase = PHASE_START
    return n_steps


# One entry per tangential law, each passing its step (contact.rows) as a global function to the
# inlined kernels (see levelset_hertz.LAW_KERNELS for why).
@njit
def run_mixed_hertz_linear(count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                           out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows, sg_hkey, sg_hctl,
                           sg_energy, node_pairs, mctl):
    return run_mixed_hertz(step_linear, count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes,
                           rows, nbr, out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows, sg_hkey,
                           sg_hctl, sg_energy, node_pairs, mctl)


@njit
def run_mixed_hertz_mindlin(count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                            out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows, sg_hkey, sg_hctl,
                            sg_energy, node_pairs, mctl):
    return run_mixed_hertz(step_mindlin, count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes,
                           rows, nbr, out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows, sg_hkey,
                           sg_hctl, sg_energy, node_pairs, mctl)


@njit
def run_mixed_hertz_md_incremental(count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows,
                                   nbr, out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows,
                                   sg_hkey, sg_hctl, sg_energy, node_pairs, mctl):
    return run_mixed_hertz(step_md_incremental, count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp,
                           nodes, rows, nbr, out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows,
                           sg_hkey, sg_hctl, sg_energy, node_pairs, mctl)


@njit
def run_mixed_hertz_jaeger(count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env, lawp, nodes, rows, nbr,
                           out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record, sgrows, sg_hkey, sg_hctl,
                           sg_energy, node_pairs, mctl):
    return run_mixed_hertz(step_jaeger_outlined, count, mode, n_steps, phase, dt, skin, limit, tmpls, grains, env,
                           lawp, nodes, rows, nbr, out, sph, g_record, sg_pairs, sg_g_build, sg_s_build, sg_record,
                           sgrows, sg_hkey, sg_hctl, sg_energy, node_pairs, mctl)


# in TANGENTIAL_LAWS order
MIXED_HERTZ_KERNELS = (run_mixed_hertz_linear, run_mixed_hertz_mindlin, run_mixed_hertz_md_incremental,
                       run_mixed_hertz_jaeger)
