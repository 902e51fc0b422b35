"""The seed's two deformable grains (§4, Appendix B), built once for benchmarks, validations and tests.

- The slender cuboid of Table 1: 160 × 4 × 4 voxels, level-set spacing 1, the analytic bending mode.
- The elastic sphere of Table 2: radius 10 voxels, spacing 1, one numerical compaction mode read from
  a graindem mode file (the FEM extraction), or, when none is given, `standin_compaction_mode`.
"""

from dataclasses import dataclass

import numpy as np

from graindem.deform.grid import GridField
from graindem.deform.levelset_update import cuboid_surface_mesh, octahedral_sphere_mesh, sphere_surface_mesh
from graindem.deform.modes import BeamBendingMode, GridMode, Mode, grid_modes_from_file

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

    @classmethod
    def from_levelset(cls, grain):
        """The template of a rigid level-set grain (particles.LevelSetGrain) without modes: its grid,
        nodes with their areas, mass properties and surface mesh as they are."""
        return cls(grain.name, GridField(grain.phi_grid, grain.grid_origin, grain.spacing), [], grain.surface_vertices,
                   grain.surface_faces, grain.nodes, grain.areas, grain.volume, grain.inertia, "none (rigid)")


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


def _extend_radially(mode_set, grid, radius, step):
    """The first mode of ``mode_set`` at the nodes of ``grid``: interpolated in the FEM mesh inside the
    sphere, continued linearly along the radius outside it (from two points a quarter and one and a
    quarter ``step`` below the surface, inside the piecewise-linear FEM surface), instead of constantly
    (the file's closest-point continuation).

    The pull-back φ0(X) with x = X + εΦ(X) is then smooth across the surface: with a constant
    continuation dX/dx jumps at the surface from 1 to 1/(1 + ε∂Φn/∂n), and the trilinear interpolation
    of the remapped corners across that kink misplaces the surface. The FEM compaction mode compresses
    the material under the contact strongly (ε∂Φn/∂n ≈ −0.3 at the pole at ε = 0.16), measured: φ at
    the deformed pole −0.10 (constant) instead of 0.
    """
    pts = grid.node_positions().reshape(-1, 3)
    dist = np.linalg.norm(pts, axis=1)
    out = dist > radius - 0.25 * step
    flat = np.empty((pts.shape[0], 3))
    flat[~out] = mode_set.evaluate(pts[~out])[0]
    direction = pts[out] / dist[out, None]
    r_near, r_far = radius - 0.25 * step, radius - 1.25 * step
    near = mode_set.evaluate(r_near * direction)[0]
    far = mode_set.evaluate(r_far * direction)[0]
    flat[out] = near + (dist[out] - r_near)[:, None] * (near - far) / step
    return flat.reshape(grid.shape + (3,))


class SimilarModeSet:
    """A mode file's modes on a sphere `factor` times as large: Φ'(X) = factor Φ(X / factor) (a pole
    that moved R per unit ε moves factor R)."""

    def __init__(self, mode_set, factor):
        self.mode_set = mode_set
        self.factor = float(factor)

    def evaluate(self, points, modes=None):
        return self.factor * self.mode_set.evaluate(np.asarray(points, dtype=np.float64) / self.factor, modes)


