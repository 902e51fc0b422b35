"""VTK XML output for ParaView: particles, contact networks, triangulated surfaces, time series.

Interface (every array is a numpy array; dicts map a field name to an array with one row per
point or per cell; an (n,) array is a scalar field, (n, k) a k-component vector/tensor field):

    write_particles(path, positions, point_data=None)
        Points (one VTK vertex cell each) with point data, e.g. {"radius": r, "velocity": v,
        "force": f}. Also fits any point cloud (level-set contact points, surface nodes).
    write_contacts(path, positions, pairs, cell_data=None, *, branch=None, cell=None,
                   periodic="image") -> number of line cells written
        Contact network: one line cell per contact from centre i to centre j, with cell data,
        e.g. {"normal_force": fn, "tangential_force": ft}. Periodic cells: see below.
    write_surface(path, vertices, triangles, point_data=None, cell_data=None)
        Triangulated surfaces (level-set grains; later with displacement fields as point data).
    merge_surfaces(surfaces) -> (vertices, triangles, grain_id)
        Many (vertices, triangles) pairs into one mesh, with the grain index per vertex.
    PVDCollection(path, resume=False)
        .add(time, file, part=0): index a written file at a time value; the .pvd is rewritten
        (atomically) on every add, so ParaView can open the series at any moment of a run.

Files with zero cells (no contacts yet) are valid VTK but meshio cannot read them back (a meshio
limitation); ParaView/VTK read them. Files are written through meshio as binary (base64, zlib-compressed) .vtu by default; pass
`binary=False` for readable ASCII, `compression=None` for speed (8600 contacts: 0.006 s instead of
0.1 s, file twice as large) or "lzma" for size. Every file is first written to a temporary name beside the
target and then renamed, so ParaView never sees a half-written file. Boolean arrays are stored as
uint8 (VTK has no boolean type). The writers only read their inputs (output never changes state).

In ParaView: open `particles.pvd`, apply Glyph (Sphere, scale array `radius`, scale factor 2,
no orientation) to see the spheres; open `contacts.pvd` and colour the lines by `normal_force`
(Tube filter with the same array for thickness).

Periodic cells. A contact between i and a periodic image of j would, drawn naively from x_i to
x_j, cross the whole box. Give the branch vectors (x_j' - x_i for the image j' actually in contact,
what the engine already computes), or the cell matrix (rows = cell vectors) so that the minimum
image is found by rounding fractional coordinates (exact for contacts shorter than half the
smallest cell height, which holds for any sane DEM cell). Then:
  periodic="image": a wrapped contact is drawn from x_i to x_i + branch, the image position of j,
                    an extra point outside the cell (its line sticks out of the box, as in the
                    contact's true geometry); the cell data field `wrapped` is 1 for such lines.
  periodic="skip":  wrapped contacts are left out of the file (and so are their cell data rows).
The point ids of particle i stay i in the contact file (image points are appended after the N
particle centres), and cell data `i`, `j` give the particle pair of every line.
"""

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .outputs import replacing

__all__ = ["write_particles", "write_contacts", "write_surface", "merge_surfaces", "PVDCollection"]

# A wrapped contact differs from x_j - x_i by a whole lattice vector (at least one cell height);
# an unwrapped one only by round-off of the positions. Any threshold between the two works.
_WRAP_RTOL = 1e-6


def _meshio():
    try:
        import meshio
    except ImportError as exc:  # pragma: no cover - meshio is a runtime dependency
        raise ImportError("VTK output needs meshio: pip install meshio") from exc
    return meshio


def _as_points(name, array):
    points = np.asarray(array, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] not in (2, 3):
        raise ValueError(f"{name} must have shape (n, 3) (or (n, 2) in the plane); got {np.shape(array)}")
    if points.shape[1] == 2:
        points = np.column_stack([points, np.zeros(len(points))])
    if not np.all(np.isfinite(points)):
        raise ValueError(f"{name} must be finite; rows {np.flatnonzero(~np.isfinite(points).all(axis=1))[:10].tolist()} are not")
    return points


def _field_arrays(kind, fields, n):
    """Check each field has n rows and a VTK-representable dtype; return plain numpy arrays."""
    out = {}
    for name, value in (fields or {}).items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{kind} names must be non-empty strings; got {name!r}")
        array = np.asarray(value)
        if array.dtype == bool:
            array = array.astype(np.uint8)
        if array.dtype.kind not in "iuf":
            raise ValueError(f"{kind} {name!r} must be numeric (int, uint, float or bool); got dtype {array.dtype}")
        if array.ndim == 0 or array.shape[0] != n:
            raise ValueError(f"{kind} {name!r} must have {n} rows (one per {'point' if 'point' in kind else 'cell'}); got shape {array.shape}")
        if array.ndim > 2:
            array = array.reshape(n, -1)  # tensors as 9 components, the layout ParaView expects
        out[name] = np.ascontiguousarray(array)
    return out


