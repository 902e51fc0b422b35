"""The rolling pass: rolling and twisting resistance (contact.rolling) of the touching rows.

Run after the pair and wall passes of a step, only in runs with rolling or twisting resistance
(their rows carry rolling state, `prs`/`wrs` with columns); it reads what those passes left in
each touching row (overlap, normal force, the frame turned for this step) and the spins they
used, and adds each row's moments to the torques. Why a pass of its own rather than a part of
each law's force pass: it depends on no law, so it is compiled once, small, for every law; the
law passes, and with them the runs without rolling resistance, stay as they are (their code and
their results bit for bit), and no variant of the time loop with its passes has to be compiled.
"""

from .._jit import njit
from ..contact import state as S
from ..contact.rows import rolling_moments
from ..core.layout import CTL_DT, ICTL_NPAIRS, ICTL_NWALLS, ICTL_NWCAND, ICTL_STEP


@njit(_nrt=False)
def rolling_pass(omega, torque, radius, mass, inertia, mtab, rtab, ctl, ictl, pi, pj, pfs, pcq, pk, pm, prs,
                 wcand, wfs, wcq, wk, wm, wrs):
    """Add the rolling and twisting moments of every touching pair and wall row to the torques."""
    step = float(ictl[ICTL_STEP])
    dt = ctl[CTL_DT]
    for c in range(ictl[ICTL_NPAIRS]):
        if pfs[c, S.F_DELTA] > 0.0:
            rolling_moments(omega, mass, inertia, radius, mtab, rtab, step, dt, pfs, pcq, pk, pm, prs, torque,
                            pi[c], pj[c], c)
    nw = ictl[ICTL_NWALLS]
    for c in range(ictl[ICTL_NWCAND]):
        if wfs[c, S.F_DELTA] > 0.0:
            rolling_moments(omega, mass, inertia, radius, mtab, rtab, step, dt, wfs, wcq, wk, wm, wrs, torque,
                            wcand[c] // nw, -1, c)
