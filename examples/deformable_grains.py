"""Deformable grains from FEM modes: eight elastic spheres compressed in a box by a piston.

    python examples/deformable_grains.py [--mesh-size H] [--nodes N] [--steps N] [--out DIR]

1. graindem's finite-element model compresses a sphere (radius 10, E = 100, nu = 0.3: the voxel units
   of Henzel & Karapiperis) between six rigid frictionless walls; the displacement field at
   eps = 0.24 (wall indentation / radius) is the compaction mode, the wall reactions give its
   generalized force F(eps). Both go into a mode file.
2. A deformable template: the sphere's level set, surface nodes and the mode tabulated on its grid.
3. Two layers of four grains stand in a box of rigid walls, the top one a piston moving down at a
   constant speed; the run records the force on the piston, the grains' modal amplitudes eps and the
   energy terms, and writes VTK files of the deformed grains.

Reference: the grains stand in four columns of two and the mode shrinks a grain on every axis at
once, so each grain is squeezed at its two poles only, and its neighbours and the side walls lose
touch.
A column of two grains is shortened by 4 R eps, and the two pole forces F balance the generalized
force: 2 R F = F_gen(eps). The piston carries the four columns: F_top(u) = 2 F_gen(u / 4R) / R, with
F_gen from the FEM's own table (quasi-static; the contact penetrations take a small share of u).
"""

import argparse
import math
from pathlib import Path

import numpy as np

from graindem.deform.response import TabulatedForce
from graindem.deform.scenes import SPHERE_RADIUS as R, compaction_sphere
from graindem.deform.validation import modal_damping_for
from graindem.engine import Simulation
from graindem.fem import read_mode_file, write_mode_file
from graindem.fem.compaction import SEED_TABLE_EPS, compact_sphere, compaction_mode_set
from graindem.fem.modefile import boundary_faces
from graindem.io.progress import Progress

E, NU = 100.0, 0.3
MODE_EPS = 0.24              # the mode is taken beyond the range the grains reach (docs/deformable-status.md)
CONTACT_STIFFNESS = 1e5      # penalty per unit area
GAP = 0.1                    # initial clearance between neighbouring grains and to the walls


def fem_modes(path, mesh_size=1.0):
    """Run the six-wall FEM of the sphere and write its compaction mode to `path`; returns the ModeSet."""
    levels = np.concatenate([SEED_TABLE_EPS[1:], [0.2, MODE_EPS]])  # the seed's Appendix B points, then on
    with Progress(len(levels), desc="FEM load levels", unit="level") as bar:
        result = compact_sphere(R, E, NU, eps=levels, mesh_size=mesh_size, progress=bar.update)
    modes = compaction_mode_set(result, coordinate="relative", mode_eps=MODE_EPS)
    modes.surface = boundary_faces(modes.tets)
    write_mode_file(path, modes)
    return read_mode_file(path)


def column_reference(modes, travel):
    """Quasi-static force on the piston after it moved by `travel`: 2 F_gen(eps) / R with a column
    shortened by 4 R eps = travel - 2 GAP (the clearances closed first)."""
    eps = np.maximum(np.asarray(travel, dtype=float) - 2.0 * GAP, 0.0) / (4.0 * R)
    return 2.0 * modes.generalized_force(eps) / R


def build(mode_file, modes, nodes=400, wall_speed=0.05, dt_fraction=0.3, seed=1):
    """The set-up Simulation: the grains, the six walls (the top one moving down at `wall_speed`) and
    the node contact."""
    template = compaction_sphere(mode_file, n_nodes=nodes)
    response = TabulatedForce(modes.force_eps, modes.force_table[:, 0])       # F_gen(eps) from the FEM
    modal_mass = modes.mass                                                     # ∫ rho Phi.Phi dV (1 x 1)
    beta = modal_damping_for(response, modal_mass[0, 0], 0.2, "tangent")[1]   # 20 % of critical at the stiffest
    pitch = 2.0 * R + GAP
    layer = np.array([[x, y] for x in (-0.5, 0.5) for y in (-0.5, 0.5)]) * pitch
    positions = np.array([[x, y, z] for z in (-0.5 * pitch, 0.5 * pitch) for x, y in layer])
    positions[:, :2] += np.random.default_rng(seed).uniform(-0.02, 0.02, (8, 2))  # a little disorder
    half = 0.5 * pitch + R + GAP     # the side walls; the bottom and the piston touch the grains after GAP / 2

    sim = Simulation(density=1.0, mu=0.3, dt_fraction=dt_fraction)
    sim.set_box((-2 * half,) * 3, (2 * half,) * 3)
    sim.add_wall((0, 0, -pitch), (0, 0, 1))                                      # wall 0: bottom, fixed
    sim.add_wall((0, 0, pitch), (0, 0, -1), velocity=(0, 0, -wall_speed))       # wall 1: the piston
    for axis in (0, 1):
        for sign in (1.0, -1.0):
            point, normal = np.zeros(3), np.zeros(3)
            point[axis], normal[axis] = sign * half, -sign                      # inward normals
            sim.add_wall(point, normal)
    sim.add_deformable_grains(template, positions, modal_mass=modal_mass, response=response, tangent_damping=beta)
    area = math.pi * (0.5 * R) ** 2      # the largest contact patch expected, for the critical time step
    damping = 2.0 * math.sqrt(CONTACT_STIFFNESS * template.volume / area)   # about critical for one contact
    sim.set_deformable_contact(CONTACT_STIFFNESS, damping=damping, contact="one", contact_area=area)
    sim.setup()
    return sim


