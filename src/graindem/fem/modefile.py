"""The graindem mode file (HDF5): deformation modes of a grain and their generalized mass, stiffness and force.

The format is documented in docs/mode-file.md; `FORMAT_VERSION` is bumped on any incompatible change.
Fields live on a *linear* tetrahedral mesh (quadratic FEM results are stored on the 8-way split of each
quadratic tetrahedron, so every FEM node keeps its value and consumers only need barycentric interpolation).

Integrity: every dataset carries a `sha256` attribute of its raw bytes and the root a `content_sha256`
over the format, version, units, metadata and every dataset's (name, dtype, shape, sha256) (version 2;
version 1 files have none and are read without that check). Files are written atomically (a temporary
file in the same folder, flushed and renamed over the target), so a refused or interrupted write leaves
the old file intact. Reading refuses, naming the file and the field: versions outside
1..FORMAT_VERSION, datasets larger than the file, non-finite values, tetrahedron or surface indices
outside the node range, and shapes that do not match (phi (A, n, 3), mass/stiffness (A, A), ...).
"""

import hashlib
import json
import os
from dataclasses import dataclass, field

import h5py
import numpy as np
from scipy.spatial import cKDTree

from ..io.checkpoint import array_sha256, check_declared_sizes
from ..io.outputs import replacing

FORMAT_NAME = "graindem-modes"
FORMAT_VERSION = 2
OLDEST_FORMAT_VERSION = 1


@dataclass
class ModeSet:
    """Modes Φ_α tabulated at mesh nodes, in the grain's body frame.

    nodes (n, 3), tets (t, 4) linear tetrahedra, phi (A, n, 3) with u(x) = Σ ε_α Φ_α(x).
    mass/stiffness (A, A) are the generalized mass ∫ρ Φα·Φβ dV (eq. 8) and stiffness
    ∫ C:E(Φα):E(Φβ) dV (eq. 54) or None. force_eps (k,) / force_table (k, A) is the tabulated nonlinear
    generalized force F_ε(ε) along the loading path (single-mode files: A = 1), or None.
    energy_coefficients / energy_exponents (p,): fitted energy U(ε) = Σ_k c_k ε^(p_k) of a single-mode file.
    """

    nodes: np.ndarray
    tets: np.ndarray
    phi: np.ndarray
    mass: np.ndarray | None = None
    stiffness: np.ndarray | None = None
    surface: np.ndarray | None = None
    force_eps: np.ndarray | None = None
    force_table: np.ndarray | None = None
    energy_coefficients: np.ndarray | None = None
    energy_exponents: np.ndarray | None = None
    mode_names: list = field(default_factory=list)
    units: dict = field(default_factory=lambda: {"length": "voxel", "force": "E*voxel^2", "mass": "rho*voxel^3"})
    metadata: dict = field(default_factory=dict)
    _locator: object = field(default=None, repr=False, compare=False)

    @property
    def n_modes(self):
        return self.phi.shape[0]

    def evaluate(self, points, modes=None):
        """Mode values at arbitrary points, shape (A, m, 3) (or (m, 3) if `modes` is an int).

        Points inside the mesh get the barycentric (linear) interpolant; points outside get the value at
        the closest point of the boundary surface (constant extrapolation along the normal), which is
        what a grain needs for grid points just outside its surface.
        """
        if self._locator is None:
            self._locator = TetLocator(self.nodes, self.tets, self.surface)
        ids, weights = self._locator.locate(points)
        phi = self.phi if modes is None else self.phi[np.atleast_1d(modes)]
        vals = np.einsum("amkd,mk->amd", phi[:, ids], weights)
        return vals[0] if isinstance(modes, (int, np.integer)) else vals

    def displacement(self, points, eps):
        """u(x) = Σ_α ε_α Φ_α(x) at `points` (m, 3)."""
        eps = np.atleast_1d(np.asarray(eps, dtype=float))
        if eps.shape != (self.n_modes,):
            raise ValueError(f"eps must have {self.n_modes} entries (one per mode), got shape {eps.shape}")
        return np.einsum("a,amd->md", eps, self.evaluate(points))

    def energy(self, eps):
        """Fitted energy U(ε) = Σ c_k ε^(p_k) of a single-mode file."""
        if self.energy_coefficients is None:
            raise ValueError("this mode file has no energy fit")
        eps = np.asarray(eps, dtype=float)
        return sum(c * eps**p for c, p in zip(self.energy_coefficients, self.energy_exponents))

    def generalized_force(self, eps):
        """Interpolated tabulated generalized force F_ε(ε) of a single-mode file (linear, clamped slope beyond)."""
        if self.force_table is None:
            raise ValueError("this mode file has no force table")
        e = self.force_eps
        f = self.force_table[:, 0]
        eps = np.asarray(eps, dtype=float)
        out = np.interp(eps, e, f)
        slope_hi = (f[-1] - f[-2]) / (e[-1] - e[-2])
        out = np.where(eps > e[-1], f[-1] + slope_hi * (eps - e[-1]), out)
        slope_lo = (f[1] - f[0]) / (e[1] - e[0])
        return np.where(eps < e[0], f[0] + slope_lo * (eps - e[0]), out)


