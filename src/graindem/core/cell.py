"""The periodic cell: its layout, minimum image, fractional coordinates and tilt flips.

The cell is the parallelepiped spanned by a = (Lx, 0, 0), b = (xy, Ly, 0), c = (xz, yz, Lz) (an
upper-triangular cell matrix, LAMMPS's convention) with origin lo; a cell that was never tilted or
sheared takes the orthogonal code paths, which are cheaper and give the same bits as before a
shear was possible. Every body kind and every pass reads the cell through these functions, so a
separation means the same thing to the neighbour search, the pair passes and the diagnostics.

Layout of the float64 array `cell` (CELL_*):
"""

import math

import numpy as np

from .._jit import njit

CELL_LO = 0          # 3: origin
CELL_L = 3           # 3: lengths now
CELL_LBUILD = 6      # 3: lengths at the last neighbour rebuild
CELL_RATE = 9        # 3: strain rates dL/(L dt) used in the last drift
CELL_INTEGRAL = 12   # 3: integral term of the stress servo (a strain rate)
# a sheared cell is the upper-triangular matrix h with rows a = (Lx, 0, 0), b = (xy, Ly, 0),
# c = (xz, yz, Lz) (LAMMPS's convention): the image of x across the y face is x + b
CELL_TILT = 15       # 3: tilts xy, xz, yz (m)
CELL_TILT_BUILD = 18  # 3: tilts at the last neighbour rebuild
CELL_SHEAR_RATE = 21  # 3: velocity gradients L_xy, L_xz, L_yz (1/s) used in the last drift
CELL_GAMMA = 24      # 3: accumulated shear strains (integral of L_xy, L_xz, L_yz dt; flips do not reset it)
N_CELL = 27


@njit(_nrt=False, inline="always")
def is_sheared(cell):
    """True once the cell has a tilt or is being sheared: only then the triclinic geometry runs."""
    return (cell[CELL_TILT] != 0.0 or cell[CELL_TILT + 1] != 0.0 or cell[CELL_TILT + 2] != 0.0
            or cell[CELL_SHEAR_RATE] != 0.0 or cell[CELL_SHEAR_RATE + 1] != 0.0 or cell[CELL_SHEAR_RATE + 2] != 0.0)


@njit(_nrt=False, inline="always")
def min_image(dx, dy, dz, Lx, Ly, Lz, perx, pery, perz):
    """Minimum image in the orthogonal cell (the tilted cell's is min_image_tilted), for
    |d| < 3/2 L (coordinates wrapped at rebuilds, drifting at most half a skin between them).

    Comparisons rather than d - L floor(d / L + 1/2): the same result bit for bit (d - L, d + L
    or d unchanged) except where both images lie within rounding of L/2, which neighbours never
    do (the cell exceeds twice the cutoff), and without a division per axis and pair (measured
    ~10 % of the mindlin step of the periodic 4096-sphere biaxial test)."""
    if perx:
        if dx > 0.5 * Lx:
            dx -= Lx
        elif dx < -0.5 * Lx:
            dx += Lx
    if pery:
        if dy > 0.5 * Ly:
            dy -= Ly
        elif dy < -0.5 * Ly:
            dy += Ly
    if perz:
        if dz > 0.5 * Lz:
            dz -= Lz
        elif dz < -0.5 * Lz:
            dz += Lz
    return dx, dy, dz


@njit(_nrt=False, inline="always")
def min_image_tilted(dx, dy, dz, Lx, Ly, Lz, xy, xz, yz, perx, pery, perz):
    """Minimum image through the cell matrix, the c, b, a vectors in turn (exact for tilts within
    half a cell length and separations below half the cell's heights, which flip_tilts and the
    cell size check keep)."""
    if perz:
        k = math.floor(dz / Lz + 0.5)
        dz -= k * Lz
        dy -= k * yz
        dx -= k * xz
    if pery:
        k = math.floor(dy / Ly + 0.5)
        dy -= k * Ly
        dx -= k * xy
    if perx:
        dx -= Lx * math.floor(dx / Lx + 0.5)
    return dx, dy, dz


@njit(_nrt=False, inline="always")
def tilt_out_of_range(cell):
    return (abs(cell[CELL_TILT]) > 0.5 * cell[CELL_L] or abs(cell[CELL_TILT + 1]) > 0.5 * cell[CELL_L]
            or abs(cell[CELL_TILT + 2]) > 0.5 * cell[CELL_L + 1])


