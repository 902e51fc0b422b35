"""Cantilever beam grain: FEM bending mode and its generalized stiffness (checked against Euler–Bernoulli)."""

import numpy as np
from skfem import Basis, ElementTetP2, ElementVector, FacetBasis, LinearForm, MeshTet1, MeshTet2, asm
from skfem.models.elasticity import lame_parameters, linear_elasticity

from graindem.fem.contact import SPDSolver, _check_material


def cantilever_bending_mode(length, width, height, E, nu, elements_along=40, elements_across=2):
    """Bending mode of a cantilever (clamped at x = 0) under a transverse end load along −z.

    Returns (mesh, basis, K, phi, k_g): phi is the FEM displacement scaled so the end face moves by 1 along
    −z on average (generalized coordinate = tip deflection), k_g = φᵀKφ the generalized stiffness (eq. 54).
    """
    for name, value in (("length", length), ("width", width), ("height", height)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value}")
    _check_material(E, nu)
    if int(elements_along) < 1 or int(elements_across) < 1:
        raise ValueError("elements_along and elements_across must be >= 1")
    lin = MeshTet1.init_tensor(np.linspace(0, length, int(elements_along) + 1),
                               np.linspace(0, width, int(elements_across) + 1),
                               np.linspace(0, height, int(elements_across) + 1))
    mesh = MeshTet2.from_mesh(lin)
    element = ElementVector(ElementTetP2())
    basis = Basis(mesh, element)
    K = asm(linear_elasticity(*lame_parameters(E, nu)), basis).tocsr()
    end = mesh.facets_satisfying(lambda x: np.isclose(x[0], length))
    fb = FacetBasis(mesh, element, facets=end)
    area = width * height
    f = asm(LinearForm(lambda v, w: -v[2] / area), fb)  # unit total force along −z
    clamped = basis.get_dofs(lambda x: np.isclose(x[0], 0.0)).all()
    free = np.setdiff1d(np.arange(basis.N), clamped)
    u = np.zeros(basis.N)
    u[free] = SPDSolver(K[free][:, free]).solve(f[free])
    tip = f @ u  # mean end-face deflection along −z (work of the uniform unit traction)
    phi = u / tip
    return mesh, basis, K, phi, float(phi @ (K @ phi))


def euler_bernoulli_tip_stiffness(length, width, height, E):
    """3EI/L³ with I = w h³/12 (bending about the width axis)."""
    return 3.0 * E * width * height**3 / 12.0 / length**3
