"""Six-wall compaction of an elastic sphere (seed 001, §4.2 and Appendix B) and its single compaction mode.

One octant is solved with three frictionless walls (x, y, z); by symmetry the other three walls carry the
same load. `wall_force` is the reaction of ONE wall (the reading of the seed's table that matches E = 100,
ν = 0.3 in voxel units, see the shared notes).
"""

from dataclasses import dataclass, field

import numpy as np
from skfem import Basis, BilinearForm, ElementTetP2, asm
from skfem.helpers import dot

from graindem.fem.contact import OctantWallProblem, _check_material
from graindem.fem.mesh import octant_sphere_mesh, reflect_octant, split_quadratic_tets
from graindem.fem.modefile import ModeSet

# Seed 001, Appendix B: ε = wall indentation / R, F = reaction (read as one wall's reaction).
SEED_TABLE_EPS = np.array([0, 0.004, 0.008, 0.014, 0.023, 0.0365, 0.04156, 0.04916, 0.06055, 0.07763, 0.08404,
                           0.09365, 0.10807, 0.11347, 0.12158, 0.13375, 0.15199, 0.16])
SEED_TABLE_FORCE = np.array([0, 4.12, 11.95, 28.63, 63.39, 134.77, 167.32, 222.16, 317.71, 493.45, 569.48,
                             694.49, 908.45, 996.90, 1138.99, 1373.51, 1777.76, 1974.62])


def normalized_curve(delta, force):
    """Seed eq. 52: δ̂ = δ/δ0, F̂ = F/(K_g δ0) with δ0 the last δ and K_g the end slope (last segment)."""
    delta = np.asarray(delta, dtype=float)
    force = np.asarray(force, dtype=float)
    k_end = (force[-1] - force[-2]) / (delta[-1] - delta[-2])
    return delta / delta[-1], force / (k_end * delta[-1])


@dataclass
class CompactionResult:
    eps: np.ndarray  # wall indentation / radius
    wall_force: np.ndarray  # reaction of one wall
    energy: np.ndarray  # strain energy of the whole sphere
    pole_displacement: np.ndarray  # inward displacement of a pole (= indentation once in contact)
    contact_radius: np.ndarray
    radius: float
    E: float
    nu: float
    unknowns: int
    problem: OctantWallProblem = field(repr=False)
    displacements: list = field(repr=False, default_factory=list)  # octant dof vectors


def compaction_mesh(radius, mesh_size=None, pole_size=None):
    """Graded octant mesh refined on the three poles (cap elements `mesh_size`, default R/25; optional
    extra refinement to `pole_size` at the pole points for the smallest load levels)."""
    h_cap = radius / 25.0 if mesh_size is None else float(mesh_size)
    return octant_sphere_mesh(radius, cap_size=h_cap, bulk_size=0.3 * radius, cap_radius=0.15 * radius,
                              poles=("x", "y", "z"), grading=0.35, pole_size=pole_size)


def compact_sphere(radius=10.0, E=100.0, nu=0.3, eps=None, mesh_size=None, keep_fields=True, progress=None,
                   tied=False, pole_size=None):
    """Load path of the six-wall frictionless compaction; `eps` = wall indentation / radius (increasing, ≤ 0.3).

    `progress` is an optional callable (e.g. tqdm's update) called once per load level. `tied=True`:
    sticking walls (no slip once in contact), solved incrementally along the given levels (use many).
    """
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be a finite number > 0, got {radius}")
    _check_material(E, nu)
    eps = SEED_TABLE_EPS[1:] if eps is None else np.atleast_1d(np.asarray(eps, dtype=float))
    if eps.size == 0 or np.any(~np.isfinite(eps)) or np.any(eps <= 0) or np.any(eps > 0.3) \
            or np.any(np.diff(eps) <= 0):
        raise ValueError(f"eps must be increasing values in (0, 0.3], got {eps}")
    if mesh_size is not None and (not np.isfinite(mesh_size) or not 0 < mesh_size <= radius):
        raise ValueError(f"mesh_size must lie in (0, radius={radius}], got {mesh_size}")
    if pole_size is not None and (not np.isfinite(pole_size) or pole_size <= 0):
        raise ValueError(f"pole_size must be a finite number > 0, got {pole_size}")
    mesh = compaction_mesh(radius, mesh_size, pole_size)
    delta_max = eps[-1] * radius
    # Any vertex further than this from a wall cannot reach it (the gap to a wall only closes by the
    # wall travel minus the bulge, which is checked after each solve).
    problem = OctantWallProblem(mesh, E, nu, walls=["x", "y", "z"], outer_extent=radius,
                                candidate_gap=1.6 * delta_max, tied=tied)
    forces, energies, poles, radii, fields = [], [], [], [], []
    for e in eps:
        state = problem.solve(np.full(3, radius * (1.0 - e)))
        forces.append(4.0 * state.reactions.mean())  # each wall touches four octants
        energies.append(8.0 * state.energy)
        poles.append(-np.mean([problem.pole_displacement(state.u, a) for a in range(3)]))
        radii.append(np.mean([problem.contact_radius(state, w) for w in range(3)]))
        if keep_fields:
            fields.append(state.u)
        if progress is not None:
            progress(1)
    return CompactionResult(eps=eps, wall_force=np.array(forces), energy=np.array(energies),
                            pole_displacement=np.array(poles), contact_radius=np.array(radii), radius=radius,
                            E=E, nu=nu, unknowns=problem.basis.N - len(problem.fixed), problem=problem,
                            displacements=fields)