@njit
def flip_tilts(cell):
    """Bring each tilt into [-L/2, L/2] by an equivalent choice of cell vectors (c - k b, b - k a,
    c - k a): the lattice of images, and so the physics, is unchanged (LAMMPS's flip)."""
    Lx = cell[CELL_L]
    Ly = cell[CELL_L + 1]
    if abs(cell[CELL_TILT + 2]) > 0.5 * Ly:
        k = math.floor(cell[CELL_TILT + 2] / Ly + 0.5)
        cell[CELL_TILT + 2] -= k * Ly
        cell[CELL_TILT + 1] -= k * cell[CELL_TILT]
    for t in range(2):
        if abs(cell[CELL_TILT + t]) > 0.5 * Lx:
            cell[CELL_TILT + t] -= Lx * math.floor(cell[CELL_TILT + t] / Lx + 0.5)


@njit(_nrt=False, inline="always")
def new_tilts(cell, dt):
    """The tilts after one step of the cell's flow: h <- (I + L dt) h with the strain rates and shear
    rates of the last servo call (the cell's rows keep every body's fractional coordinates)."""
    e0 = cell[CELL_RATE] * dt
    e1 = cell[CELL_RATE + 1] * dt
    g01 = cell[CELL_SHEAR_RATE] * dt
    g02 = cell[CELL_SHEAR_RATE + 1] * dt
    g12 = cell[CELL_SHEAR_RATE + 2] * dt
    xy_new = (1.0 + e0) * cell[CELL_TILT] + g01 * cell[CELL_L + 1]
    xz_new = (1.0 + e0) * cell[CELL_TILT + 1] + g01 * cell[CELL_TILT + 2] + g02 * cell[CELL_L + 2]
    yz_new = (1.0 + e1) * cell[CELL_TILT + 2] + g12 * cell[CELL_L + 2]
    return xy_new, xz_new, yz_new


@njit(_nrt=False, inline="always")
def advance_cell(cell, dt):
    """Move the cell by one step of its flow (tilts, lengths, accumulated shear strains), after the
    drift of the level-set grains. (The sphere pass, engine.integration, keeps its own copy of these
    lines: with fastmath's contraction an inlined copy may round the tilt differently in its last bit,
    and sphere runs are kept bit for bit.)"""
    xy_new, xz_new, yz_new = new_tilts(cell, dt)
    cell[CELL_TILT] = xy_new
    cell[CELL_TILT + 1] = xz_new
    cell[CELL_TILT + 2] = yz_new
    for k in range(3):
        cell[CELL_L + k] *= 1.0 + cell[CELL_RATE + k] * dt
        cell[CELL_GAMMA + k] += cell[CELL_SHEAR_RATE + k] * dt


@njit(_nrt=False, inline="always")
def shear_since_build(cell):
    """(f01, f02, f12): the off-diagonal terms of the cell's affine map F = h h_build^-1 since the
    last neighbour rebuild (h: the upper-triangular cell matrix; all zero for a cell that has not
    tilted). The one rule of the rebuild tests (deformation_since_build), of the level-set grains'
    drift (bodies.levelset.affine_drift2) and of a decomposed run's (parallel.subdomain)."""
    s0 = cell[CELL_L] / cell[CELL_LBUILD]
    s1 = cell[CELL_L + 1] / cell[CELL_LBUILD + 1]
    f01 = (cell[CELL_TILT] - s0 * cell[CELL_TILT_BUILD]) / cell[CELL_LBUILD + 1]
    f12 = (cell[CELL_TILT + 2] - s1 * cell[CELL_TILT_BUILD + 2]) / cell[CELL_LBUILD + 2]
    f02 = (cell[CELL_TILT + 1] - s0 * cell[CELL_TILT_BUILD + 1] - f01 * cell[CELL_TILT_BUILD + 2]) / cell[CELL_LBUILD + 2]
    return f01, f02, f12


@njit(_nrt=False, inline="always")
def flow_displacement(cell, x, y, z, dt):
    """The displacement of the point (x, y, z) by one step of the cell's affine flow, L (x - lo) dt
    (L: the strain rates on the diagonal, the shear rates above it)."""
    x -= cell[CELL_LO]
    y -= cell[CELL_LO + 1]
    z -= cell[CELL_LO + 2]
    return (x * (cell[CELL_RATE] * dt) + y * (cell[CELL_SHEAR_RATE] * dt) + z * (cell[CELL_SHEAR_RATE + 1] * dt),
            y * (cell[CELL_RATE + 1] * dt) + z * (cell[CELL_SHEAR_RATE + 2] * dt), z * (cell[CELL_RATE + 2] * dt))


