"""The seed's two deformable grains (§4, Appendix B), built once for benchmarks, validations and tests.

- The slender cuboid of Table 1: 160 × 4 × 4 voxels, level-set spacing 1, the analytic bending mode.
- The elastic sphere of Table 2: radius 10 voxels, spacing 1, one numerical compaction mode read from
  a graindem mode file (the FEM extraction), or, when none is given, `standin_compaction_mode`.
"""

from dataclasses import dataclass

import numpy as np

from graindem.deform.grid import GridField
from graindem.deform.levelset_update import cuboid_surface_mesh, sphere_surface_mesh
from graindem.deform.modes import BeamBendingMode, Mode, grid_modes_from_file

BEAM_HALF = np.array([80.0, 2.0, 2.0])
SPHERE_RADIUS = 10.0


@dataclass
class DeformableTemplate:
    """Geometry of one deformable grain in its body frame (centroid at the origin)."""

    name: str
    phi0: GridField
    modes: list
    surface_vertices: np.ndarray
    surface_faces: np.ndarray
    nodes: np.ndarray        # contact (slave) nodes, body frame
    node_areas: np.ndarray
    volume: float
    inertia: np.ndarray      # principal moments per unit density (body axes)
    mode_source: str = "analytic"
    # modes at the nodes (n_modes, n_nodes, 3) when known more precisely than by interpolating the
    # level-set grid (a FEM mode at the surface varies on the scale of its contact mesh, not of h)
    node_mode_values: np.ndarray = None


def _vertex_areas(vertices, faces):
    a, b, c = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    tri = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    area = np.zeros(len(vertices))
    for k in range(3):
        np.add.at(area, faces[:, k], tri / 3.0)
    return area


def box_sdf(half):
    half = np.asarray(half, dtype=np.float64)

    def sdf(p):
        q = np.abs(p) - half
        return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)
    return sdf


def bending_beam(node_spacing=1.0, pad=4.0, spacing=1.0):
    """Table 1 beam. Nodes are the vertices of a lattice on the faces (edges included) with their
    vertex areas, so the supports at the end edges touch nodes where the mode vanishes."""
    half = BEAM_HALF
    phi0 = GridField.sample(box_sdf(half), -half - pad - 3.0, half + pad + 3.0, spacing)
    verts, faces = cuboid_surface_mesh(half, 0.5 * spacing)
    nodes, node_faces = cuboid_surface_mesh(half, node_spacing)
    areas = _vertex_areas(nodes, node_faces)
    dims = 2 * half
    vol = float(np.prod(dims))
    inertia = vol / 12.0 * np.array([dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2,
                                     dims[0] ** 2 + dims[1] ** 2])
    return DeformableTemplate("bending_beam", phi0, [BeamBendingMode(2 * half[0])], verts, faces,
                              nodes, areas, vol, inertia, "analytic (seed eq. 51)")


class StandinCompactionMode(Mode):
    """Analytic stand-in for the six-wall compaction mode (used only when no FEM mode file is given).

    Φ_i(X) = −R [a X_i/R + (1 − a)(X_i/R)^n] with a = 0.5, n = 5: each pole moves inward by R per unit
    ε (ε = wall indentation / R, as the Appendix B table), the bulk is compressed uniformly and the caps
    move in faster (|ε ∇Φ| up to 0.16·3 = 0.48 at the poles at ε = 0.16). It is NOT the FEM field (no exact contact flattening); results obtained with it say
    so in their metadata.
    """

    def __init__(self, radius=SPHERE_RADIUS, linear_part=0.5, power=5):
        self.radius = float(radius)
        self.a = float(linear_part)
        self.n = int(power)

    def _inside(self, points):
        # outside the sphere the field is continued constantly along the radius (value at the radial
        # projection), as the FEM mode file continues its field, instead of letting X^9 blow up
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3) / self.radius
        r = np.linalg.norm(p, axis=1)
        outside = r > 1.0
        p[outside] /= r[outside, None]
        return p, outside

    def displacement(self, points):
        p, _ = self._inside(points)
        return -self.radius * (self.a * p + (1 - self.a) * p ** self.n)

    def gradient(self, points):
        p, outside = self._inside(points)
        g = np.zeros((p.shape[0], 3, 3))
        for i in range(3):
            g[:, i, i] = -(self.a + (1 - self.a) * self.n * p[:, i] ** (self.n - 1))
        if np.any(outside):
            g[outside] = super().gradient(np.asarray(points, dtype=np.float64).reshape(-1, 3)[outside])
        return g


def compaction_sphere(mode_file=None, spacing=1.0, n_nodes=None, surface_vertices=4000):
    """Table 2 sphere with one compaction mode: from ``mode_file`` (graindem mode file) or the stand-in."""
    r = SPHERE_RADIUS
    phi0 = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - r, [-r - 6] * 3, [r + 6] * 3, spacing)
    node_values = None
    if mode_file is not None:
        mode = grid_modes_from_file(mode_file, phi0)[0]
        source = f"FEM mode file {mode_file}"
    else:
        mode = StandinCompactionMode(r)
        source = "analytic stand-in (no FEM mode file given)"
    verts, faces = sphere_surface_mesh(r, surface_vertices)
    n = int(round(4 * np.pi * r * r / spacing ** 2)) if n_nodes is None else int(n_nodes)
    nodes, faces_n = sphere_surface_mesh(r, n)
    areas = _vertex_areas(nodes, faces_n)
    areas *= 4 * np.pi * r * r / areas.sum()
    if mode_file is not None:
        from graindem.fem import read_mode_file

        node_values = read_mode_file(mode_file).evaluate(nodes)[:1]
    vol = 4.0 / 3.0 * np.pi * r ** 3
    inertia = np.full(3, 0.4 * vol * r * r)
    return DeformableTemplate("compaction_sphere", phi0, [mode], verts, faces, nodes, areas, vol, inertia,
                              source, node_values)
