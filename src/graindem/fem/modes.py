"""Snapshot sets → mode bases (seed 001, §4.2): difference modes, POD/SVD, energy orthogonalization.

Snapshots are displacement dof vectors (rows) of one FEM discretization.
"""

import numpy as np
import scipy.linalg


def _snapshots(snapshots):
    U = np.atleast_2d(np.asarray(snapshots, dtype=float))
    if U.ndim != 2 or U.shape[0] < 1 or not np.all(np.isfinite(U)):
        raise ValueError("snapshots must be a finite (n_snapshots, n_dofs) array with n_snapshots >= 1")
    return U


def difference_modes(snapshots):
    """Φ_1 = u_1, Φ_α = u_α − u_{α−1}: the increments between consecutive load levels."""
    U = _snapshots(snapshots)
    return np.concatenate([U[:1], np.diff(U, axis=0)])


def pod_modes(snapshots, n_modes=None, energy_fraction=None, weight=None):
    """POD basis of the snapshot rows: returns (modes (A, n_dofs), singular values (all), retained fraction).

    With `weight` (a symmetric positive definite matrix, e.g. the FEM mass or stiffness matrix) the SVD is
    taken in that inner product (method of snapshots), otherwise in the Euclidean one as in the seed.
    Keeps `n_modes` modes, or the fewest whose squared singular values reach `energy_fraction`.
    """
    U = _snapshots(snapshots)
    if n_modes is not None and not (1 <= int(n_modes) <= U.shape[0]):
        raise ValueError(f"n_modes must lie in [1, {U.shape[0]}] (number of snapshots), got {n_modes}")
    if energy_fraction is not None and not (0 < energy_fraction <= 1):
        raise ValueError(f"energy_fraction must lie in (0, 1], got {energy_fraction}")
    if weight is None:
        _, s, Vt = np.linalg.svd(U, full_matrices=False)
        basis = Vt
    else:
        gram = U @ (weight @ U.T)
        gram = 0.5 * (gram + gram.T)
        lam, vec = np.linalg.eigh(gram)
        order = np.argsort(lam)[::-1]
        lam, vec = np.clip(lam[order], 0.0, None), vec[:, order]
        s = np.sqrt(lam)
        keep = s > s[0] * 1e-12
        basis = np.zeros_like(U)
        basis[keep] = (vec[:, keep] / s[keep]).T @ U
    share = np.cumsum(s**2) / np.sum(s**2)
    if n_modes is None:
        n_modes = U.shape[0] if energy_fraction is None else int(np.searchsorted(share, energy_fraction - 1e-15) + 1)
    return basis[:n_modes], s, float(share[n_modes - 1])


def energy_orthogonalize(modes, stiffness):
    """Modes spanning the same space, orthonormal in the energy inner product Φαᵀ K Φβ = δαβ.

    Cholesky (Gram–Schmidt) of the reduced stiffness, so the reduced stiffness becomes the identity and
    the modal equations decouple in stiffness; raises if the modes are dependent.
    """
    Phi = np.atleast_2d(np.asarray(modes, dtype=float))
    Kr = Phi @ (stiffness @ Phi.T)
    Kr = 0.5 * (Kr + Kr.T)
    eig = np.linalg.eigvalsh(Kr)
    if eig[0] <= 1e-10 * max(eig[-1], 0.0):
        raise ValueError("modes are linearly dependent or carry no strain energy (reduced K not positive "
                         "definite)")
    L = scipy.linalg.cholesky(Kr, lower=True)
    return scipy.linalg.solve_triangular(L, Phi, lower=True)
