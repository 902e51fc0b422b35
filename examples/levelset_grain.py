"""Level-set grain templates from an analytic shape, a triangle mesh and a voxel image.

    python examples/levelset_grain.py [--voxels-across N] [--nodes N]

The same ellipsoid (semi-axes 2, 1.5 and 1 mm) is built three ways with
`graindem.particles.LevelSetGrain`: analytically, from a closed triangle mesh of its surface written
to an STL file and read back (`LevelSetGrain.from_mesh`, any format meshio reads), and from a boolean
voxel image (what a CT scan gives, `LevelSetGrain.from_voxels`). Each template holds a signed-distance grid, area-weighted
surface nodes and its mass properties per unit density; the script compares its volume and principal
moments of inertia with the ellipsoid's closed forms, V = 4/3 pi a b c and I_x = V (b^2 + c^2) / 5.
"""

import argparse
import tempfile
from pathlib import Path

import meshio
import numpy as np

from graindem.particles import LevelSetGrain

A, B, C = 2e-3, 1.5e-3, 1e-3


def closed_form():
    """Volume and ascending principal moments (per unit density) of the ellipsoid."""
    volume = 4.0 / 3.0 * np.pi * A * B * C
    return volume, np.sort(volume / 5.0 * np.array([B**2 + C**2, A**2 + C**2, A**2 + B**2]))


def ellipsoid_mesh(n_theta=48, n_phi=96):
    """A closed, outward-oriented latitude-longitude triangulation of the ellipsoid's surface."""
    theta = np.linspace(0.0, np.pi, n_theta + 1)[1:-1]
    phi = np.linspace(0.0, 2.0 * np.pi, n_phi, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    ring = np.column_stack([A * np.sin(t).ravel() * np.cos(p).ravel(), B * np.sin(t).ravel() * np.sin(p).ravel(),
                            C * np.cos(t).ravel()])
    vertices = np.vstack([[0.0, 0.0, C], ring, [0.0, 0.0, -C]])
    north, south = 0, len(vertices) - 1
    idx = lambda i, j: 1 + i * n_phi + (j % n_phi)  # noqa: E731
    faces = [(north, idx(0, j), idx(0, j + 1)) for j in range(n_phi)]
    for i in range(n_theta - 2):
        for j in range(n_phi):
            faces += [(idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)), (idx(i, j), idx(i + 1, j + 1), idx(i, j + 1))]
    faces += [(south, idx(n_theta - 2, j + 1), idx(n_theta - 2, j)) for j in range(n_phi)]
    return vertices, np.array(faces)


def ellipsoid_voxels(voxels_across):
    """A boolean image of the ellipsoid, `voxels_across` voxels along its shortest axis; and the voxel size."""
    size = 2.0 * C / voxels_across
    axes = [np.arange(-(L // size) - 2, (L // size) + 3) * size for L in (A, B, C)]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    return (x / A) ** 2 + (y / B) ** 2 + (z / C) ** 2 <= 1.0, size


def build(voxels_across=20, n_nodes=400):
    """The three templates, by name."""
    image, voxel_size = ellipsoid_voxels(voxels_across)
    vertices, faces = ellipsoid_mesh()
    with tempfile.TemporaryDirectory() as folder:
        stl = Path(folder) / "ellipsoid.stl"
        meshio.write_points_cells(stl, vertices, [("triangle", faces)], binary=True)
        from_file = LevelSetGrain.from_mesh(stl, spacing=C / 10, n_nodes=n_nodes)
    return {
        "analytic": LevelSetGrain.ellipsoid(A, B, C, spacing=C / 10, n_nodes=n_nodes),
        "triangle mesh": from_file,
        "voxel image": LevelSetGrain.from_voxels(image, voxel_size, n_nodes=n_nodes),
    }


def errors(grain):
    """Relative errors of the volume and of the largest principal-moment error against the closed forms."""
    volume, moments = closed_form()
    return abs(grain.volume / volume - 1.0), float(np.max(np.abs(grain.principal_inertia / moments - 1.0)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voxels-across", type=int, default=20, help="voxels along the shortest axis (>= 8)")
    parser.add_argument("--nodes", type=int, default=400, help="surface nodes per grain")
    args = parser.parse_args(argv)
    if args.voxels_across < 8:
        parser.error(f"--voxels-across must be an integer >= 8; got {args.voxels_across}")
    grains = build(args.voxels_across, args.nodes)
    for name, grain in grains.items():
        dv, di = errors(grain)
        print(f"{name:14s} volume error {dv:.1e}, inertia error {di:.1e}; {grain.n_nodes} nodes, "
              f"grid {tuple(int(s) for s in grain.grid_shape)}, {grain.memory_bytes() / 1e3:.0f} kB")
    return grains


if __name__ == "__main__":
    main()
