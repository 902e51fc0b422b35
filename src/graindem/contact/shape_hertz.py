"""Hertz's normal force from the local curvatures at a contact point: the effective radius rules.

The gap between two smooth surfaces at their contact point is h = 1/2 (lam1 y1^2 + lam2 y2^2) with
lam1 <= lam2 the principal relative curvatures (`shape_geometry`), Johnson's A = lam1/2, B = lam2/2.
Hertz's elliptical solution gives P = 4/3 E* sqrt(R_e) delta^(3/2) / F2(e)^(3/2) with the Gaussian
radius R_e = 1/sqrt(lam1 lam2) and a factor F2 that depends only on B/A (Johnson, Contact Mechanics
§4.2, eq. 4.41 and Fig. 4.4). The rules (force error against the exact elliptical solution, from
`shape_references.hertz_elliptic`, for B/A = 2, 4, 16):
    RADIUS_MEAN      R = 2/(lam1 + lam2), the mean-curvature radius    -3.9 %, -14 %, -41 %
    RADIUS_GAUSS     R = 1/sqrt(lam1 lam2), the Gaussian radius          -1.0 %, -3.8 %, -14 %
    RADIUS_ELLIPTIC  R = R_e / F2^3 with Johnson's fit
                     F2 = 1 - ((B/A)^0.0684 - 1)^1.531                   +0.5 %, +0.5 %, -0.3 %
RADIUS_ELLIPTIC is the default ("hertz_curvature"): the only rule within 3 % for B/A up to 4 and
beyond. All three agree for spheres (lam1 = lam2).

Flat and concave points. A relative curvature <= 0 (flat on flat, or a concave region of a
non-convex grain) has no Hertz solution. As Aspherix's `curvatureLimitFactor`, each principal
relative curvature is bounded below by 1/(limit R_ref), with R_ref the pair's volume-equivalent
effective radius, and the resulting R is bounded by limit R_ref: a contact on a flat face behaves
as a sphere of radius limit R_ref there, never as an infinitely stiff one. `effective_radius`
reports whether the bound acted.
"""

import math

from .._jit import njit

# the contact laws of level-set grains, by name (contact.shape_law, Simulation.set_pair_shape_law):
# the node-to-level-set laws of contact.levelset_contact, or Hertz with the local curvature
SHAPE_AREA = "area"
SHAPE_HERTZ = "hertz_curvature"
SHAPE_LAWS = (SHAPE_AREA, SHAPE_HERTZ)

RADIUS_MEAN = 0
RADIUS_GAUSS = 1
RADIUS_ELLIPTIC = 2
RADIUS_RULES = {"mean": RADIUS_MEAN, "gauss": RADIUS_GAUSS, "elliptic": RADIUS_ELLIPTIC}


def radius_rule(name):
    """The id of an effective-radius rule name, with a clear error for an unknown name."""
    try:
        return RADIUS_RULES[name]
    except (KeyError, TypeError):
        raise ValueError(f"radius_rule must be one of {', '.join(RADIUS_RULES)}; got {name!r}") from None


@njit
def johnson_f2(ratio):
    """Johnson's fit of the approach factor F2 of an elliptical Hertz contact, ratio = B/A >= 1."""
    if ratio <= 1.0:
        return 1.0
    # the fit turns negative beyond B/A ~ 2.5e4 (where the radius bound acts anyway): keep it > 0
    return max(1.0 - (ratio**0.0684 - 1.0) ** 1.531, 0.1)


@njit
def effective_radius(rule, lam1, lam2, r_limit):
    """(R, limited): the effective radius of the rule for principal relative curvatures lam1 <= lam2,
    bounded so that each curvature is >= 1/r_limit and R <= r_limit (r_limit = limit x R_ref > 0)."""
    floor = 1.0 / r_limit
    limited = False
    if not (lam1 >= floor):  # also catches NaN
        lam1 = floor
        limited = True
    if not (lam2 >= floor):
        lam2 = floor
        limited = True
    if lam1 > lam2:
        lam1, lam2 = lam2, lam1
    if rule == RADIUS_MEAN:
        R = 2.0 / (lam1 + lam2)
    else:
        R = 1.0 / math.sqrt(lam1 * lam2)
        if rule == RADIUS_ELLIPTIC:
            f2 = johnson_f2(lam2 / lam1)
            R /= f2 * f2 * f2
    if R > r_limit:
        R = r_limit
        limited = True
    return R, limited