@njit(_nrt=False, inline="always")
def flow_velocity(cell, ex, ey, ez):
    """L e: the affine flow's velocity difference between two points e apart (a body's image and
    another body's centre); zero in a fixed cell."""
    return (cell[CELL_RATE] * ex + cell[CELL_SHEAR_RATE] * ey + cell[CELL_SHEAR_RATE + 1] * ez,
            cell[CELL_RATE + 1] * ey + cell[CELL_SHEAR_RATE + 2] * ez, cell[CELL_RATE + 2] * ez)


@njit(_nrt=False, inline="always")
def deformation_since_build(cell):
    """(bound, flip): a bound on |F - I| of the cell's affine map F since the last neighbour rebuild
    (max |F_kk - 1| plus the Frobenius norm of F's off-diagonal part), and whether a tilt passed
    half a cell length (the rebuild must then flip it). list_is_stale's measure of the cell."""
    stretch = 0.0
    for k in range(3):
        s = abs(cell[CELL_L + k] / cell[CELL_LBUILD + k] - 1.0)
        if s > stretch:
            stretch = s
    flip = False
    if is_sheared(cell):
        f01, f02, f12 = shear_since_build(cell)
        stretch += math.sqrt(f01 * f01 + f02 * f02 + f12 * f12)
        flip = tilt_out_of_range(cell)
    return stretch, flip


@njit(_nrt=False, inline="always")
def list_is_stale(cell, drift, cutoff, skin):
    """The Verlet rule in a deforming cell: a list built with `skin` (pairs within `cutoff`) is stale
    when twice the largest move `drift` of a centre relative to the cell's affine flow, plus the
    cell's stretch and tilt since the build times the cutoff, exceeds the skin, or a tilt must flip.
    Every kind's rebuild test (engine.loop.rebuild_due, the level-set, mixed and deformable loops)."""
    stretch, flip = deformation_since_build(cell)
    return flip or 2.0 * drift + stretch * cutoff > skin


@njit
def fractional(x, y, z, cell):
    """Fractional coordinates h^-1 (x - lo) of a point in the (upper-triangular) cell."""
    f2 = (z - cell[CELL_LO + 2]) / cell[CELL_L + 2]
    f1 = (y - cell[CELL_LO + 1] - cell[CELL_TILT + 2] * f2) / cell[CELL_L + 1]
    f0 = (x - cell[CELL_LO] - cell[CELL_TILT] * f1 - cell[CELL_TILT + 1] * f2) / cell[CELL_L]
    return f0, f1, f2


@njit
def cell_index(x, lo, L, m):
    c = int((x - lo) / L * m)
    if c < 0:
        return 0
    if c >= m:
        return m - 1
    return c


@njit(_nrt=False, inline="always")
def bins_across(width, cutoff):
    """Bins of at least the cutoff across a width (1 to 1024)."""
    m = int(width / cutoff)
    if m < 1:
        m = 1
    if m > 1024:
        m = 1024
    return m


@njit
def wrap_and_grid(pos, n, cell, periodic, cutoff, ncell):
    """Wrap periodic coordinates into the box and size the cell grid (ncell, 3 ints)."""
    for k in range(3):
        lo = cell[CELL_LO + k]
        L = cell[CELL_L + k]
        if periodic[k] != 0:
            for i in range(n):
                x = pos[i, k]
                if x < lo or x >= lo + L:
                    x -= L * math.floor((x - lo) / L)
                    if x >= lo + L:
                        x -= L
                    pos[i, k] = x
        ncell[k] = bins_across(L, cutoff)