class TetLocator:
    """Interpolation weights at arbitrary points on a linear tetrahedral mesh.

    Inside: the containing tetrahedron (KD-tree on centroids, then barycentric test, with a wider search
    for points the first candidates miss). Outside: the exact closest point on the boundary triangles.
    """

    def __init__(self, nodes, tets, surface=None, candidates=24):
        self.nodes = np.asarray(nodes, dtype=float)
        self.tets = np.asarray(tets, dtype=np.int64)
        verts = self.nodes[self.tets]  # (t, 4, 3)
        self.origin = verts[:, 3, :]
        edges = (verts[:, :3, :] - self.origin[:, None, :]).transpose(0, 2, 1)  # columns = edge vectors
        self.inverse = np.linalg.inv(edges)
        self.tree = cKDTree(verts.mean(axis=1))
        self.k = min(candidates, len(self.tets))
        self.surface = boundary_faces(self.tets) if surface is None else np.asarray(surface, dtype=np.int64)
        self.surface_tree = cKDTree(self.nodes[self.surface].mean(axis=1))

    def _bary(self, tet_ids, pts):
        lam = np.einsum("...ij,...j->...i", self.inverse[tet_ids], pts - self.origin[tet_ids])
        return np.concatenate([lam, 1.0 - lam.sum(axis=-1, keepdims=True)], axis=-1)

    def _search(self, pts, k):
        _, cand = self.tree.query(pts, k=k)
        cand = cand.reshape(len(pts), -1)
        bary = self._bary(cand, pts[:, None, :])
        score = bary.min(axis=-1)
        best = np.argmax(score, axis=1)
        rows = np.arange(len(pts))
        return cand[rows, best], bary[rows, best], score[rows, best] >= -1e-10

    def locate(self, points):
        """Returns (node ids (m, 4), weights (m, 4)): value(x) = Σ_k w_k f[node_k]."""
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        idx, lam, found = self._search(pts, self.k)
        ids = self.tets[idx]
        retry = np.nonzero(~found)[0]
        if len(retry) and len(self.tets) > self.k:
            idx2, lam2, found2 = self._search(pts[retry], min(8 * self.k, len(self.tets)))
            hit = retry[found2]
            ids[hit], lam[hit] = self.tets[idx2[found2]], lam2[found2]
            found[hit] = True
        outside = np.nonzero(~found)[0]
        if len(outside):
            tri, w = self._closest_on_surface(pts[outside])
            ids[outside] = np.concatenate([tri, tri[:, :1]], axis=1)
            lam[outside] = np.concatenate([w, np.zeros((len(outside), 1))], axis=1)
        return ids, lam

    def _closest_on_surface(self, pts, k=16):
        _, cand = self.surface_tree.query(pts, k=min(k, len(self.surface)))
        cand = cand.reshape(len(pts), -1)
        tri = self.nodes[self.surface[cand]]  # (m, k, 3 vertices, 3)
        w = _closest_point_on_triangles(tri, np.broadcast_to(pts[:, None, :], tri.shape[:2] + (3,)))
        dist = np.linalg.norm(np.einsum("mkv,mkvd->mkd", w, tri) - pts[:, None, :], axis=-1)
        best = np.argmin(dist, axis=1)
        rows = np.arange(len(pts))
        return self.surface[cand[rows, best]], w[rows, best]


def boundary_faces(tets):
    """Triangles of a linear tet mesh that belong to exactly one tetrahedron."""
    tets = np.asarray(tets, dtype=np.int64)
    faces = np.concatenate([tets[:, [0, 1, 2]], tets[:, [0, 1, 3]], tets[:, [0, 2, 3]], tets[:, [1, 2, 3]]])
    _, first, counts = np.unique(np.sort(faces, axis=1), axis=0, return_index=True, return_counts=True)
    return faces[first[counts == 1]]


