"""The step of a run with spheres and rigid level-set grains (bodies.mixed), many steps in one
njit call: one step of the sphere loop (loop.run_steps, which runs the one servo on the whole
assembly's stress and moves the cell, and the walls' servo on both kinds' wall forces), the grains'
first half step with the cell's flow of that step, the grains' list, the grain-sphere list, the
forces at the new positions, the grains' second half kick. A phase that needs longer arrays returns to Python (mctl[MC_STATUS], mctl[MC_PHASE]),
which grows them and resumes the step at that phase (engine.mixed_setup). The phases but the
forces are functions inlined here and in engine.mixed_hertz_loop, the step of the Hertz-curvature
grain law, which runs them in the same order.

Gravity's work on the spheres over the step, sum m g . v dt with the velocity of their drift (the
cell's affine flow is the cell's work, not gravity's, as for the grains), goes to
sg_energy[E_GRAVITY]: the sphere loop does not count it, and a sum over the steps keeps it right
where a sphere crosses a periodic face."""

from .._jit import njit
from ..boundaries.walls import follow_servo_walls
from ..bodies.levelset import GC_STEP, complete_step, neighbour_cutoff
from ..bodies.mixed import (MC_GRAIN_DIVERGED, MC_PHASE, MC_SG_DIVERGED, MC_STALE, MC_STATUS, mixed_forces,
                            rebuild_grain_list, rebuild_sphere_grain_pairs, sphere_grain_cutoff, sphere_grain_stale,
                            start_grain_step)
from ..contact.levelset_contact import E_GRAVITY
from ..core.layout import CTL_LOCAL_DAMP, OUT_STATUS
from ..core.layout import STATUS_DONE as SPHERES_DONE
from ..core.layout import STATUS_PAIRS_FULL as SPHERE_PAIRS_FULL
from .loop import run_steps


@njit
def sphere_gravity_work(dt, gravity, s_vel, s_mass, energy):
    """energy[E_GRAVITY] += sum over the spheres of m g . v dt (module docstring)."""
    work = 0.0
    for i in range(s_vel.shape[0]):
        work += s_mass[i] * (gravity[0] * s_vel[i, 0] + gravity[1] * s_vel[i, 1] + gravity[2] * s_vel[i, 2])
    energy[E_GRAVITY] += work * dt

STATUS_DONE = 0
STATUS_GRAIN_PAIRS_FULL = 1   # grow the grains' pair list, resume at PHASE_GRAIN_LIST
STATUS_SPHERES = 2            # run_steps stopped (store low, pairs full, diverged): see its out record
STATUS_SG_PAIRS_FULL = 3      # grow the grain-sphere pair list, resume at PHASE_SG_LIST
STATUS_GRAIN_DIVERGED = MC_GRAIN_DIVERGED   # the grains' record (gctl) names where
STATUS_SG_DIVERGED = MC_SG_DIVERGED         # MC_BAD_GRAIN, MC_BAD_SPHERE name the contact

PHASE_SPHERES, PHASE_GRAINS, PHASE_GRAIN_LIST, PHASE_SG_LIST, PHASE_FORCES = 0, 1, 2, 3, 4
PHASE_START = PHASE_SPHERES


@njit(inline="always")
def sphere_phase(sph, dt, gravity, sg_energy, mctl):
    """Phase PHASE_SPHERES: one step of the sphere loop (sph: the arguments of engine.loop.run_steps
    after the step count) and gravity's work on the spheres over it. False if the sphere step
    stopped: mctl[MC_STATUS] STATUS_SPHERES (run_steps's out record says why), mctl[MC_PHASE] where
    to resume."""
    out = sph[40]
    run_steps(1, *sph)
    if out[OUT_STATUS] == SPHERES_DONE or out[OUT_STATUS] == SPHERE_PAIRS_FULL:  # the spheres moved
        sphere_gravity_work(dt, gravity, sph[1], sph[7], sg_energy)
    if out[OUT_STATUS] != SPHERES_DONE:
        mctl[MC_STATUS] = STATUS_SPHERES
        # pairs full: the sphere step is done but for its rebuild, which the caller makes
        mctl[MC_PHASE] = PHASE_GRAINS if out[OUT_STATUS] == SPHERE_PAIRS_FULL else PHASE_SPHERES
        return False
    return True


@njit(inline="always")
def grain_phase(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque,
                gravity, cell, walls, s_walls, pos_build, record, energy, acc, gctl, mctl):
    """Phase PHASE_GRAINS: the grains' first half step (bodies.mixed.start_grain_step) with their
    copy of the walls moving at the velocities of the spheres' `s_walls` (the sphere step's servo
    set those of the servo walls on both kinds' forces); whether their list is stale goes to
    mctl[MC_STALE]. False if a grain diverged (mctl[MC_STATUS])."""
    follow_servo_walls(walls, s_walls, walls.shape[0])
    ok, stale = start_grain_step(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass, inertia, motion,
                                 force, torque, gravity, cell, walls, pos_build, record, energy, acc, gctl)
    if not ok:
        mctl[MC_STATUS] = STATUS_GRAIN_DIVERGED
        return False
    mctl[MC_STALE] = 1 if stale else 0
    return True


