"""Hertz contact of two elastic spheres of the same material: the one place these formulas live.

G = E/(2(1+nu)), E* = E/(2(1-nu^2)), R* = R1 R2/(R1+R2);
N = 4/3 E* sqrt(R*) delta^(3/2), a = sqrt(R* delta), k_n = dN/d delta = 2 E* a,
Mindlin's initial tangential stiffness k_t = 4 G a/(2-nu), kappa = k_n/k_t = (2-nu)/(2(1-nu)).
(`delta` is the total overlap, the approach of the two centres.)
"""

import math

import numpy as np

from .._jit import njit
from . import state as S


def _check_positive(name, value):
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def check_material(E, nu, mu, xi=0.0):
    """Validate material parameters, raising ValueError that names the parameter and its range."""
    E = _check_positive("E", E)
    nu = float(nu)
    if not math.isfinite(nu) or not (-1.0 < nu < 0.5):
        raise ValueError(f"nu must lie in the open interval (-1, 0.5), got {nu!r}")
    mu = float(mu)
    if not math.isfinite(mu) or mu < 0.0:
        raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
    xi = float(xi)
    if not math.isfinite(xi) or xi < 0.0:
        raise ValueError(f"xi must be a finite number >= 0, got {xi!r}")
    return E, nu, mu, xi


def effective_radius(R1, R2):
    """R* of two spheres; R2 = inf is a plane (a wall)."""
    R1 = _check_positive("R1", R1)
    R2 = float(R2)
    if math.isinf(R2) and R2 > 0:
        return R1
    R2 = _check_positive("R2", R2)
    return R1 * R2 / (R1 + R2)


def contact_params(R1, R2, E, nu, mu, xi=0.0, kt_linear=0.0, energy=True):
    """The float64 parameter record (see `state.P_*`) of a sphere pair of one material.

    `energy` (P_ENERGY): count each contact's tangential work and frictional dissipation in
    `laws.contact_step` (True) or skip that bookkeeping, which costs about as much as the law
    itself for jaeger (False)."""
    if not isinstance(energy, (bool, np.bool_)) and energy not in (0, 1):
        raise ValueError(f"energy must be True or False (count work and dissipation), got {energy!r}")
    E, nu, mu, xi = check_material(E, nu, mu, xi)
    kt_linear = float(kt_linear)
    if not math.isfinite(kt_linear) or kt_linear < 0.0:
        raise ValueError(f"kt_linear must be a finite number >= 0 (0: Mindlin stiffness), got {kt_linear!r}")
    rstar = effective_radius(R1, R2)
    G = E / (2.0 * (1.0 + nu))
    estar = E / (2.0 * (1.0 - nu * nu))
    prm = np.zeros(S.N_PARAM)
    prm[S.P_CN] = 4.0 / 3.0 * estar * math.sqrt(rstar)
    prm[S.P_RSTAR] = rstar
    prm[S.P_KNC] = 2.0 * estar
    prm[S.P_KTC] = 4.0 * G / (2.0 - nu)
    prm[S.P_KAPPA] = (2.0 - nu) / (2.0 * (1.0 - nu))
    prm[S.P_MU] = mu
    prm[S.P_XI] = xi
    prm[S.P_KTLIN] = kt_linear
    prm[S.P_ESTAR] = estar
    prm[S.P_G] = G
    prm[S.P_NU] = nu
    prm[S.P_ENERGY] = 1.0 if energy else 0.0
    return prm


@njit
def normal_force(prm, delta):
    """Hertz normal force N(delta) (0 for delta <= 0)."""
    if delta <= 0.0:
        return 0.0
    return prm[S.P_CN] * delta * math.sqrt(delta)


@njit
def contact_radius(prm, delta):
    """Hertz contact radius a = sqrt(R* delta) (0 for delta <= 0)."""
    if delta <= 0.0:
        return 0.0
    return math.sqrt(prm[S.P_RSTAR] * delta)


@njit
def normal_stiffness(prm, delta):
    """k_n = dN/d delta = 2 E* a."""
    return prm[S.P_KNC] * contact_radius(prm, delta)


@njit
def tangential_stiffness(prm, delta):
    """Mindlin's initial (no-slip) tangential stiffness k_t = 4 G a / (2 - nu)."""
    return prm[S.P_KTC] * contact_radius(prm, delta)
