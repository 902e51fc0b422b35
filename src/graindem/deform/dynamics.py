"""Modal dynamics of a deformable grain: M ε̈ + C ε̇ + ∂U/∂ε = F_ε (the seed's eqs. 38 and 44).

Generalized forces come from the surface-node forces (their eq. 28, §3.3): each node force is taken
from the world frame into the grain's body frame first, then projected on the mode at the node's
undeformed position, F_εα = Σ_k Φ_α(X_k) · (Rᵀ f_k). The rigid torque uses the *deformed* lever
arm R (X_k + u(X_k)) (their eq. 27, r_k(ε)).

Time integration is leapfrog (velocities at half steps) with the damping force taken at the mean of
the two half-step velocities, so heavy damping (the seed's Table 1: k = m = 1e4, c = 2e4, i.e.
critical damping ζ = c / (2√(km)) = 1) cannot destabilise it: (M + ½Δt C) v⁺ = (M − ½Δt C) v⁻ +
Δt (F_ε − ∂U/∂ε).
"""

import numpy as np
import scipy.linalg


def _square(name, a, n=None):
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    if a.shape[0] != a.shape[1] or (n is not None and a.shape[0] != n):
        raise ValueError(f"{name} must be a square matrix{'' if n is None else f' of size {n}'}, "
                         f"got shape {a.shape}")
    return a


def modal_frequencies(mass, stiffness):
    """Angular eigenfrequencies ω (ascending) of M ε̈ + K ε = 0 (generalized symmetric eigenproblem)."""
    m = _square("mass", mass)
    k = _square("stiffness", stiffness, m.shape[0])
    w2 = scipy.linalg.eigh(k, m, eigvals_only=True)
    return np.sqrt(np.maximum(w2, 0.0))


def damping_matrix(mass, stiffness, ratios=None, rayleigh=None):
    """Modal damping matrix C.

    ``ratios``: damping ratio ζ_i per eigenmode (or one number for all): C = M Ψ diag(2ζ_i ω_i) Ψᵀ M
    with M-orthonormal eigenvectors Ψ, so each eigenmode decays as exp(−ζ_i ω_i t).
    ``rayleigh=(a, b)``: C = a M + b K (b alone is the seed's "proportional to stiffness").
    """
    m = _square("mass", mass)
    k = _square("stiffness", stiffness, m.shape[0])
    if (ratios is None) == (rayleigh is None):
        raise ValueError("give exactly one of ratios or rayleigh")
    if rayleigh is not None:
        a, b = rayleigh
        if a < 0 or b < 0:
            raise ValueError(f"rayleigh coefficients must be >= 0, got {rayleigh}")
        return a * m + b * k
    w2, psi = scipy.linalg.eigh(k, m)
    zeta = np.broadcast_to(np.asarray(ratios, dtype=np.float64), w2.shape)
    if np.any(zeta < 0):
        raise ValueError(f"damping ratios must be >= 0, got {ratios}")
    mp = m @ psi
    return mp @ np.diag(2.0 * zeta * np.sqrt(np.maximum(w2, 0.0))) @ mp.T


def damping_ratio(mass, stiffness, damping):
    """ζ = c / (2√(k m)) for a single mode (scalars or 1×1 matrices)."""
    m = float(np.asarray(mass).reshape(-1)[0])
    k = float(np.asarray(stiffness).reshape(-1)[0])
    c = float(np.asarray(damping).reshape(-1)[0])
    return c / (2.0 * np.sqrt(k * m))


def rigid_critical_step(mass_a, mass_b, contact_stiffness, beta=0.2):
    """β_r √(m_eff / k_n), m_eff = m_a m_b / (m_a + m_b) (m_b = inf for a fixed body).

    The seed prints √(k_n/m_eff) (§3.3): a time step scales as √(mass/stiffness), so the seed's form
    is taken as a typo, as the contact-mechanics notes say.
    """
    if not mass_a > 0 or not mass_b > 0:
        raise ValueError(f"masses must be > 0 (np.inf for a fixed body), got {mass_a}, {mass_b}")
    if not contact_stiffness > 0:
        raise ValueError(f"contact_stiffness must be > 0, got {contact_stiffness}")
    if not 0 < beta <= 2:
        raise ValueError(f"beta must be in (0, 2], got {beta}")
    m_eff = mass_a if np.isinf(mass_b) else mass_a * mass_b / (mass_a + mass_b)
    return beta * np.sqrt(m_eff / contact_stiffness)