def _closest_point_on_triangles(tri, p):
    """Barycentric weights (..., 3) of the point of each triangle (..., 3, 3) closest to p (..., 3).

    The plane projection if it falls inside the triangle, otherwise the closest of the three edge points.
    """
    a, b, c = tri[..., 0, :], tri[..., 1, :], tri[..., 2, :]
    ab, ac, ap = b - a, c - a, p - a
    d00 = np.einsum("...d,...d->...", ab, ab)
    d01 = np.einsum("...d,...d->...", ab, ac)
    d11 = np.einsum("...d,...d->...", ac, ac)
    d20 = np.einsum("...d,...d->...", ap, ab)
    d21 = np.einsum("...d,...d->...", ap, ac)
    den = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / den
    w = (d00 * d21 - d01 * d20) / den
    best = np.stack([1.0 - v - w, v, w], axis=-1)
    inside = (v >= 0) & (w >= 0) & (v + w <= 1)
    best_d = np.where(inside, 0.0, np.inf)
    plane_pt = a + v[..., None] * ab + w[..., None] * ac
    best_d = np.where(inside, np.linalg.norm(plane_pt - p, axis=-1), best_d)
    for i, j in ((0, 1), (1, 2), (0, 2)):
        e0, e1 = tri[..., i, :], tri[..., j, :]
        seg = e1 - e0
        t = np.clip(np.einsum("...d,...d->...", p - e0, seg) / np.einsum("...d,...d->...", seg, seg), 0.0, 1.0)
        d = np.linalg.norm(e0 + t[..., None] * seg - p, axis=-1)
        better = ~inside & (d < best_d)
        wts = np.zeros(best.shape)
        wts[..., i] = 1.0 - t
        wts[..., j] = t
        best = np.where(better[..., None], wts, best)
        best_d = np.where(better, d, best_d)
    return best


def _content_digest(version, units, metadata, table):
    doc = json.dumps({"format": FORMAT_NAME, "format_version": int(version), "units": units, "metadata": metadata,
                      "datasets": sorted(table)}, sort_keys=True, default=str)
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


def _attrs_text(attrs):
    """Attributes as JSON-able text values (the form the content checksum covers)."""
    out = {}
    for k, v in attrs.items():
        v = v.tolist() if isinstance(v, (np.ndarray, np.generic)) else v
        out[k] = v.decode() if isinstance(v, bytes) else v
    return out


def _datasets(h5):
    found = []
    h5.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return sorted(found)