def modal_stiffness_and_mass(problem, modes_octant, rho=1.0):
    """Eq. 54 K_αβ = ∫ C:E(Φα):E(Φβ) dV and eq. 8 M_αβ = ∫ ρ Φα·Φβ dV over the whole (mirrored) body."""
    modes = np.atleast_2d(modes_octant)
    mass_form = BilinearForm(lambda u, v, w: rho * dot(u, v))
    M = asm(mass_form, problem.basis)
    K = modes @ (problem.K @ modes.T) * 8.0
    Mg = modes @ (M @ modes.T) * 8.0
    return 0.5 * (K + K.T), 0.5 * (Mg + Mg.T)


def octant_fields_to_mode_set(problem, modes_octant, radius):
    """Mirror octant dof vectors (A, N) to the whole body on the 8-way split linear mesh."""
    scalar = Basis(problem.mesh, ElementTetP2())
    nodes, tets = split_quadratic_tets(problem.mesh, scalar)
    # Vector dofs of node k (scalar dof k) are 3k, 3k+1, 3k+2 for skfem's ElementVector on one mesh.
    fields = np.stack([m.reshape(-1, 3) for m in np.atleast_2d(modes_octant)])
    return reflect_octant(nodes, tets, fields, radius)


ENERGY_EXPONENTS = np.array([2.5, 3.0, 3.5, 4.0])


def fit_energy_polynomial(q, energy, exponents=ENERGY_EXPONENTS):
    """Seed eq. 56 least squares: U(q) = Σ_k c_k q^(p_k) with exponents p_k (default 2.5, 3, 3.5, 4).

    The 5/2 term is the Hertz limit of a contact-driven energy; residuals are relative to each energy so
    the small-load points, orders of magnitude smaller, are fitted as well as the large ones.
    """
    q = np.asarray(q, dtype=float)
    energy = np.asarray(energy, dtype=float)
    if np.any(energy <= 0):
        raise ValueError("energy must be > 0 at every fitted load level")
    A = np.stack([q**p for p in exponents], axis=1) / energy[:, None]
    scale = np.abs(A).max(axis=0)
    coef, *_ = np.linalg.lstsq(A / scale, np.ones_like(energy), rcond=None)
    return coef / scale


def energy_fit_force(coef, q, exponents=ENERGY_EXPONENTS):
    """F = U'(q) of the fitted energy (eq. 57)."""
    q = np.asarray(q, dtype=float)
    return sum(p * c * q ** (p - 1) for p, c in zip(exponents, coef))


def energy_fit_value(coef, q, exponents=ENERGY_EXPONENTS):
    q = np.asarray(q, dtype=float)
    return sum(c * q**p for p, c in zip(exponents, coef))


