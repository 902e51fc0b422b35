"""The deforming periodic cell's advance: strain rates prescribed or set by a stress servo.

Each axis is strain-controlled (a prescribed rate dL/(L dt)) or stress-controlled (a PI servo on
the difference between the measured and the target stress, limited to a maximum rate). Shear is a
prescribed velocity gradient. The work the cell does on the particles is accumulated for the
energy balance.
"""

from .._jit import njit
from ..core.cell import CELL_INTEGRAL, CELL_L, CELL_RATE, CELL_SHEAR_RATE
from ..core.layout import (ACC_BOUNDARY_WORK, ACC_STRESS, CTL_DT, CTL_GAIN, CTL_INTEGRAL, CTL_MAXRATE,
                           CTL_RATE, CTL_SHEAR, CTL_TARGET, ICTL_MODE, ICTL_PERIODIC)


@njit(_nrt=False, inline="always")
def shear_component(k):
    """The stress-sum component (row-major f_a l_b) that the off-diagonal velocity gradient k
    (L_xy, L_xz, L_yz) pairs with in the cell's work: (a, b) = (0, 1), (0, 2), (1, 2)."""
    return 1 if k == 0 else (2 if k == 1 else 5)


@njit(_nrt=False, inline="always")
def stress_components_read(cell, ctl, ictl, want):
    """Marks in want (9,) the stress-sum components the coming servo call reads and returns how
    many: the normal one of an axis on the stress servo or of one the cell deforms along now or
    did in the last step (the work it does on the spheres), the shear one of a shear gradient on
    now or in the last step. Every other term of the servo is a stress times a zero rate."""
    for c in range(9):
        want[c] = 0
    n = 0
    for k in range(3):
        if ictl[ICTL_PERIODIC + k] != 0 and (ictl[ICTL_MODE + k] == 1 or ctl[CTL_RATE + k] != 0.0
                                            or cell[CELL_RATE + k] != 0.0):
            want[4 * k] = 1
            n += 1
        if ctl[CTL_SHEAR + k] != 0.0 or cell[CELL_SHEAR_RATE + k] != 0.0:
            want[shear_component(k)] = 1
            n += 1
    return n


@njit(_nrt=False)
def servo(cell, ctl, ictl, acc):
    """Strain rates of the periodic cell for the next step: prescribed, or servo on stress.

    Also counts the work the cell's deformation does on the assembly, -V sum_k sigma_kk rate_k dt
    (compression positive: shrinking the cell does positive work), by the trapezoid rule.
    """
    vol = cell[CELL_L] * cell[CELL_L + 1] * cell[CELL_L + 2]
    for k in range(3):
        rate_before = cell[CELL_RATE + k]
        if ictl[ICTL_PERIODIC + k] == 0:
            cell[CELL_RATE + k] = 0.0
        elif ictl[ICTL_MODE + k] == 1:
            sigma = acc[ACC_STRESS + 4 * k] / vol
            target = ctl[CTL_TARGET + k]
            lim = ctl[CTL_MAXRATE + k]
            # proportional-integral: the integral removes the steady error of a proportional
            # servo that must follow a steady strain rate (dilatancy in a biaxial test)
            p_term = ctl[CTL_GAIN + k] * (sigma - target) / target
            integral = cell[CELL_INTEGRAL + k] + ctl[CTL_INTEGRAL + k] * p_term
            if integral > lim:
                integral = lim
            elif integral < -lim:
                integral = -lim
            cell[CELL_INTEGRAL + k] = integral
            rate = p_term + integral
            if rate > lim:
                rate = lim
            elif rate < -lim:
                rate = -lim
            cell[CELL_RATE + k] = rate
        else:
            cell[CELL_RATE + k] = ctl[CTL_RATE + k]
        # trapezoid rule: the stress now closes the last step and opens the next one
        acc[ACC_BOUNDARY_WORK] -= 0.5 * acc[ACC_STRESS + 4 * k] * (rate_before + cell[CELL_RATE + k]) * ctl[CTL_DT]
    # off-diagonal velocity gradients L_xy, L_xz, L_yz: prescribed; their share of -V sigma:L dt
    # pairs each with the stress component sum f_a l_b of the same (a, b) = (0, 1), (0, 2), (1, 2)
    for k in range(3):
        before = cell[CELL_SHEAR_RATE + k]
        now = ctl[CTL_SHEAR + k]
        cell[CELL_SHEAR_RATE + k] = now
        if before != 0.0 or now != 0.0:
            acc[ACC_BOUNDARY_WORK] -= 0.5 * acc[ACC_STRESS + shear_component(k)] * (before + now) * ctl[CTL_DT]


def pending_cell_work(acc, cell, dt):
    """The half of the cell's work over the last step that the servo books when the next step
    starts (the trapezoid's closing half: the last step's strain and shear rates with the stress
    sum in acc now), for an energy balance read between steps."""
    r = cell[CELL_RATE:CELL_RATE + 3]
    g = cell[CELL_SHEAR_RATE:CELL_SHEAR_RATE + 3]
    pending = (acc[ACC_STRESS] * r[0] + acc[ACC_STRESS + 4] * r[1] + acc[ACC_STRESS + 8] * r[2]
               + acc[ACC_STRESS + 1] * g[0] + acc[ACC_STRESS + 2] * g[1] + acc[ACC_STRESS + 5] * g[2])
    return -0.5 * float(pending) * dt
