"""Internal generalized forces F_int(ε) = ∂U/∂ε of the modal degrees of freedom.

Three forms, one interface (``force(eps)``, ``energy(eps)``, ``max_tangent()``):

- `LinearResponse`: U = ½ εᵀKε (the seed's eq. 3), from an integrated or given K.
- `TabulatedForce`: one mode whose F(ε) is a piecewise-linear table (the seed's Appendix B); the
  energy is its exact integral, so the force is still a gradient and the modal system is conservative.
- `FittedEnergy`: a polynomial U_θ(ε) without constant and linear terms (U(0) = 0, F(0) = 0), fitted
  by linear least squares to snapshot energies (eq. 56) or reaction forces (eq. 58); F = ∇U_θ (eq. 57).
"""

import itertools

import numpy as np


def _as_amplitudes(eps, n):
    eps = np.asarray(eps, dtype=np.float64).reshape(-1)
    if eps.size != n:
        raise ValueError(f"eps must have {n} entries (one per mode), got {eps.size}")
    return eps


class LinearResponse:
    """U = ½ εᵀ K ε with a symmetric positive semi-definite K (n_modes × n_modes)."""

    def __init__(self, stiffness):
        k = np.atleast_2d(np.asarray(stiffness, dtype=np.float64))
        if k.shape[0] != k.shape[1]:
            raise ValueError(f"stiffness must be square, got shape {k.shape}")
        if not np.allclose(k, k.T, rtol=1e-10, atol=1e-12 * np.abs(k).max(initial=0.0)):
            raise ValueError("stiffness must be symmetric")
        if np.linalg.eigvalsh(k).min() < -1e-10 * max(np.abs(k).max(), 1e-300):
            raise ValueError("stiffness must be positive semi-definite")
        self.stiffness = k
        self.n_modes = k.shape[0]

    def force(self, eps):
        return self.stiffness @ _as_amplitudes(eps, self.n_modes)

    def energy(self, eps):
        e = _as_amplitudes(eps, self.n_modes)
        return 0.5 * e @ self.stiffness @ e

    def tangent(self, eps=None):
        return self.stiffness.copy()

    def max_tangent(self):
        return self.stiffness.copy()


class TabulatedForce:
    """Single-mode F(ε) interpolated linearly in a table (ε_0 = 0 < ε_1 < ... , F_0 = 0).

    ``force_scale`` multiplies the table (for instance 6 when the table is the reaction of one of
    six walls and the mode's generalized force collects all six; see the deformable validation notes).
    Beyond the last point the last segment is continued linearly. For ε < 0 the table is mirrored
    (F(−ε) = −F(ε)): the table describes compression only, and the mirror keeps U convex and
    smooth through 0; say so when that branch matters.
    """

    n_modes = 1

    def __init__(self, eps_table, force_table, force_scale=1.0):
        e = np.asarray(eps_table, dtype=np.float64).reshape(-1)
        f = np.asarray(force_table, dtype=np.float64).reshape(-1)
        if e.size != f.size or e.size < 2:
            raise ValueError("eps_table and force_table must have the same length, at least 2")
        if e[0] != 0.0 or f[0] != 0.0:
            raise ValueError("the table must start at (eps, force) = (0, 0)")
        if np.any(np.diff(e) <= 0):
            raise ValueError("eps_table must be strictly increasing")
        if not force_scale > 0:
            raise ValueError(f"force_scale must be > 0, got {force_scale}")
        self.eps_table = e
        self.force_table = f * float(force_scale)
        self.slopes = np.diff(self.force_table) / np.diff(e)
        seg_energy = 0.5 * (self.force_table[1:] + self.force_table[:-1]) * np.diff(e)
        self.energy_table = np.concatenate([[0.0], np.cumsum(seg_energy)])

    def _scalar_force(self, x):
        a = abs(x)
        i = min(np.searchsorted(self.eps_table, a, side="right") - 1, self.slopes.size - 1)
        value = self.force_table[i] + self.slopes[i] * (a - self.eps_table[i])
        return value if x >= 0 else -value

    def force(self, eps):
        x = float(_as_amplitudes(eps, 1)[0])
        return np.array([self._scalar_force(x)])

    def energy(self, eps):
        a = abs(float(_as_amplitudes(eps, 1)[0]))
        i = min(np.searchsorted(self.eps_table, a, side="right") - 1, self.slopes.size - 1)
        d = a - self.eps_table[i]
        return self.energy_table[i] + self.force_table[i] * d + 0.5 * self.slopes[i] * d * d

    def tangent(self, eps):
        a = abs(float(_as_amplitudes(eps, 1)[0]))
        i = min(np.searchsorted(self.eps_table, a, side="right") - 1, self.slopes.size - 1)
        return np.array([[self.slopes[i]]])

    def max_tangent(self):
        return np.array([[self.slopes.max()]])


def _monomials(n_modes, degree):
    """Exponent tuples of all monomials of total degree 2..degree in n_modes variables."""
    if degree < 2:
        raise ValueError(f"degree must be >= 2, got {degree}")
    out = []
    for total in range(2, degree + 1):
        for combo in itertools.combinations_with_replacement(range(n_modes), total):
            exps = [0] * n_modes
            for c in combo:
                exps[c] += 1
            out.append(tuple(exps))
    return np.array(out, dtype=np.int64)