@njit
def wrap_and_grid_tilted(pos, n, cell, periodic, cutoff, ncell):
    """wrap_and_grid of a sheared cell: flip the tilts, wrap through fractional coordinates (a
    jump across the y face shifts x by the tilt xy: Lees-Edwards), and size the grid by the cell's
    heights (the distances between opposite faces), so that +-1 bin in fractional coordinates
    holds every neighbour within the cutoff."""
    flip_tilts(cell)
    Lx = cell[CELL_L]
    Ly = cell[CELL_L + 1]
    Lz = cell[CELL_L + 2]
    xy = cell[CELL_TILT]
    xz = cell[CELL_TILT + 1]
    yz = cell[CELL_TILT + 2]
    for i in range(n):
        x = pos[i, 0]
        y = pos[i, 1]
        z = pos[i, 2]
        if periodic[2] != 0:
            k = math.floor((z - cell[CELL_LO + 2]) / Lz)
            z -= k * Lz
            y -= k * yz
            x -= k * xz
        if periodic[1] != 0:
            _, f1, _ = fractional(x, y, z, cell)
            k = math.floor(f1)
            y -= k * Ly
            x -= k * xy
        if periodic[0] != 0:
            f0, _, _ = fractional(x, y, z, cell)
            x -= Lx * math.floor(f0)
        pos[i, 0] = x
        pos[i, 1] = y
        pos[i, 2] = z
    vol = Lx * Ly * Lz
    # heights: V / |b x c|, V / |a x c|, V / |a x b|
    bcx = Ly * Lz
    bcy = -xy * Lz
    bcz = xy * yz - Ly * xz
    heights = (vol / math.sqrt(bcx * bcx + bcy * bcy + bcz * bcz), Ly * Lz / math.sqrt(Lz * Lz + yz * yz), Lz)
    for k in range(3):
        ncell[k] = bins_across(heights[k], cutoff)


@njit
def grid_bin_of(pos, i, cell, sheared, mx, my, mz):
    """Grid bin of particle i: by position, or in a sheared cell by fractional coordinates."""
    if not sheared:
        return (cell_index(pos[i, 0], cell[CELL_LO], cell[CELL_L], mx) * my
                + cell_index(pos[i, 1], cell[CELL_LO + 1], cell[CELL_L + 1], my)) * mz \
            + cell_index(pos[i, 2], cell[CELL_LO + 2], cell[CELL_L + 2], mz)
    f0, f1, f2 = fractional(pos[i, 0], pos[i, 1], pos[i, 2], cell)
    return (cell_index(f0, 0.0, 1.0, mx) * my + cell_index(f1, 0.0, 1.0, my)) * mz + cell_index(f2, 0.0, 1.0, mz)


def cell_heights(lengths, tilts):
    """The distances between the cell's opposite faces (Python side): V / |b x c|, V / |a x c|,
    V / |a x b| of the cell vectors a = (Lx, 0, 0), b = (xy, Ly, 0), c = (xz, yz, Lz) (the rule
    wrap_and_grid_tilted sizes its grid by)."""
    Lx, Ly, Lz = (float(v) for v in lengths)
    xy, xz, yz = (float(v) for v in tilts)
    vol = Lx * Ly * Lz
    bc = math.sqrt((Ly * Lz) ** 2 + (xy * Lz) ** 2 + (xy * yz - Ly * xz) ** 2)
    return np.array([vol / bc, Ly * Lz / math.sqrt(Lz * Lz + yz * yz), Lz])


def fractional_coordinates(pos, cell, periodic):
    """Fractional coordinates h^-1 (x - lo) of positions (m, 3) in the cell (Python side; the rule
    of fractional, an untilted cell's (x - lo) / L), in [0, 1) along the periodic axes."""
    d = pos - cell[CELL_LO:CELL_LO + 3]
    L = cell[CELL_L:CELL_L + 3]
    xy, xz, yz = cell[CELL_TILT:CELL_TILT + 3]
    f = np.empty_like(d)
    f[:, 2] = d[:, 2] / L[2]
    f[:, 1] = (d[:, 1] - yz * f[:, 2]) / L[1]
    f[:, 0] = (d[:, 0] - xy * f[:, 1] - xz * f[:, 2]) / L[0]
    for k in range(3):
        if periodic[k]:
            f[:, k] -= np.floor(f[:, k])
    return np.clip(f, 0.0, np.nextafter(1.0, 0.0))


def minimum_image(d, lengths, tilts, periodic):
    """Minimum image of separations d (m, 3) (Python side; a copy): the c, b, a cell vectors in turn,
    the rule of min_image_tilted, which is min_image's too wherever both images are not within
    rounding of half a cell length."""
    d = np.array(d, dtype=np.float64)
    L = np.asarray(lengths, dtype=np.float64)
    t = np.asarray(tilts, dtype=np.float64)
    if periodic[2]:
        k = np.floor(d[:, 2] / L[2] + 0.5)
        d[:, 2] -= k * L[2]
        d[:, 1] -= k * t[2]
        d[:, 0] -= k * t[1]
    if periodic[1]:
        k = np.floor(d[:, 1] / L[1] + 0.5)
        d[:, 1] -= k * L[1]
        d[:, 0] -= k * t[0]
    if periodic[0]:
        d[:, 0] -= L[0] * np.floor(d[:, 0] / L[0] + 0.5)
    return d