def run(sim, steps, records=20, out=None):
    """Run `steps` steps; a record (window means since the last one) every steps/records steps."""
    rows = []
    top = sim.obstacle_row("wall", 1)
    z0 = sim.wall_positions()[1, 2]

    def record(s):
        means = s.deformable.window_means()
        eps = means["eps"].reshape(-1)
        rows.append({"step": s.step_count, "travel": float(z0 - s.wall_positions()[1, 2]),
                     "force": float(means["obstacle_force"][top, 2]), "eps_mean": float(eps.mean()),
                     "eps_min": float(eps.min()), "eps_max": float(eps.max())})
        if out is not None:
            s.deformable.write_vtk(str(Path(out) / f"grains_{len(rows):03d}"))

    sim.run(steps, callback=record, every=max(1, steps // records))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh-size", type=float, default=1.0, help="FEM element size at the poles (0.3 ... 2)")
    parser.add_argument("--nodes", type=int, default=400, help="surface nodes per grain (>= 50)")
    parser.add_argument("--steps", type=int, default=60000, help="time steps (>= 10)")
    parser.add_argument("--speed", type=float, default=0.025, help="piston speed (> 0, length per time unit)")
    parser.add_argument("--out", type=Path, default=Path("results/deformable_grains"), help="results folder")
    args = parser.parse_args(argv)
    if not 0.3 <= args.mesh_size <= 2.0:
        parser.error(f"--mesh-size must lie in [0.3, 2]; got {args.mesh_size}")
    if args.nodes < 50:
        parser.error(f"--nodes must be an integer >= 50; got {args.nodes}")
    if args.steps < 10:
        parser.error(f"--steps must be an integer >= 10; got {args.steps}")
    if not 0 < args.speed <= 1.0:
        parser.error(f"--speed must lie in (0, 1]; got {args.speed}")
    args.out.mkdir(parents=True, exist_ok=True)

    mode_file = args.out / "compaction_modes.h5"
    modes = fem_modes(mode_file, args.mesh_size)
    print(f"mode file {mode_file}: modal mass {modes.mass[0, 0]:.4g}, F_gen(0.1) = {modes.generalized_force(0.1):.4g}")
    sim = build(mode_file, modes, nodes=args.nodes, wall_speed=args.speed)
    print(f"dt = {sim.dt:.4g}, dt_crit = {sim.dt_crit:.4g} (contact {sim.deformable_critical_steps['rigid']:.4g}, "
          f"modal {sim.deformable_critical_steps['modal']:.4g})")
    rows = run(sim, args.steps, out=args.out)
    print("   step  travel    F_top  F_ref(u)  F_ref(eps)  eps_mean  eps_min  eps_max")
    for r in rows[::max(1, len(rows) // 5)] + rows[-1:]:
        print(f"{r['step']:7d} {r['travel']:7.3f} {r['force']:8.1f} {float(column_reference(modes, r['travel'])):8.1f} "
              f"{2.0 * float(modes.generalized_force(r['eps_mean'])) / R:10.1f}  {r['eps_mean']:.5f}  "
              f"{r['eps_min']:.5f}  {r['eps_max']:.5f}")
    energies = sim.deformable.energies(sim.gravity)
    print("energies: " + ", ".join(f"{k} {v:.4g}" for k, v in energies.items()))
    print(f"VTK files: {args.out}/grains_*_surfaces.vtu, grains_*_contacts.vtu")
    return {"rows": rows, "modes": modes, "sim": sim, "energies": energies}


if __name__ == "__main__":
    main()