def _write_atomic(path, mesh, binary, compression):
    if compression not in ("zlib", "lzma", None):
        raise ValueError(f"compression must be 'zlib', 'lzma' or None; got {compression!r}")
    path = Path(path)
    if path.suffix != ".vtu":
        raise ValueError(f"path must end in .vtu (VTK unstructured grid); got {str(path)!r}")
    with replacing(path) as tmp:
        if binary:
            _meshio().write(tmp, mesh, file_format="vtu", binary=True, compression=compression)
        else:
            _meshio().write(tmp, mesh, file_format="vtu", binary=False)
    return path


def write_particles(path, positions, point_data=None, *, binary=True, compression="zlib"):
    """Write particles (or any points) as a .vtu of vertex cells with the given point data."""
    points = _as_points("positions", positions)
    n = len(points)
    data = _field_arrays("point_data", point_data, n)
    cells = [("vertex", np.arange(n, dtype=np.int64).reshape(n, 1))]
    mesh = _meshio().Mesh(points, cells, point_data=data)
    return _write_atomic(path, mesh, binary, compression)


def _minimum_image(d, cell):
    cell = np.asarray(cell, dtype=np.float64)
    if cell.shape != (3, 3) or not np.all(np.isfinite(cell)):
        raise ValueError(f"cell must be a finite 3x3 matrix whose rows are the cell vectors; got shape {cell.shape}")
    if abs(np.linalg.det(cell)) <= 0.0:
        raise ValueError("cell must be non-singular (its rows span a volume > 0)")
    frac = np.linalg.solve(cell.T, d.T).T
    return d - np.rint(frac) @ cell


def write_contacts(path, positions, pairs, cell_data=None, *, branch=None, cell=None, periodic="image", binary=True,
                   compression="zlib"):
    """Write a contact network: a line cell from particle i to particle j per row of `pairs`.

    positions: (N, 3) particle centres; pairs: (m, 2) integer particle indices; cell_data: fields
    with m rows. branch: optional (m, 3) vectors from centre i to the centre of the image of j in
    contact; cell: optional 3x3 periodic cell (rows = cell vectors) used when branch is not given.
    periodic: "image" or "skip" (see the module docstring). Returns the number of lines written.
    Adds cell data `i`, `j` (int64) and `wrapped` (uint8).
    """
    if periodic not in ("image", "skip"):
        raise ValueError(f"periodic must be 'image' or 'skip'; got {periodic!r}")
    points = _as_points("positions", positions)
    n = len(points)
    pairs = np.asarray(pairs)
    if pairs.size == 0:
        pairs = pairs.reshape(0, 2)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iu":
        raise ValueError(f"pairs must be an (m, 2) integer array; got shape {pairs.shape}, dtype {pairs.dtype}")
    pairs = pairs.astype(np.int64)
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= n):
        raise ValueError(f"pairs must index particles in [0, {n - 1}]; got values in [{pairs.min()}, {pairs.max()}]")
    m = len(pairs)
    data = _field_arrays("cell_data", cell_data, m)
    for reserved in ("i", "j", "wrapped"):
        if reserved in data:
            raise ValueError(f"cell_data name {reserved!r} is reserved (written by write_contacts)")

    direct = points[pairs[:, 1]] - points[pairs[:, 0]]
    if branch is not None:
        branch = _as_points("branch", branch)
        if len(branch) != m:
            raise ValueError(f"branch must have one row per contact ({m}); got {len(branch)}")
    elif cell is not None:
        branch = _minimum_image(direct, cell)
    else:
        branch = direct
    gap = np.linalg.norm(direct - branch, axis=1)
    wrapped = gap > _WRAP_RTOL * np.maximum(np.linalg.norm(direct, axis=1), np.linalg.norm(branch, axis=1))

    keep = ~wrapped if periodic == "skip" else np.ones(m, dtype=bool)
    ends = pairs[:, 1].copy()
    image_points = np.empty((0, 3))
    if periodic == "image" and wrapped.any():
        image_points = points[pairs[wrapped, 0]] + branch[wrapped]
        ends[wrapped] = n + np.arange(len(image_points))
    lines = np.column_stack([pairs[:, 0], ends])[keep]
    data = {name: array[keep] for name, array in data.items()}
    data["i"] = pairs[keep, 0]
    data["j"] = pairs[keep, 1]
    data["wrapped"] = wrapped[keep].astype(np.uint8)
    all_points = np.vstack([points, image_points])
    # an empty network keeps its (empty) arrays, so every frame of a series lists the same fields
    mesh = _meshio().Mesh(all_points, [("line", lines)], cell_data={k: [v] for k, v in data.items()})
    _write_atomic(path, mesh, binary, compression)
    return int(len(lines))