class FittedEnergy:
    """U_θ(ε) = Σ_m θ_m Π_α ε_α^{p_mα}, total degree 2..``degree``; F = ∇U_θ.

    Build with `fit_energies` (eq. 56) or `fit_forces` (eq. 58). ``scale`` (per mode) nondimensionalizes
    ε inside the monomials so that the least-squares matrix stays well conditioned.
    """

    def __init__(self, exponents, coefficients, scale):
        self.exponents = np.asarray(exponents, dtype=np.int64)
        self.coefficients = np.asarray(coefficients, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.n_modes = self.exponents.shape[1]
        self._tangent_bound = None

    @staticmethod
    def _check_samples(eps_samples, n_values, what):
        e = np.asarray(eps_samples, dtype=np.float64)
        if e.ndim == 1:
            e = e[:, None]
        if e.ndim != 2 or e.shape[0] != n_values:
            raise ValueError(f"eps_samples must have one row per {what}, got shape {e.shape}")
        return e

    @classmethod
    def fit_energies(cls, eps_samples, energies, degree=4):
        energies = np.asarray(energies, dtype=np.float64).reshape(-1)
        e = cls._check_samples(eps_samples, energies.size, "energy")
        exps = _monomials(e.shape[1], degree)
        if energies.size < len(exps):
            raise ValueError(f"need at least {len(exps)} samples for degree {degree}, got {energies.size}")
        scale = np.maximum(np.abs(e).max(axis=0), 1e-300)
        basis = np.prod((e / scale)[:, None, :] ** exps[None, :, :], axis=2)
        coef, *_ = np.linalg.lstsq(basis, energies, rcond=None)
        return cls(exps, coef, scale)

    @classmethod
    def fit_forces(cls, eps_samples, forces, degree=4):
        f = np.asarray(forces, dtype=np.float64)
        if f.ndim == 1:
            f = f[:, None]
        e = cls._check_samples(eps_samples, f.shape[0], "force sample")
        if f.shape[1] != e.shape[1]:
            raise ValueError("forces must have one column per mode")
        exps = _monomials(e.shape[1], degree)
        scale = np.maximum(np.abs(e).max(axis=0), 1e-300)
        rows = []
        for a in range(e.shape[1]):
            rows.append(cls._basis_gradient(e / scale, exps, a) / scale[a])
        design = np.concatenate(rows, axis=0)
        rhs = np.concatenate([f[:, a] for a in range(e.shape[1])])
        if rhs.size < len(exps):
            raise ValueError(f"need at least {len(exps)} force values for degree {degree}")
        coef, *_ = np.linalg.lstsq(design, rhs, rcond=None)
        return cls(exps, coef, scale)

    @staticmethod
    def _basis_gradient(x, exps, a):
        """∂/∂x_a of every monomial at every row of x: (n_samples, n_monomials)."""
        reduced = exps.copy()
        power = exps[:, a].astype(np.float64)
        reduced[:, a] = np.maximum(reduced[:, a] - 1, 0)
        return power[None, :] * np.prod(x[:, None, :] ** reduced[None, :, :], axis=2)

    def energy(self, eps):
        x = _as_amplitudes(eps, self.n_modes) / self.scale
        return float(np.prod(x[None, :] ** self.exponents, axis=1) @ self.coefficients)

    def force(self, eps):
        x = (_as_amplitudes(eps, self.n_modes) / self.scale)[None, :]
        return np.array([(self._basis_gradient(x, self.exponents, a)[0] @ self.coefficients)
                         / self.scale[a] for a in range(self.n_modes)])

    def tangent(self, eps, step=1e-6):
        e = _as_amplitudes(eps, self.n_modes)
        out = np.empty((self.n_modes, self.n_modes))
        for b in range(self.n_modes):
            d = np.zeros(self.n_modes)
            d[b] = step * self.scale[b]
            out[:, b] = (self.force(e + d) - self.force(e - d)) / (2 * d[b])
        return 0.5 * (out + out.T)

    def max_tangent(self):
        """Largest tangent over the fitted range (sampled on a grid of the box |ε_α| <= scale_α)."""
        if self._tangent_bound is None:
            axes = [np.linspace(-s, s, 9 if self.n_modes <= 2 else 5) for s in self.scale]
            best = None
            for point in itertools.product(*axes):
                t = self.tangent(np.array(point))
                if best is None or np.linalg.eigvalsh(t).max() > np.linalg.eigvalsh(best).max():
                    best = t
            self._tangent_bound = best
        return self._tangent_bound


#: The seed's Appendix B table: single-sphere compaction, ε = wall indentation / radius,
#: F = reaction of one wall (reading of the validation notes: E = 100, ν = 0.3 voxel units).
APPENDIX_B_EPS = np.array([0.0, 0.004, 0.008, 0.014, 0.023, 0.0365, 0.04156, 0.04916, 0.06055,
                           0.07763, 0.08404, 0.09365, 0.10807, 0.11347, 0.12158, 0.13375,
                           0.15199, 0.16])
APPENDIX_B_FORCE = np.array([0.0, 4.12, 11.95, 28.63, 63.39, 134.77, 167.32, 222.16, 317.71,
                             493.45, 569.48, 694.49, 908.45, 996.90, 1138.99, 1373.51,
                             1777.76, 1974.62])
