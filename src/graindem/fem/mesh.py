"""Graded tetrahedral meshes of grains for the FEM mode extraction (no external mesher needed).

The octant of a sphere is made by mapping a tensor tetrahedral mesh of the unit cube radially onto the
ball octant, then refining by longest-edge bisection wherever the elements exceed a size field that is
fine on the contact caps and coarsens into the bulk; new boundary vertices are pulled back onto the sphere
after every pass, and the quadratic mesh puts its boundary mid-edge nodes on the exact sphere too.
"""

import numpy as np
from skfem import MeshTet1, MeshTet2

AXES = {"x": 0, "y": 1, "z": 2}


def _check_positive(name, value):
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")


def _sphere_facets(mesh, radius):
    """Boundary facets lying on the sphere (not on one of the three symmetry planes)."""
    bf = mesh.boundary_facets()
    coords = mesh.p[:, mesh.facets[:, bf]]  # (3, 3 vertices, nbf)
    on_plane = np.any(np.all(np.abs(coords) < 1e-9 * radius, axis=1), axis=0)
    return bf[~on_plane]


def _project_to_sphere(p, vertex_ids, radius):
    p = p.copy()
    r = np.linalg.norm(p[:, vertex_ids], axis=0)
    p[:, vertex_ids] *= radius / r
    return p


def octant_sphere_mesh(radius, cap_size, bulk_size, cap_radius, poles=("z",), grading=0.35, max_passes=40,
                       pole_size=None):
    """Quadratic tetrahedral mesh of the octant x, y, z ≥ 0 of a sphere of `radius`.

    Elements are at most `cap_size` within `cap_radius` of the pole(s) on the listed axes, growing
    linearly with distance (slope `grading`) up to `bulk_size`. With `pole_size`, elements are further
    refined towards each pole point (size max(pole_size, d/4) at distance d), so that the small contact
    patches of the first load levels are resolved too. Returns a skfem MeshTet2.
    """
    for name, value in (("radius", radius), ("cap_size", cap_size), ("bulk_size", bulk_size),
                        ("cap_radius", cap_radius), ("grading", grading)):
        _check_positive(name, value)
    if cap_size > bulk_size:
        raise ValueError(f"cap_size must be <= bulk_size, got {cap_size} > {bulk_size}")
    if not poles or any(p not in AXES for p in poles):
        raise ValueError(f"poles must be a non-empty subset of ('x', 'y', 'z'), got {poles}")
    n = max(2, int(np.ceil(radius / bulk_size)))
    grid = np.linspace(0.0, 1.0, n + 1)
    cube = MeshTet1.init_tensor(grid, grid, grid)
    p = cube.p.copy()
    sup = np.max(np.abs(p), axis=0)
    euc = np.linalg.norm(p, axis=0)
    scale = np.divide(sup, euc, out=np.ones_like(sup), where=euc > 0)
    mesh = MeshTet1(np.ascontiguousarray(radius * p * scale), np.ascontiguousarray(cube.t))
    pole_points = np.array([radius * np.eye(3)[AXES[a]] for a in poles])

    def target_size(x):
        d = np.min(np.linalg.norm(x[None, :, :] - pole_points[:, :, None], axis=1), axis=0)
        size = np.clip(cap_size + grading * (d - cap_radius), cap_size, bulk_size)
        if pole_size is not None:
            size = np.minimum(size, np.maximum(pole_size, 0.25 * d))
        return size

    for _ in range(max_passes):
        verts = mesh.p[:, mesh.t]  # (3, 4, nt)
        edges = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
        longest = np.max([np.linalg.norm(verts[:, i] - verts[:, j], axis=0) for i, j in edges], axis=0)
        # The size field is checked at the element vertex closest to a pole so caps are fully covered.
        size_at = np.min([target_size(verts[:, k]) for k in range(4)], axis=0)
        marked = np.nonzero(longest > 1.01 * size_at)[0]
        if len(marked) == 0:
            break
        mesh = mesh.refined(marked)
        sph = np.unique(mesh.facets[:, _sphere_facets(mesh, radius)])
        mesh = MeshTet1(np.ascontiguousarray(_project_to_sphere(mesh.p, sph, radius)), np.ascontiguousarray(mesh.t))
    else:
        raise RuntimeError("mesh refinement did not reach the requested size field; raise max_passes")
    quad = MeshTet2.from_mesh(mesh)
    sph_facets = _sphere_facets(mesh, radius)
    from skfem import Basis, ElementTetP2

    dofs = Basis(quad, ElementTetP2()).get_dofs(facets=sph_facets).flatten()
    doflocs = quad.doflocs.copy()
    doflocs[:, dofs] *= radius / np.linalg.norm(doflocs[:, dofs], axis=0)
    from dataclasses import replace

    quad = replace(quad, doflocs=doflocs)
    return quad


def split_quadratic_tets(mesh2, basis):
    """Linear tetrahedra (8 per quadratic tet) on the P2 nodes, with P2 node coordinates.

    Returns (nodes (n, 3), tets (8 nt, 4)) where node k is the location of scalar P2 dof k of `basis`
    (a scalar ElementTetP2 basis on `mesh2`).
    """
    e2d = basis.element_dofs  # (10, nt): 4 vertex dofs then 6 edge dofs in skfem's edge order
    # skfem's tetrahedron edge order: (0,1), (1,2), (0,2), (0,3), (1,3), (2,3)
    edge_order = [(0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3)]
    mid = {tuple(sorted(e)): 4 + k for k, e in enumerate(edge_order)}

    def m(a, b):
        return mid[tuple(sorted((a, b)))]

    local = [
        (0, m(0, 1), m(0, 2), m(0, 3)),
        (1, m(0, 1), m(1, 2), m(1, 3)),
        (2, m(0, 2), m(1, 2), m(2, 3)),
        (3, m(0, 3), m(1, 3), m(2, 3)),
        # inner octahedron split along the diagonal (0,1)-(2,3)
        (m(0, 1), m(2, 3), m(0, 2), m(0, 3)),
        (m(0, 1), m(2, 3), m(0, 3), m(1, 3)),
        (m(0, 1), m(2, 3), m(1, 3), m(1, 2)),
        (m(0, 1), m(2, 3), m(1, 2), m(0, 2)),
    ]
    tets = np.concatenate([e2d[list(loc)].T for loc in local], axis=0)
    nodes = basis.doflocs.T.copy()
    return nodes, tets


def reflect_octant(nodes, tets, fields, radius):
    """Mirror an octant mesh (x, y, z ≥ 0) and vector fields (A, n, 3) to the full body.

    Fields are assumed mirror-symmetric: the component normal to a mirror plane changes sign.
    Nodes on the mirror planes are merged. Returns (nodes, tets, fields).
    """
    all_nodes, all_tets, all_fields = [], [], []
    offset = 0
    for sx in (1, -1):
        for sy in (1, -1):
            for sz in (1, -1):
                s = np.array([sx, sy, sz], dtype=float)
                all_nodes.append(nodes * s)
                all_tets.append(tets + offset)
                all_fields.append(fields * s)
                offset += len(nodes)
    big_nodes = np.concatenate(all_nodes)
    big_tets = np.concatenate(all_tets)
    big_fields = np.concatenate(all_fields, axis=1)
    key = np.round(big_nodes / (radius * 1e-9)).astype(np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    return big_nodes[first], inverse[big_tets], big_fields[:, first]