def write_surface(path, vertices, triangles, point_data=None, cell_data=None, *, binary=True, compression="zlib"):
    """Write a triangulated surface: vertices (n, 3), triangles (m, 3) vertex indices."""
    points = _as_points("vertices", vertices)
    tris = np.asarray(triangles)
    if tris.size == 0:
        tris = tris.reshape(0, 3)
    if tris.ndim != 2 or tris.shape[1] != 3 or tris.dtype.kind not in "iu":
        raise ValueError(f"triangles must be an (m, 3) integer array; got shape {tris.shape}, dtype {tris.dtype}")
    if len(tris) and (tris.min() < 0 or tris.max() >= len(points)):
        raise ValueError(f"triangles must index vertices in [0, {len(points) - 1}]; got values in [{tris.min()}, {tris.max()}]")
    pdata = _field_arrays("point_data", point_data, len(points))
    cdata = _field_arrays("cell_data", cell_data, len(tris))
    mesh = _meshio().Mesh(points, [("triangle", tris.astype(np.int64))], point_data=pdata,
                          cell_data={k: [v] for k, v in cdata.items()} or None)
    return _write_atomic(path, mesh, binary, compression)


def merge_surfaces(surfaces):
    """Concatenate [(vertices, triangles), ...] into one mesh; returns (vertices, triangles, grain_id).

    grain_id[k] is the index in `surfaces` of the grain vertex k belongs to (int64), ready to be
    passed as point data.
    """
    verts, tris, ids = [], [], []
    offset = 0
    for g, (v, t) in enumerate(surfaces):
        v = _as_points(f"surfaces[{g}] vertices", v)
        t = np.asarray(t, dtype=np.int64).reshape(-1, 3)
        if len(t) and (t.min() < 0 or t.max() >= len(v)):
            raise ValueError(f"surfaces[{g}] triangles must index its vertices in [0, {len(v) - 1}]")
        verts.append(v)
        tris.append(t + offset)
        ids.append(np.full(len(v), g, dtype=np.int64))
        offset += len(v)
    if not verts:
        return np.empty((0, 3)), np.empty((0, 3), dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.vstack(verts), np.vstack(tris), np.concatenate(ids)


class PVDCollection:
    """A ParaView collection (.pvd) indexing files by time; rewritten atomically on every `add`.

    File paths are stored relative to the .pvd's folder when they lie under it. With
    resume=True an existing .pvd is read first (a restarted run continues its series); entries
    at times >= the first time added afterwards are dropped, so a restart from an earlier
    checkpoint does not leave stale frames from the interrupted run.
    """

    def __init__(self, path, resume=False):
        self.path = Path(path)
        if self.path.suffix != ".pvd":
            raise ValueError(f"path must end in .pvd; got {str(self.path)!r}")
        self.entries = []  # (time, part, file) with file relative to the .pvd when possible
        self._resumed = False
        if resume and self.path.exists():
            try:
                root = ET.parse(self.path).getroot()
            except ET.ParseError as exc:
                raise ValueError(f"cannot resume the ParaView collection {str(self.path)!r}: not valid XML ({exc})") from None
            for ds in root.iter("DataSet"):
                self.entries.append((float(ds.get("timestep")), int(ds.get("part", 0)), ds.get("file")))
            self._resumed = True

    def add(self, time, file, part=0):
        """Index `file` (already written) at simulation time `time`; `part` separates datasets shown together."""
        time = float(time)
        if not np.isfinite(time):
            raise ValueError(f"time must be finite; got {time}")
        if self._resumed:
            self.entries = [e for e in self.entries if e[0] < time]
            self._resumed = False
        file = Path(file)
        try:
            rel = os.path.relpath(file.resolve(), self.path.parent.resolve())
        except ValueError:  # another drive on Windows
            rel = str(file.resolve())
        rel = Path(rel).as_posix()
        self.entries = [e for e in self.entries if not (e[0] == time and e[1] == part)]
        self.entries.append((time, int(part), rel))
        self.write()

    def write(self):
        root = ET.Element("VTKFile", type="Collection", version="0.1", byte_order="LittleEndian")
        coll = ET.SubElement(root, "Collection")
        for time, part, file in sorted(self.entries, key=lambda e: (e[0], e[1])):
            ET.SubElement(coll, "DataSet", timestep=repr(time), group="", part=str(part), file=file)
        ET.indent(root)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(self.path) as tmp:
            ET.ElementTree(root).write(tmp, encoding="utf-8", xml_declaration=True)