def compaction_mode_set(result: CompactionResult, coordinate="length", rho=1.0, mode_eps=None):
    """Single compaction mode, normalized so each pole moves inward by the coordinate.

    coordinate="length": q = wall indentation (length units); "relative": q = indentation / R (the seed's ε).
    Generalized force from reactions (eq. 58, single mode): F_q = 6 · wall_force · dδ/dq.

    ``mode_eps``: the load level (indentation / R, one of ``result.eps``) whose displacement is the mode;
    default the largest (the seed's choice). Scaled down from its own level, a mode taken at the end of
    the loading has its whole contact patch flat at that end: the patch rim barely moves while the pole
    moves by R per unit ε, so a node-based reduced contact near that level spreads over nodes whose
    modal weight is far below R. A level beyond the range to be simulated keeps the pole ahead of the
    rim over the whole range (docs/deformable-status.md).
    """
    if coordinate not in ("length", "relative"):
        raise ValueError(f"coordinate must be 'length' or 'relative', got {coordinate!r}")
    if not result.displacements:
        raise ValueError("result has no displacement fields (run compact_sphere with keep_fields=True)")
    if mode_eps is None:
        level = len(result.displacements) - 1
    else:
        level = int(np.argmin(np.abs(result.eps - mode_eps)))
        if not np.isclose(result.eps[level], mode_eps, rtol=1e-9, atol=1e-12):
            raise ValueError(f"mode_eps must be one of the load levels {result.eps.tolist()}, got {mode_eps}")
    scale = 1.0 if coordinate == "length" else result.radius
    u_max = result.displacements[level]
    phi = u_max * scale / result.pole_displacement[level]
    K, M = modal_stiffness_and_mass(result.problem, phi, rho)
    q = result.eps * result.radius / scale
    force = 6.0 * result.wall_force * scale
    coef = fit_energy_polynomial(q, result.energy)
    nodes, tets, fields = octant_fields_to_mode_set(result.problem, phi, result.radius)
    k_end = (force[-1] - force[-2]) / (q[-1] - q[-2])
    return ModeSet(
        nodes=nodes, tets=tets, phi=fields, mass=M, stiffness=K,
        force_eps=np.concatenate([[0.0], q]), force_table=np.concatenate([[0.0], force])[:, None],
        energy_coefficients=coef, energy_exponents=ENERGY_EXPONENTS, mode_names=["compaction"],
        units={"length": "voxel", "force": "E*voxel^2 (E given in metadata)", "mass": "rho*voxel^3",
               "energy": "force*length"},
        metadata={
            "geometry": "sphere", "loading": "six rigid frictionless walls (octant FEM, quadratic tets)",
            "radius": result.radius, "E": result.E, "nu": result.nu, "rho": rho,
            "coordinate": coordinate,
            "normalization": (f"phi = u(mode_eps_relative) scaled so each pole moves inward by q "
                              f"({'length' if coordinate == 'length' else 'q * radius'}) "
                              f"when the generalized coordinate equals q"),
            "force_reading": ("force_table = generalized force = sum of the six wall reactions times d(delta)/dq; "
                              "one wall's reaction = force / 6 / d(delta)/dq with d(delta)/dq = "
                              f"{scale}"),
            "tangent_stiffness_end": k_end,
            "eps_max_relative": float(result.eps[-1]),
            "mode_eps_relative": float(result.eps[level]),
            "mesh_unknowns_octant": int(result.unknowns),
        },
    )


def snapshot_mode_set(result: CompactionResult, kind="pod", n_modes=None, energy_orthogonal=False, rho=1.0):
    """Multi-mode basis from the load-path snapshots (seed §4.2): POD/SVD or difference modes.

    Returns (ModeSet, singular values). Modes are octant fields mirrored to the whole sphere, with the
    generalized stiffness (eq. 54) and mass (eq. 8) matrices; no force table (the generalized force of a
    multi-mode basis is K ε, eq. 55). `energy_orthogonal=True` makes Φαᵀ K Φβ = δαβ.
    """
    from graindem.fem.modes import difference_modes, energy_orthogonalize, pod_modes

    if kind not in ("pod", "difference"):
        raise ValueError(f"kind must be 'pod' or 'difference', got {kind!r}")
    if not result.displacements:
        raise ValueError("result has no displacement fields (run compact_sphere with keep_fields=True)")
    snaps = np.stack(result.displacements)
    if kind == "pod":
        phi, singular, share = pod_modes(snaps, n_modes=n_modes)
    else:
        phi = difference_modes(snaps)[: n_modes or len(snaps)]
        singular, share = np.linalg.svd(snaps, compute_uv=False), float("nan")
    if energy_orthogonal:
        phi = energy_orthogonalize(phi, result.problem.K)
    K, M = modal_stiffness_and_mass(result.problem, phi, rho)
    nodes, tets, fields = octant_fields_to_mode_set(result.problem, phi, result.radius)
    modes = ModeSet(nodes=nodes, tets=tets, phi=fields, mass=M, stiffness=K,
                    mode_names=[f"{kind}{i}" for i in range(len(phi))],
                    units={"length": "voxel", "force": "E*voxel^2 (E given in metadata)", "mass": "rho*voxel^3",
                           "energy": "force*length"},
                    metadata={"geometry": "sphere", "loading": "six rigid frictionless walls (octant FEM)",
                              "radius": result.radius, "E": result.E, "nu": result.nu, "rho": rho,
                              "basis": kind, "energy_orthogonal": int(bool(energy_orthogonal)),
                              "singular_values": np.asarray(singular), "retained_share": share,
                              "normalization": "POD: unit Euclidean norm of the octant dof vector"
                              if kind == "pod" else "difference of consecutive load-level displacements"})
    return modes, np.asarray(singular)