def write_mode_file(path, modes: ModeSet):
    """Write `modes` (a ModeSet) to the HDF5 file `path`, replacing it atomically."""
    phi = np.asarray(modes.phi, dtype=float)
    nodes = np.asarray(modes.nodes, dtype=float)
    tets = np.asarray(modes.tets, dtype=np.int64)
    if nodes.ndim != 2 or nodes.shape[1] != 3:
        raise ValueError(f"nodes must have shape (n, 3), got {nodes.shape}")
    if tets.ndim != 2 or tets.shape[1] != 4 or tets.shape[0] == 0 or tets.min() < 0 or tets.max() >= len(nodes):
        raise ValueError("tets must have shape (t, 4), t >= 1, with indices in [0, n_nodes)")
    if phi.ndim != 3 or phi.shape[1:] != nodes.shape or phi.shape[0] < 1:
        raise ValueError(f"phi must have shape (A, {len(nodes)}, 3) with A >= 1, got {phi.shape}")
    n_modes = phi.shape[0]
    for name in ("mass", "stiffness"):
        value = getattr(modes, name)
        if value is not None and np.shape(value) != (n_modes, n_modes):
            raise ValueError(f"{name} must have shape ({n_modes}, {n_modes}), got {np.shape(value)}")
    if modes.mass is not None and np.any(np.diag(np.asarray(modes.mass, dtype=float)) <= 0):
        raise ValueError(f"mass must have a positive diagonal (generalized masses), got {np.diag(modes.mass).tolist()}")
    if (modes.force_table is None) != (modes.force_eps is None):
        raise ValueError("force_eps and force_table must be given together")
    if modes.energy_coefficients is not None and (
            modes.energy_exponents is None or np.shape(modes.energy_exponents) != np.shape(modes.energy_coefficients)):
        raise ValueError("energy_exponents must be given with the same shape as energy_coefficients")
    for name in ("nodes", "phi", "mass", "stiffness", "force_eps", "force_table", "energy_coefficients",
                 "energy_exponents"):
        value = getattr(modes, name)
        if value is not None and not np.all(np.isfinite(np.asarray(value, dtype=float))):
            raise ValueError(f"{name} must be finite everywhere")
    datasets = {"mesh/nodes": nodes, "mesh/tets": tets, "modes/phi": phi}
    if modes.surface is not None:
        datasets["mesh/surface"] = np.asarray(modes.surface)
    for name in ("mass", "stiffness"):
        if getattr(modes, name) is not None:
            datasets[f"modes/{name}"] = np.asarray(getattr(modes, name))
    if modes.force_table is not None:
        datasets["force_table/eps"] = np.asarray(modes.force_eps, dtype=float)
        datasets["force_table/force"] = np.asarray(modes.force_table, dtype=float).reshape(len(modes.force_eps), -1)
    if modes.energy_coefficients is not None:
        datasets["energy_fit/coefficients"] = np.asarray(modes.energy_coefficients, dtype=float)
        datasets["energy_fit/exponents"] = np.asarray(modes.energy_exponents, dtype=float)
    names = np.array([str(n) for n in (modes.mode_names or [f"mode{i}" for i in range(n_modes)])],
                     dtype=h5py.string_dtype())
    with replacing(path) as tmp:
        with h5py.File(tmp, "w") as h5:
            h5.attrs["format"] = FORMAT_NAME
            h5.attrs["format_version"] = FORMAT_VERSION
            table = []
            for name, value in datasets.items():
                value = np.ascontiguousarray(value)
                h5.create_dataset(name, data=value).attrs["sha256"] = digest = array_sha256(value)
                table.append([name, value.dtype.str, list(value.shape), digest])
            h5["modes"].attrs["names"] = names
            units = h5.create_group("units")
            for k, v in modes.units.items():
                units.attrs[k] = str(v)
            meta = h5.create_group("metadata")
            for k, v in modes.metadata.items():
                meta.attrs[k] = v if isinstance(v, (int, float, str, np.ndarray, np.number)) else str(v)
            h5.attrs["content_sha256"] = _content_digest(FORMAT_VERSION, _attrs_text(units.attrs),
                                                         _attrs_text(meta.attrs), table)


def _check_read(path, modes):
    """Refuse a mode set whose fields do not fit together (see the module docstring)."""
    def bad(what):
        raise ValueError(f"mode file {str(path)!r}: {what}")

    nodes, tets, phi = modes.nodes, modes.tets, modes.phi
    if nodes.ndim != 2 or nodes.shape[1] != 3 or nodes.shape[0] < 4 or nodes.dtype.kind != "f":
        bad(f"mesh/nodes must be real numbers of shape (n >= 4, 3), got {nodes.dtype} {nodes.shape}")
    n = nodes.shape[0]
    if tets.ndim != 2 or tets.shape[1] != 4 or tets.shape[0] < 1 or tets.dtype.kind not in "iu":
        bad(f"mesh/tets must be integers of shape (t >= 1, 4), got {tets.dtype} {tets.shape}")
    if tets.min() < 0 or tets.max() >= n:
        bad(f"mesh/tets must hold node indices in [0, {n}), got values in [{tets.min()}, {tets.max()}]")
    if modes.surface is not None:
        sf = modes.surface
        if sf.ndim != 2 or sf.shape[1] != 3 or sf.dtype.kind not in "iu" or (sf.size and (sf.min() < 0 or sf.max() >= n)):
            bad(f"mesh/surface must be triangles (s, 3) of node indices in [0, {n})")
    if phi.ndim != 3 or phi.shape[0] < 1 or phi.shape[1:] != (n, 3) or phi.dtype.kind != "f":
        bad(f"modes/phi must be real numbers of shape (A >= 1, {n}, 3), got {phi.dtype} {phi.shape}")
    A = phi.shape[0]
    for name in ("mass", "stiffness"):
        value = getattr(modes, name)
        if value is not None and (value.shape != (A, A) or value.dtype.kind != "f"):
            bad(f"modes/{name} must be real numbers of shape ({A}, {A}), got {value.dtype} {value.shape}")
    if modes.mass is not None and np.any(np.diag(modes.mass) <= 0):
        bad(f"modes/mass must have a positive diagonal, got {np.diag(modes.mass).tolist()}")
    if (modes.force_eps is None) != (modes.force_table is None):
        bad("force_table/eps and force_table/force must be given together")
    if modes.force_eps is not None:
        e, f = modes.force_eps, modes.force_table
        if e.ndim != 1 or e.size < 2 or f.shape != (e.size, A) or np.any(np.diff(e) <= 0):
            bad(f"force_table must hold increasing eps (k >= 2,) and force (k, {A}); got {e.shape}, {f.shape}")
    if (modes.energy_coefficients is None) != (modes.energy_exponents is None) or (
            modes.energy_coefficients is not None
            and modes.energy_coefficients.shape != modes.energy_exponents.shape):
        bad("energy_fit/coefficients and energy_fit/exponents must be given together, of one shape")
    for name in ("nodes", "phi", "mass", "stiffness", "force_eps", "force_table", "energy_coefficients",
                 "energy_exponents"):
        value = getattr(modes, name)
        if value is not None and not np.all(np.isfinite(value)):
            bad(f"{name} must be finite everywhere")
    if modes.mode_names and len(modes.mode_names) != A:
        bad(f"modes/names must name each of the {A} modes, got {len(modes.mode_names)}")