def modal_critical_step(mass, max_tangent_stiffness, beta=0.2):
    """β_d / ω_max of the modal system with its stiffest tangent (leapfrog is stable for ω Δt < 2)."""
    if not 0 < beta <= 2:
        raise ValueError(f"beta must be in (0, 2], got {beta}")
    w = modal_frequencies(mass, max_tangent_stiffness)
    return np.inf if w[-1] == 0 else beta / w[-1]


def generalized_forces(mode_values, forces_world, rotation):
    """F_εα = Σ_k Φ_α(X_k) · (Rᵀ f_k).

    mode_values: (n_modes, n_nodes, 3) modes at the nodes' undeformed body positions;
    forces_world: (n_nodes, 3); rotation: body-to-world rotation matrix R (3, 3).
    """
    f_body = np.asarray(forces_world, dtype=np.float64) @ np.asarray(rotation, dtype=np.float64)
    return np.einsum("akj,kj->a", np.asarray(mode_values, dtype=np.float64), f_body)


def force_and_torque(ref_positions, node_displacements, rotation, forces_world):
    """Net force and torque about the centre of mass from node forces, with deformed lever arms.

    ref_positions: undeformed body positions X_k relative to the centre of mass (n, 3);
    node_displacements: u(X_k) in the body frame (n, 3).
    """
    r = np.asarray(rotation, dtype=np.float64)
    levers = (np.asarray(ref_positions) + np.asarray(node_displacements)) @ r.T
    f = np.asarray(forces_world, dtype=np.float64)
    return f.sum(axis=0), np.cross(levers, f).sum(axis=0)


class ModalOscillator:
    """State and leapfrog update of the modal coordinates of one grain.

    ``response`` is any object with ``force(eps)``, ``energy(eps)`` and ``max_tangent()``
    (see `graindem.deform.response`). Velocities live at half steps; `kinetic_energy` averages the two
    half-step values to estimate the on-step velocity.
    """

    def __init__(self, mass, response, damping=None, eps0=None, vel0=None):
        self.mass = _square("mass", mass)
        n = self.mass.shape[0]
        if np.linalg.eigvalsh(self.mass).min() <= 0:
            raise ValueError("mass must be symmetric positive definite")
        if getattr(response, "n_modes", n) != n:
            raise ValueError(f"response has {response.n_modes} modes, mass has {n}")
        self.response = response
        self.damping = np.zeros((n, n)) if damping is None else _square("damping", damping, n)
        self.n_modes = n
        self.eps = np.zeros(n) if eps0 is None else np.asarray(eps0, dtype=np.float64).reshape(n).copy()
        self.vel = np.zeros(n) if vel0 is None else np.asarray(vel0, dtype=np.float64).reshape(n).copy()
        self._vel_prev = self.vel.copy()
        self._eps_prev = self.eps.copy()
        self._cached_dt = None

    def critical_step(self, beta=0.2):
        return modal_critical_step(self.mass, self.response.max_tangent(), beta)

    def _factors(self, dt):
        if self._cached_dt != dt:
            lhs = self.mass + 0.5 * dt * self.damping
            self._lhs = scipy.linalg.cho_factor(lhs)
            self._rhs_matrix = self.mass - 0.5 * dt * self.damping
            self._cached_dt = dt
        return self._lhs, self._rhs_matrix

    def internal_force(self):
        return self.response.force(self.eps)

    def step(self, dt, generalized_force=None):
        """Advance one step with the generalized force evaluated at the current ε."""
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        lhs, rhs_m = self._factors(dt)
        f = -self.internal_force()
        if generalized_force is not None:
            f = f + np.asarray(generalized_force, dtype=np.float64).reshape(self.n_modes)
        self._vel_prev = self.vel
        self._eps_prev = self.eps
        self.vel = scipy.linalg.cho_solve(lhs, rhs_m @ self.vel + dt * f)
        self.eps = self.eps + dt * self.vel
        return self.eps

    def mechanical_energy(self):
        """½ v_nᵀ M v_n + U(ε_n) at the previous full step n (v_n = mean of the half-step velocities)."""
        v = 0.5 * (self.vel + self._vel_prev)
        return 0.5 * v @ self.mass @ v + self.response.energy(self._eps_prev)
