"""Validation of an engine checkpoint's arrays and settings before anything runs.

    validate_engine_state(arrays, meta, source="checkpoint")

The kernels index flat arrays without bounds checks: a damaged or crafted checkpoint with a wrong
shape, a non-finite value, a particle index out of range or a broken history-store link would make
them read or write out of bounds or run on garbage. Checksums only detect accidental damage, so
every array the engine trusts is checked here: dtypes and shapes against the particle, wall and
pair counts in `ictl`; finiteness of every real number the next step reads; index ranges of the
pair, wall-candidate, material and particle-id arrays; and the history store (capacity, the free
list, and each live contact's linked list: within range, acyclic, disjoint, of the length its row
records, together owning every live point - the condition under which the store's compaction
succeeds). A violation raises ValueError naming the array (or metadata key) and what is allowed.

Arrays the engine added after the first checkpoint layout (pmat, pid, materials, mu_pair) may be
absent; control records (cell, ctl, ictl) may be shorter than now (older layouts; the engine pads
them with zeros). The rolling/twisting arrays (ROLLING_ARRAYS) are present in runs that use them,
all together, and checked as the others.
"""

import math

import numpy as np

from .._jit import njit
from ..boundaries.walls import N_WALL, N_WALL_PRESCRIBED
from ..contact import rolling as RL
from ..contact import state as S
from ..contact import store as ST
from ..core import cell as C
from ..core import layout as K

__all__ = ["validate_state", "validate_engine_state", "validate_grain_state", "validate_mixed_state",
           "store_link_errors", "MAX_STORE_POINTS"]

# the history store numbers points with int32 links holding (index << 1) | slip
MAX_STORE_POINTS = 1 << 30

_OPTIONAL = ("pmat", "pid", "materials", "mu_pair")
ROLLING_ARRAYS = RL.ENGINE_ARRAYS
_REQUIRED = ("pos", "vel", "omega", "quat", "force", "torque", "radius", "mass", "inertia", "prm", "cell", "ctl",
             "ictl", "walls", "wcand", "pstart", "pi", "pj", "pfs", "pist", "pcq", "wfs", "wist", "wcq",
             "pos_build", "acc", "L0", "store_pts", "store_nxt", "store_meta")


@njit
def store_link_errors(nxt, free_head, heads, lens):
    """Walk the free list and every stack. Returns (code, where): code 0 with where = free points
    if all is well; otherwise 1 free list leaves the store (where: the index), 2 free list revisits
    a point, 3 a stack leaves the store (where: the row), 4 a stack reaches a point already used
    (free, or another stack's, or a cycle), 5 a stack's length differs from its row's."""
    cap = nxt.shape[0]
    seen = np.zeros(cap, dtype=np.uint8)
    i = free_head
    nfree = 0
    while i != -1:
        if i < 0 or i >= cap:
            return 1, i
        if seen[i]:
            return 2, i
        seen[i] = 1
        nfree += 1
        i = nxt[i] >> 1
    for c in range(heads.shape[0]):
        h = heads[c]
        k = 0
        while h != -1:
            if h < 0 or h >= cap:
                return 3, c
            if seen[h]:
                return 4, c
            seen[h] = 2
            k += 1
            h = nxt[h] >> 1
        if k != lens[c]:
            return 5, c
    return 0, nfree


def _fail(source, what, allowed, got=None):
    tail = "" if got is None else f"; got {got}"
    raise ValueError(f"{source}: {what} must be {allowed}{tail}")


def _array(arrays, name, source, kinds, shape, dtype=None):
    a = arrays[name]
    if not isinstance(a, np.ndarray) or a.dtype.kind not in kinds:
        _fail(source, f"array {name!r}", f"a numpy array of kind {kinds!r}", getattr(a, "dtype", type(a)))
    if dtype is not None and a.dtype != np.dtype(dtype):
        _fail(source, f"array {name!r}", f"of dtype {np.dtype(dtype)}", a.dtype)
    if shape is not None:
        if a.ndim != len(shape) or any(want is not None and got != want for got, want in zip(a.shape, shape)):
            _fail(source, f"array {name!r}", f"of shape {tuple('*' if w is None else w for w in shape)}", a.shape)
    return a