def read_mode_file(path) -> ModeSet:
    """Read and validate a mode file written by `write_mode_file` (see the module docstring)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"mode file {str(path)!r} does not exist")
    try:
        h5 = h5py.File(path, "r")
    except OSError as exc:
        raise ValueError(f"mode file {str(path)!r} is not a readable HDF5 file (corrupt or truncated?): {exc}") from None
    try:
        with h5:
            fmt = h5.attrs.get("format")
            fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
            if fmt != FORMAT_NAME:
                raise ValueError(f"{path} is not a graindem mode file (format attribute {fmt!r})")
            version = h5.attrs.get("format_version")
            version = version.item() if isinstance(version, np.generic) else version
            if isinstance(version, bool) or not isinstance(version, int) \
                    or not OLDEST_FORMAT_VERSION <= int(version) <= FORMAT_VERSION:
                raise ValueError(f"mode file {str(path)!r}: format_version must be an integer in "
                                 f"[{OLDEST_FORMAT_VERSION}, {FORMAT_VERSION}], got {version!r}")
            version = int(version)
            check_declared_sizes(h5, path, what="mode file")
            values, table = {}, []
            for name in _datasets(h5):
                ds = h5[name]
                value = np.asarray(ds[()])
                if version >= 2:
                    expected = ds.attrs.get("sha256")
                    expected = expected.decode() if isinstance(expected, bytes) else expected
                    if expected != array_sha256(value):
                        raise ValueError(f"mode file {str(path)!r}: dataset {name!r} fails its checksum (file damaged)")
                    table.append([name, value.dtype.str, list(value.shape), expected])
                values[name] = value
            units = _attrs_text(h5["units"].attrs) if "units" in h5 else {}
            metadata = _attrs_text(h5["metadata"].attrs) if "metadata" in h5 else {}
            if version >= 2:
                stored = h5.attrs.get("content_sha256")
                stored = stored.decode() if isinstance(stored, bytes) else stored
                if stored != _content_digest(version, units, metadata, table):
                    raise ValueError(f"mode file {str(path)!r} fails its content checksum (units, metadata or the "
                                     "dataset table damaged)")
            for required in ("mesh/nodes", "mesh/tets", "modes/phi"):
                if required not in values:
                    raise ValueError(f"mode file {str(path)!r} lacks the dataset {required!r}")
            names = h5["modes"].attrs.get("names", [])
            modes = ModeSet(
                nodes=values["mesh/nodes"], tets=values["mesh/tets"], phi=values["modes/phi"],
                mass=values.get("modes/mass"), stiffness=values.get("modes/stiffness"),
                surface=values.get("mesh/surface"), force_eps=values.get("force_table/eps"),
                force_table=values.get("force_table/force"),
                energy_coefficients=values.get("energy_fit/coefficients"),
                energy_exponents=values.get("energy_fit/exponents"),
                mode_names=[s.decode() if isinstance(s, bytes) else str(s) for s in names],
                units={k: str(v) for k, v in units.items()},
                metadata={k: (v.item() if isinstance(v, np.generic) else v) for k, v in h5["metadata"].attrs.items()}
                if "metadata" in h5 else {},
            )
    except (KeyError, OSError, TypeError) as exc:
        raise ValueError(f"mode file {str(path)!r} is damaged and cannot be read: {exc}") from None
    _check_read(path, modes)
    return modes