@njit(inline="always")
def grain_list_phase(pos, radius, cell, periodic, skin, pairs, pos_build, gctl, record, mctl):
    """Phase PHASE_GRAIN_LIST: the grains' own list rebuilt when mctl[MC_STALE] says so. Returns
    1 if rebuilt, 0 if it was fresh, -1 if `pairs` must grow (mctl[MC_STATUS], mctl[MC_PHASE])."""
    if mctl[MC_STALE] == 0:
        return 0
    if not rebuild_grain_list(pos, radius, cell, periodic, skin, pairs, pos_build, gctl, record):
        mctl[MC_STATUS] = STATUS_GRAIN_PAIRS_FULL
        mctl[MC_PHASE] = PHASE_GRAIN_LIST
        return -1
    mctl[MC_STALE] = 0
    return 1


@njit(inline="always")
def sphere_grain_list_phase(g_pos, g_radius, s_pos, s_radius, cell, periodic, skin, cutoff, pairs, g_build, s_build,
                            record, mctl):
    """Phase PHASE_SG_LIST: the grain-sphere list rebuilt when stale. Returns 1 if rebuilt, 0 if
    it was fresh, -1 if `pairs` must grow (mctl[MC_STATUS], mctl[MC_PHASE])."""
    if not sphere_grain_stale(g_pos, g_build, s_pos, s_build, cell, record, cutoff, skin):
        return 0
    if not rebuild_sphere_grain_pairs(g_pos, g_radius, s_pos, s_radius, cell, periodic, skin, pairs, g_build, s_build,
                                      record, mctl):
        mctl[MC_STATUS] = STATUS_SG_PAIRS_FULL
        mctl[MC_PHASE] = PHASE_SG_LIST
        return -1
    return 1


@njit
def run_mixed(n_steps, phase, dt, skin, limit, tpl, gb, gc, gh, gs, g_pairs, g_build, g_record, gravity, cell,
              periodic, ctl, g_walls, wall_mat, g_acc, gctl, sph, s_material, sg_pairs, sg_g_build, sg_s_build,
              sg_record, sg_energy, mctl):
    """Advance up to n_steps steps of both kinds, the first from `phase` (module docstring);
    returns the steps completed, mctl[MC_STATUS] says why it returned and mctl[MC_PHASE] where to
    resume. tpl, gb, gc, gh, gs: the grains' template, body, contact, history and scratch arrays
    (LevelSetBodies); g_record, sg_record: the build records of the grains' list and of the
    grain-sphere list (bodies.mixed.REC_*); sph: the arguments of engine.loop.run_steps after the
    step count, its `more` the grains' accumulators (g_acc: their stress sum and wall forces)."""
    pos, vel, quat, rot, angmom, omega, mass, inertia, motion, radius, material, force, torque = gb
    energy = gs[11]
    s_pos, s_vel, s_omega, s_quat, s_force, s_torque, s_radius, s_mass = sph[:8]
    alpha = ctl[CTL_LOCAL_DAMP]
    cutoff = neighbour_cutoff(radius, skin)
    sg_cutoff = sphere_grain_cutoff(radius, s_radius, skin)
    mctl[MC_STATUS] = STATUS_DONE
    for it in range(n_steps):
        if phase <= PHASE_SPHERES and not sphere_phase(sph, dt, gravity, sg_energy, mctl):
            return it
        if phase <= PHASE_GRAINS and not grain_phase(dt, alpha, skin, cutoff, pos, vel, quat, rot, angmom, omega, mass,
                                                     inertia, motion, force, torque, gravity, cell, g_walls, sph[15],
                                                     g_build, g_record, energy, g_acc, gctl, mctl):
            return it
        if phase <= PHASE_GRAIN_LIST and grain_list_phase(pos, radius, cell, periodic, skin, g_pairs, g_build, gctl,
                                                          g_record, mctl) < 0:
            return it
        if phase <= PHASE_SG_LIST and sphere_grain_list_phase(pos, radius, s_pos, s_radius, cell, periodic, skin,
                                                              sg_cutoff, sg_pairs, sg_g_build, sg_s_build, sg_record,
                                                              mctl) < 0:
            return it
        if not mixed_forces(gctl[GC_STEP] + 1, dt, limit, tpl, gb, gc, gh, gs, g_pairs, gravity, cell, periodic,
                            g_walls, wall_mat, g_acc, gctl, s_pos, s_vel, s_omega, s_radius, s_mass, s_material,
                            s_force, s_torque, sg_pairs, sg_energy, mctl):
            return it
        complete_step(dt, alpha, vel, quat, rot, angmom, omega, mass, inertia, motion, force, torque, g_walls, energy,
                      g_acc, gctl)
        phase = PHASE_START
    return n_steps