def _wall_count(arrays):
    """The rows of the walls array: (n_walls, N_WALL), or 12 columns in older checkpoints (or flat)."""
    a = np.asarray(arrays["walls"])
    cols = a.shape[1] if a.ndim == 2 else (N_WALL if a.size % N_WALL == 0 else N_WALL_PRESCRIBED)
    return int(a.size // max(cols, 1))


def _wall_array(arrays, name, source, nw, dtype=None):
    """A walls array of nw rows of N_WALL columns (12 in checkpoints older than the wall servo)."""
    a = _array(arrays, name, source, "f", (nw, None), dtype)
    if a.shape[1] not in (N_WALL, N_WALL_PRESCRIBED):
        _fail(source, f"array {name!r}", f"of shape ({nw}, {N_WALL}) (or ({nw}, {N_WALL_PRESCRIBED}) in older "
              "checkpoints)", a.shape)
    return a


def _finite(source, name, a):
    if a.size and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        _fail(source, f"array {name!r}", "finite everywhere", f"{a[tuple(bad)]!r} at index {tuple(int(b) for b in bad)}")


def _in_range(source, name, a, lo, hi):
    """Every value of integer array `a` in [lo, hi)."""
    if a.size and (a.min() < lo or a.max() >= hi):
        bad = a[(a < lo) | (a >= hi)][0]
        _fail(source, f"array {name!r}", f"indices in [{lo}, {hi})", int(bad))


def _meta_numbers(meta, source):
    def number(key, lo=-math.inf, hi=math.inf, open_lo=False, allow_none=False):
        v = meta.get(key)
        if v is None and allow_none:
            return
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < lo or v > hi or (open_lo and v == lo):
            _fail(source, f"metadata {key!r}", f"a finite number in {'(' if open_lo else '['}{lo}, {hi}]", repr(v))

    def vector(key, n=3, allow_missing=False):
        v = meta.get(key)
        if v is None and allow_missing:
            return
        if not isinstance(v, list) or len(v) != n or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v):
            _fail(source, f"metadata {key!r}", f"a list of {n} finite numbers", repr(v))

    number("E", 0.0, open_lo=True)
    number("nu", -1.0, 0.5, open_lo=True)
    number("mu", 0.0)
    number("density", 0.0, open_lo=True)
    number("dt_crit", 0.0, open_lo=True)
    number("skin", 0.0)
    number("local_damping", 0.0, 1.0)
    number("diverge_overlap", 0.0, open_lo=True)
    number("xi", 0.0, 1.0)
    number("kt_linear", 0.0)
    number("restitution", 0.0, 1.0, allow_none=True)
    number("reference_overlap", 0.0, allow_none=True)
    number("time_offset")
    if "dt_fraction" in meta:
        number("dt_fraction", 0.0, open_lo=True)
    if "adaptive_dt_interval" in meta:
        v = meta["adaptive_dt_interval"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            _fail(source, "metadata 'adaptive_dt_interval'", "an integer >= 1", repr(v))
    for key in ("box_lo", "box_hi", "rate", "target", "gain", "maxrate", "integral"):
        vector(key)
    vector("shear", allow_missing=True)
    mode = meta.get("mode")
    if not isinstance(mode, list) or len(mode) != 3 or not all(isinstance(m, int) and not isinstance(m, bool)
                                                                 and m in (0, 1) for m in mode):
        _fail(source, "metadata 'mode'", "a list of 3 flags (0 strain rate, 1 stress servo)", repr(mode))
    per = meta.get("periodic")
    if not isinstance(per, list) or len(per) != 3 or not all(isinstance(p, bool) for p in per):
        _fail(source, "metadata 'periodic'", "a list of 3 booleans", repr(per))
    if not all(h > lo for lo, h in zip(meta["box_lo"], meta["box_hi"])):
        _fail(source, "metadata 'box_hi'", "greater than box_lo on every axis", f"{meta['box_lo']} .. {meta['box_hi']}")


def validate_engine_state(arrays, meta, source="checkpoint"):
    """Raise ValueError unless (arrays, meta) is a state the engine can run safely (module docstring)."""
    if not isinstance(meta, dict):
        _fail(source, "metadata", "a dict", type(meta).__name__)
    if not isinstance(meta.get("law"), str):
        _fail(source, "metadata 'law'", "a contact law name", repr(meta.get("law")))
    missing = [name for name in _REQUIRED if name not in arrays]
    if missing:
        _fail(source, "the arrays", f"complete (missing {missing})")
    _meta_numbers(meta, source)

    ictl = _array(arrays, "ictl", source, "i", (None,), np.int64)
    if not 0 < ictl.size <= K.N_ICTL or ictl.size <= max(K.ICTL_NWCAND, K.ICTL_STEP, K.ICTL_NPAIRS):
        _fail(source, "array 'ictl'", f"of length {K.ICTL_NWCAND + 1}..{K.N_ICTL}", ictl.size)
    n = int(ictl[K.ICTL_N])
    nw = int(ictl[K.ICTL_NWALLS])
    npairs = int(ictl[K.ICTL_NPAIRS])
    nwcand = int(ictl[K.ICTL_NWCAND])
    if not 1 <= n <= K.PAIR_INDEX_MAX:
        _fail(source, "ictl[N] (particles)", f"in [1, {K.PAIR_INDEX_MAX}]", n)
    if not 0 <= nw <= 1 << 16:
        _fail(source, "ictl[NWALLS]", "in [0, 65536]", nw)
    if ictl[K.ICTL_STEP] < 0:
        _fail(source, "ictl[STEP]", ">= 0", int(ictl[K.ICTL_STEP]))
    if ictl[K.ICTL_LAW] < 0:
        _fail(source, "ictl[LAW]", ">= 0", int(ictl[K.ICTL_LAW]))

    for name in ("pos", "vel", "omega", "force", "torque", "pos_build"):
        _finite(source, name, _array(arrays, name, source, "f", (n, 3), np.float64))
    _finite(source, "quat", _array(arrays, "quat", source, "f", (n, 4), np.float64))
    for name in ("radius", "mass", "inertia"):
        a = _array(arrays, name, source, "f", (n,), np.float64)
        _finite(source, name, a)
        if np.any(a <= 0.0):
            _fail(source, f"array {name!r}", "> 0 for every particle", float(a[a <= 0.0][0]))
    for name, size in (("cell", C.N_CELL), ("ctl", K.N_CTL)):
        a = _array(arrays, name, source, "f", (None,), np.float64)
        if not 0 < a.size <= size:
            _fail(source, f"array {name!r}", f"of length 1..{size}", a.size)
        _finite(source, name, a)
    ctl = arrays["ctl"]
    if ctl.size > K.CTL_DT and not ctl[K.CTL_DT] > 0.0:
        _fail(source, "ctl[DT] (the time step)", "> 0", float(ctl[K.CTL_DT]))
    cell = arrays["cell"]
    if cell.size >= C.CELL_L + 3 and np.any(cell[C.CELL_L:C.CELL_L + 3] <= 0.0):
        _fail(source, "cell lengths", "> 0", cell[C.CELL_L:C.CELL_L + 3].tolist())
    _finite(source, "prm", _array(arrays, "prm", source, "f", (None,), np.float64))
    _finite(source, "walls", _wall_array(arrays, "walls", source, nw, np.float64))
    _finite(source, "acc", _array(arrays, "acc", source, "f", (K.N_ACC0 + 3 * nw,), np.float64))
    _finite(source, "L0", _array(arrays, "L0", source, "f", (3,), np.float64))

    # pair rows
    pi = _array(arrays, "pi", source, "i", (None,))
    cap = pi.shape[0]
    if pi.dtype not in (np.int32, np.int64):
        _fail(source, "array 'pi'", "int32 or int64", pi.dtype)
    if cap > K.PAIR_INDEX_MAX:
        _fail(source, "pair rows", f"at most {K.PAIR_INDEX_MAX}", cap)
    pj = _array(arrays, "pj", source, "i", (cap,), pi.dtype)
    if not 0 <= npairs <= cap:
        _fail(source, "ictl[NPAIRS]", f"in [0, {cap}] (the pair rows)", npairs)
    _in_range(source, "pi", pi[:npairs], 0, n)
    _in_range(source, "pj", pj[:npairs], 0, n)
    pfs = _array(arrays, "pfs", source, "f", (cap, S.N_FSTATE), np.float64)
    _finite(source, "pfs", pfs[:npairs])
    pist = _array(arrays, "pist", source, "i", (cap, S.N_ISTATE), np.int64)
    _finite(source, "pcq", _array(arrays, "pcq", source, "f", (cap, 4), np.float64)[:npairs])
    pstart = _array(arrays, "pstart", source, "i", (n + 1,), np.int64)
    if np.any(np.diff(pstart) < 0) or pstart[0] < 0 or pstart[-1] > npairs:
        _fail(source, "array 'pstart'", f"non-decreasing within [0, {npairs}]")

    # wall rows: candidates (particle, wall) keyed i * n_walls + w
    nrows = n * nw
    wcand = _array(arrays, "wcand", source, "i", (max(nrows, 1),), np.int64)
    if not 0 <= nwcand <= nrows:
        _fail(source, "ictl[NWCAND]", f"in [0, {nrows}] (particles x walls)", nwcand)
    _in_range(source, "wcand", wcand[:nwcand], 0, max(nrows, 1))
    wfs = _array(arrays, "wfs", source, "f", (nrows, S.N_FSTATE), np.float64)
    wist = _array(arrays, "wist", source, "i", (nrows, S.N_ISTATE), np.int64)
    _finite(source, "wfs", wfs)
    _finite(source, "wcq", _array(arrays, "wcq", source, "f", (nrows, 4), np.float64))

    # materials
    if "materials" in arrays:
        mats = _array(arrays, "materials", source, "f", (None, 4), np.float64)
        nmat = mats.shape[0]
        _finite(source, "materials", mats)
        if nmat < 1 or np.any(mats[:, 0] <= 0) or np.any(mats[:, 3] <= 0) or np.any(mats[:, 2] < 0):
            _fail(source, "array 'materials'", "rows (E > 0, nu, mu >= 0, density > 0), at least one")
        _finite(source, "mu_pair", _array(arrays, "mu_pair", source, "f", (nmat, nmat), np.float64))
        pmat = _array(arrays, "pmat", source, "i", (n + nw,), np.int64)
        _in_range(source, "pmat", pmat, 0, nmat)
        if ictl.size > K.ICTL_NMAT and ictl[K.ICTL_NMAT] not in (0, nmat):
            _fail(source, "ictl[NMAT]", f"the number of materials ({nmat})", int(ictl[K.ICTL_NMAT]))
        pid = _array(arrays, "pid", source, "i", (n,), np.int64)
        if not np.array_equal(np.sort(pid), np.arange(n)):
            _fail(source, "array 'pid'", f"a permutation of 0..{n - 1}")

    # rolling/twisting resistance: all four arrays or none
    present = [name for name in ROLLING_ARRAYS if name in arrays]
    if present and len(present) != len(ROLLING_ARRAYS):
        _fail(source, "the rolling resistance arrays", f"all of {list(ROLLING_ARRAYS)} or none", present)
    if present:
        nmat = arrays["materials"].shape[0] if "materials" in arrays else 1
        rp = _array(arrays, "rolling_pairs", source, "f", (nmat, nmat, RL.N_ROLL_PARAM), np.float64)
        _finite(source, "rolling_pairs", rp)
        if (np.any(rp[..., RL.RP_MU_R] < 0) or np.any(rp[..., RL.RP_KR] < 0)
                or np.any((rp[..., RL.RP_ETA_R] < 0) | (rp[..., RL.RP_ETA_R] > 1))
                or np.any((rp[..., RL.RP_ETA_T] < 0) | (rp[..., RL.RP_ETA_T] > 1))
                or not np.all(np.isin(rp[..., RL.RP_TWIST], (0.0, 1.0)))):
            _fail(source, "array 'rolling_pairs'", "rows (mu_r >= 0, damping in [0, 1], stiffness >= 0, "
                  "twisting 0 or 1, twisting damping in [0, 1])")
        prs = _array(arrays, "prs", source, "f", (cap, RL.N_ROLL_STATE), np.float64)
        _finite(source, "prs", prs[:npairs])
        wrs = _array(arrays, "wrs", source, "f", (nrows, RL.N_ROLL_STATE), np.float64)
        _finite(source, "wrs", wrs)
        for name, rows in (("prs", prs[:npairs]), ("wrs", wrs)):
            if np.any(rows[:, [RL.R_DISS, RL.R_KR, RL.R_KT]] < 0):
                _fail(source, f"array {name!r}", "dissipation and stiffnesses >= 0")
        rrel = _array(arrays, "rrel", source, "f", (1,), np.float64)
        _finite(source, "rrel", rrel)
        if rrel[0] < 0:
            _fail(source, "array 'rrel' (released rolling dissipation)", ">= 0", float(rrel[0]))

    # history store
    pts = _array(arrays, "store_pts", source, "f", (None, 4), np.float64)
    scap = pts.shape[0]
    nxt = _array(arrays, "store_nxt", source, "i", (scap,), np.int32)
    smeta = _array(arrays, "store_meta", source, "i", (ST.N_META,), np.int64)
    if not 1 <= scap < MAX_STORE_POINTS or smeta[ST.M_CAPACITY] != scap:
        _fail(source, "the history store's capacity", f"in [1, 2^30) and equal to its arrays' length {scap}",
              int(smeta[ST.M_CAPACITY]))
    live = int(smeta[ST.M_LIVE])
    if not 0 <= live <= scap:
        _fail(source, "the history store's live count", f"in [0, {scap}]", live)
    _finite(source, "store_pts", pts)
    # the candidate-row wall layout keeps histories in its first nwcand rows; the dense layout of
    # older checkpoints (no meta["wall_rows"]) may keep them in any of its particles x walls rows
    nwhist = nwcand if meta.get("wall_rows") == "candidates" else nrows
    heads = np.concatenate([pist[:npairs, S.I_HEAD], wist[:nwhist, S.I_HEAD]])
    lens = np.concatenate([pist[:npairs, S.I_LEN], wist[:nwhist, S.I_LEN]])
    if lens.size and lens.min() < 0:
        _fail(source, "history lengths (I_LEN)", ">= 0", int(lens.min()))
    code, where = store_link_errors(nxt, int(smeta[ST.M_FREE_HEAD]), heads, lens)
    row = lambda c: f"pair row {c}" if c < npairs else f"wall row {c - npairs}"  # noqa: E731
    if code == 1:
        _fail(source, "the history store's free list", f"within [0, {scap})", f"index {where}")
    if code == 2:
        _fail(source, "the history store's free list", "free of cycles", f"point {where} reached twice")
    if code == 3:
        _fail(source, f"the history of {row(where)}", f"within the store [0, {scap})")
    if code == 4:
        _fail(source, f"the history of {row(where)}", "made of points no other list holds (no cycle, not free)")
    if code == 5:
        _fail(source, f"the history of {row(where)}", f"of the length its row records ({int(lens[where])})")
    if where != scap - live:
        _fail(source, "the history store", f"{scap - live} free points (capacity - live)", where)
    if int(lens.sum()) != live:
        _fail(source, "the history store's live points", "owned by the live contacts' histories "
              f"(they hold {int(lens.sum())})", live)


_GRAIN_FLOATS = ("grain_t_phi", "grain_t_origin", "grain_t_h", "grain_t_nodes", "grain_t_areas", "grain_t_radius",
                 "grain_pos", "grain_vel", "grain_omega", "grain_angmom", "grain_quat", "grain_rot", "grain_force",
                 "grain_torque", "grain_mass", "grain_inertia", "grain_radius", "grain_shear", "grain_energy")
_GRAIN_INTS = ("grain_t_phi_off", "grain_t_shape", "grain_t_node_off", "grain_material", "grain_tmpl",
               "grain_motion", "grain_hist_off", "grain_partner", "grain_last_step", "grain_pairs", "grain_gctl")


def validate_state(arrays, meta, source="checkpoint"):
    """validate_grain_state, validate_mixed_state or validate_engine_state, by the state's body kind
    (meta["bodies"])."""
    if isinstance(meta, dict) and meta.get("bodies") == "levelset":
        return validate_grain_state(arrays, meta, source)
    if isinstance(meta, dict) and meta.get("bodies") == "mixed":
        return validate_mixed_state(arrays, meta, source)
    return validate_engine_state(arrays, meta, source)


def validate_mixed_state(arrays, meta, source="checkpoint"):
    """A state of spheres and level-set grains (bodies.mixed): the spheres' arrays as a sphere
    state's, the grains' as a grain state's (their nodes' partners may be spheres: the grain count
    plus the sphere's index), and the grain-sphere list, build positions and accumulators."""
    from ..bodies.mixed import MC_NPAIRS, N_MC, REC_L, REC_N
    validate_engine_state(arrays, meta, source)
    n_s = int(np.asarray(arrays["pos"]).shape[0])
    validate_grain_state(arrays, meta, source, n_spheres=n_s)
    g = int(np.asarray(arrays["grain_pos"]).shape[0])
    n_walls = _wall_count(arrays)
    missing = [n for n in ("mixed_pairs", "mixed_g_build", "mixed_s_build", "mixed_mctl", "mixed_grain_walls",
                           "mixed_grain_acc") if n not in arrays]
    if missing:
        _fail(source, "arrays", "present", f"missing {missing}")
    pairs = _array(arrays, "mixed_pairs", source, "iu", (None, 2))
    mctl = _array(arrays, "mixed_mctl", source, "iu", (N_MC,))
    n_listed = int(mctl[MC_NPAIRS])
    if not (0 <= n_listed <= pairs.shape[0]):
        _fail(source, "mixed_mctl's pair count", f"in [0, {pairs.shape[0]}]", n_listed)
    _in_range(source, "mixed_pairs[:, 0]", pairs[:n_listed, 0], 0, max(g, 1))
    _in_range(source, "mixed_pairs[:, 1]", pairs[:n_listed, 1], g, g + max(n_s, 1))
    for name, rows in (("mixed_g_build", g), ("mixed_s_build", n_s)):
        b = _array(arrays, name, source, "f", (rows, 3))
        if b.size and np.any(np.isnan(b)):
            _fail(source, f"array {name!r}", "free of NaN")
    _finite(source, "mixed_grain_walls", _wall_array(arrays, "mixed_grain_walls", source, n_walls))
    _finite(source, "mixed_grain_acc", _array(arrays, "mixed_grain_acc", source, "f", (K.N_ACC0 + 3 * n_walls,)))
    if "mixed_energy" in arrays:  # older mixed states book no energies
        from ..contact.levelset_contact import N_ENERGY
        _finite(source, "mixed_energy", _array(arrays, "mixed_energy", source, "f", (N_ENERGY,)))
    for name in ("mixed_grain_record", "mixed_sg_record"):  # older mixed states ran in a fixed box
        if name in arrays:
            rec = _array(arrays, name, source, "f", (REC_N,))
            _finite(source, name, rec)
            if np.any(rec[REC_L:REC_L + 3] <= 0.0):
                _fail(source, f"the cell lengths in {name!r}", "> 0", rec[REC_L:REC_L + 3])


def validate_grain_state(arrays, meta, source="checkpoint", n_spheres=0):
    """Raise ValueError unless (arrays, meta) is a level-set grain state the engine can run safely:
    every array present with its kind, real numbers finite (pos_build may be +inf: a rebuild is due),
    templates' grids and node ranges inside their arrays, and every index (template, material,
    history partner, listed pair) in range."""
    if not isinstance(meta, dict) or not isinstance(meta.get("grain_contact"), dict):
        _fail(source, "metadata 'grain_contact'", "the grains' contact settings (a dict)")
    missing = [n for n in _GRAIN_FLOATS + _GRAIN_INTS + ("grain_pos_build", "cell", "ctl", "ictl", "walls", "materials")
               if n not in arrays]
    if missing:
        _fail(source, "arrays", "present", f"missing {missing}")
    for name in _GRAIN_FLOATS:
        _finite(source, name, _array(arrays, name, source, "f", None))
    for name in _GRAIN_INTS:
        _array(arrays, name, source, "iu", None)
    pb = _array(arrays, "grain_pos_build", source, "f", None)
    if pb.size and np.any(np.isnan(pb)):
        _fail(source, "array 'grain_pos_build'", "free of NaN")
    pos = _array(arrays, "grain_pos", source, "f", (None, 3))
    g = pos.shape[0]
    for name, width in (("grain_vel", 3), ("grain_omega", 3), ("grain_angmom", 3), ("grain_quat", 4),
                        ("grain_force", 3), ("grain_torque", 3), ("grain_inertia", 3), ("grain_pos_build", 3)):
        _array(arrays, name, source, "fiu", (g, width))
    for name in ("grain_mass", "grain_radius", "grain_tmpl", "grain_material", "grain_motion", "grain_hist_off"):
        _array(arrays, name, source, "fiu", (g,))
    _array(arrays, "grain_rot", source, "f", (g, 3, 3))
    shape = _array(arrays, "grain_t_shape", source, "iu", (None, 3))
    n_t = shape.shape[0]
    phi_off = _array(arrays, "grain_t_phi_off", source, "iu", (n_t,))
    node_off = _array(arrays, "grain_t_node_off", source, "iu", (n_t + 1,))
    _array(arrays, "grain_t_origin", source, "f", (n_t, 3))
    for name in ("grain_t_h", "grain_t_radius"):
        _array(arrays, name, source, "f", (n_t,))
    if n_t == 0 or np.any(shape < 2) or np.any(phi_off < 0) or np.any(phi_off + shape.prod(axis=1)
                                                                       > arrays["grain_t_phi"].size):
        _fail(source, "templates' grids (grain_t_shape, grain_t_phi_off)", "at least 2 points a side, inside grain_t_phi")
    nodes = _array(arrays, "grain_t_nodes", source, "f", (None, 3))
    if node_off[0] != 0 or np.any(np.diff(node_off) < 1) or node_off[-1] != nodes.shape[0] \
            or arrays["grain_t_areas"].shape != (nodes.shape[0],):
        _fail(source, "templates' node ranges (grain_t_node_off)", "increasing from 0 to the node count")
    if np.any(arrays["grain_mass"] <= 0) or np.any(arrays["grain_inertia"] <= 0) or np.any(arrays["grain_t_h"] <= 0):
        _fail(source, "grain masses, inertias and grid spacings", "positive")
    tmpl = arrays["grain_tmpl"]
    _in_range(source, "grain_tmpl", tmpl, 0, n_t)
    _in_range(source, "grain_material", arrays["grain_material"], 0, int(np.asarray(arrays["materials"]).shape[0]))
    n_hist = np.diff(node_off)[tmpl] if g else np.zeros(0, dtype=np.int64)
    hist_off = arrays["grain_hist_off"]
    if g and (hist_off[0] != 0 or np.any(hist_off[1:] != np.cumsum(n_hist)[:-1])):
        _fail(source, "array 'grain_hist_off'", "each grain's first history row (the cumulative node counts)")
    n_h = int(n_hist.sum())
    _array(arrays, "grain_shear", source, "f", (n_h, 3))
    _array(arrays, "grain_partner", source, "iu", (n_h,))
    _array(arrays, "grain_last_step", source, "iu", (n_h,))
    n_walls = _wall_count(arrays)
    # a node's partner: a grain, a sphere of a mixed run (g + its index), -1 (none) or -2 - w for wall w
    _in_range(source, "grain_partner", arrays["grain_partner"], -1 - n_walls, g + n_spheres)
    pairs = _array(arrays, "grain_pairs", source, "iu", (None, 2))
    _in_range(source, "grain_pairs", pairs, 0, max(g, 1))
    n_mat = int(np.asarray(arrays["materials"]).shape[0])
    if "grain_mu_tab" in arrays:
        mu = _array(arrays, "grain_mu_tab", source, "f", (n_mat, n_mat))
        _finite(source, "grain_mu_tab", mu)
        if np.any(mu < 0):
            _fail(source, "array 'grain_mu_tab'", "friction coefficients >= 0")
        _in_range(source, "grain_wall_mat", _array(arrays, "grain_wall_mat", source, "iu", (n_walls,)), 0, n_mat)
    if "grain_cp_x" in arrays:  # the contact points of the last force evaluation
        cp_x = _array(arrays, "grain_cp_x", source, "f", (None, 3))
        n_cp = cp_x.shape[0]
        _finite(source, "grain_cp_x", cp_x)
        _finite(source, "grain_cp_f", _array(arrays, "grain_cp_f", source, "f", (n_cp, 3)))
        # a point's grain, and its partner: a grain, a sphere (g + its index) or -2 - w for wall w
        cp_ij = _array(arrays, "grain_cp_ij", source, "iu", (n_cp, 2))
        _in_range(source, "grain_cp_ij", cp_ij, -1 - n_walls, g + n_spheres)
    if "acc" in arrays:
        _finite(source, "acc", _array(arrays, "acc", source, "f", (K.N_ACC0 + 3 * n_walls,)))