def compaction_sphere(mode_file=None, spacing=None, n_nodes=None, surface_vertices=4000, node_layout="octahedral",
                      exterior="linear", progress=None, radius=SPHERE_RADIUS):
    """Table 2 sphere with one compaction mode: from ``mode_file`` (graindem mode file) or the stand-in.

    ``radius``: the sphere's radius (the seed's 10 voxel units by default); ``spacing``: the level-set
    grid's (default radius / 10). A mode file of a sphere of another radius is scaled to this one
    (`SimilarModeSet`: a linear-elastic sphere's modes are similar under scaling).

    ``node_layout``: "octahedral" (default; `octahedral_sphere_mesh` with the frequency giving about
    ``n_nodes`` nodes: 402 for 400, 1298 for the default one node per h² of surface) puts nodes on
    the six poles, where the walls and the neighbours of a cubic packing touch first, with the same
    pattern around each; "fibonacci" (`sphere_surface_mesh`) is the earlier, axis-asymmetric set.
    ``exterior``: how a FEM mode is continued outside the sphere on the level-set grid ("linear" along
    the radius, see `_extend_radially`, or "constant" as the mode file does).
    ``progress``: a bar of the building stages (level set, mode on the grid, nodes); None shows it only
    on a terminal (the mode of a fine FEM mesh takes seconds to tabulate).
    """
    if node_layout not in ("octahedral", "fibonacci"):
        raise ValueError(f"node_layout must be 'octahedral' or 'fibonacci', got {node_layout!r}")
    if exterior not in ("linear", "constant"):
        raise ValueError(f"exterior must be 'linear' or 'constant', got {exterior!r}")
    from graindem.io.progress import Progress, interactive

    show = interactive() if progress is None else bool(progress)
    bar = Progress(3, desc="deformable template compaction_sphere", quiet=not show, unit="stage")
    bar.update(0, stage="level set")
    r = float(radius)
    if not (np.isfinite(r) and r > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    spacing = r / 10.0 if spacing is None else spacing
    pad = 6.0 * r / SPHERE_RADIUS
    phi0 = GridField.sample(lambda p: np.linalg.norm(p, axis=1) - r, [-r - pad] * 3, [r + pad] * 3, spacing)
    bar.update(1, stage="mode on the grid")
    node_values = None
    if mode_file is not None:
        from graindem.fem import read_mode_file

        mode_set = read_mode_file(mode_file)
        similar = r / float(np.linalg.norm(mode_set.nodes, axis=1).max())
        length = mode_set.metadata.get("coordinate", "relative") == "length"
        if abs(similar - 1.0) > 1e-3:   # a file within 0.1 % of the radius is read as it is
            if exterior != "linear":
                raise ValueError(f"a mode file of a sphere of radius {r / similar:g} scales to radius {r:g} with "
                                 "exterior='linear' only")
            mode_set = SimilarModeSet(mode_set, similar)
        else:
            similar = 1.0
        # the validations read ε as indentation / R: a file in length units (pole moves 1 per unit q)
        # is its own radius times smaller than that mode
        scale = r / similar if length else 1.0
        if exterior == "linear":
            values = scale * _extend_radially(mode_set, phi0, r, spacing)
            mode = GridMode(values, phi0.origin, phi0.spacing)
        else:
            mode = grid_modes_from_file(mode_file, phi0)[0]
            mode = GridMode(scale * mode.values, mode.origin, mode.spacing)
        source = f"FEM mode file {mode_file}"
    else:
        mode = StandinCompactionMode(r)
        source = "analytic stand-in (no FEM mode file given)"
    bar.update(1, stage="surface nodes")
    verts, faces = sphere_surface_mesh(r, surface_vertices)
    n = int(round(4 * np.pi * r * r / spacing ** 2)) if n_nodes is None else int(n_nodes)
    if n < 6:
        raise ValueError(f"n_nodes must be >= 6, got {n_nodes}")
    if node_layout == "octahedral":
        nodes, faces_n = octahedral_sphere_mesh(r, max(1, int(round(np.sqrt((n - 2) / 4.0)))))
    else:
        nodes, faces_n = sphere_surface_mesh(r, n)
    areas = _vertex_areas(nodes, faces_n)
    areas *= 4 * np.pi * r * r / areas.sum()
    if mode_file is not None:
        node_values = scale * mode_set.evaluate(nodes)[:1]
    vol = 4.0 / 3.0 * np.pi * r ** 3
    inertia = np.full(3, 0.4 * vol * r * r)
    bar.update(1)
    bar.close()
    return DeformableTemplate("compaction_sphere", phi0, [mode], verts, faces, nodes, areas, vol, inertia,
                              source, node_values)
