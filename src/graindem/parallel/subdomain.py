"""One rank's share of a sphere run decomposed over MPI ranks.

A rank owns the spheres of its box (bisection.Bisection, at the build positions of the neighbour
list) and holds as ghosts every other sphere within the halo (2 r_max + skin, the neighbour list's
cutoff) of that box, periodic images included. Boxes are boxes of the cell's fractional
coordinates, so in a sheared cell they are parallelepipeds that tilt with it, and the periodic
images are whole shifts of the fractional coordinates (Lees-Edwards images included). Its pair
rows are the rows of the serial neighbour list with an owned sphere, in the same order: local rows
number the spheres in global-id order, so that the neighbour build (engine.neighbours.build_pairs)
run on the local spheres lists exactly the serial list's rows among them, in the serial order and
orientation. A row between spheres of two
ranks is computed by both (no reverse communication), from the same inputs, so both hold the same
contact state; the force on an owned sphere is then summed from the same rows in the same order as
in the serial run, and the trajectory is the serial one bit for bit. Rows between two ghosts are
computed too and their results ignored. A sphere's wall rows (plane walls) are held by its owner
only, in the serial key order, and travel with it; every rank moves the walls as the serial loop
does, from the walls' forces of all ranks.

A step: one call of the serial time loop (engine.loop.run_steps) on the local state (in a deforming
cell, in two parts around the reduction of the stress sum, which the servo reads), with the owned
spheres numbered first and only they integrated, its own rebuild test switched off; the ghosts
refreshed from their owners (world.HaloUpdate: positions, velocities, spins, orientations) while
the largest displacement of the owned spheres is reduced over the ranks (an exact maximum, a
non-blocking reduction); then the rebuild test (engine.loop.rebuild_due) on it. At a rebuild the
owned spheres go to the ranks whose boxes now hold them, each with the ranks whose halo it
reaches, and every pair row goes, with its load history (row_transfer), to the new owners of its
two spheres, sent by the owner of its lower-id sphere (the row's authoritative copy); the local
Simulation's arrays are refilled in place and its neighbour build carries the rows over as the
serial build does. Every `Simulation.mpi_rebalance_every` rebuilds the boxes are bisected again
from all positions.

Between calls of Simulation.run the Simulation holds the whole state on every rank, gathered
(gather_into) in the serial layout: the spheres in global order, and the pair list in the serial
order (the ranks' rows sorted by their lower sphere: each group of rows is held whole, in the
serial order, by that sphere's owner), so measure(),
state_dict() and checkpoints read as from a serial run (the history store is laid out afresh: its
point indices differ from a serial run's, its histories do not). The stress sum, the walls'
forces and the viscous work are the serial ones bit for bit (core.exact_sum: each rank's exact
accumulators hold the rows of its own spheres i, and the accumulators are added as integers; with
walls, viscous damping, or in a deforming cell, in the middle of every step, before the servo, the
walls' work and the running total of the viscous work read them), so is the dissipation of the
rows a rebuild drops (_released_dissipation); the local damping work is the exception: each rank
sums its part and the parts are added in rank order, which rounds differently from the serial sum.
"""

import time

import numpy as np

from ..contact import rolling as RL
from ..contact import state as S
from ..contact.store import HistoryStore
from ..core.cell import (CELL_L, CELL_LBUILD, CELL_LO, CELL_RATE, CELL_SHEAR_RATE, CELL_TILT, CELL_TILT_BUILD,
                         cell_heights, flip_tilts, fractional_coordinates, minimum_image, shear_since_build)
from ..core.layout import (ACC_BOUNDARY_WORK, ACC_DISS_RELEASED, ACC_LOCAL_WORK, ACC_STRESS, ACC_VISC_WORK, ACC_WALL,
                           CTL_DT, CTL_RATE, CTL_RMAX, CTL_SHEAR, CTL_SKIN, CTL_VISC, ICTL_MODE, ICTL_N, ICTL_NPAIRS,
                           ICTL_NWCAND, ICTL_SORT, ICTL_STEP, LIMB_VISC_WORK, N_ACC0, N_CONTACT_LIMBS, OUT_CI, OUT_CJ,
                           OUT_PARTICLE, OUT_STATUS, OUT_STEPS, PAIR_INDEX, STATUS_DIVERGED)
from ..core.exact_sum import exact_add_all, exact_value, new_accumulator
from ..engine.loop import (AFTER_STRESS, NO_MORE_STRESS, STATUS_STRESS_READY, UNTIL_STRESS, WHOLE_STEPS, rebuild_due,
                           run_steps, wall_travel)
from ..engine.neighbours import refresh_constants
from .bisection import Bisection
from .row_transfer import (ROW_FLOATS, ROW_INTS, history_slices, is_wall_row, join_rows, pack_rows, pack_wall_rows,
                           split_wall_rows, store_capacity, take_rows, unpack_rows, unpack_rows_into, wall_of)
from .world import HaloUpdate, allgatherv, alltoallv, alltoallv_rows

BODY_FLOATS = 19   # pos 3, vel 3, omega 3, quat 4, radius, mass, inertia, pos_build 3
BODY_INTS = 3      # global id, material, owning rank
HALO_FLOATS = 13   # what a step refreshes in the ghosts: pos, vel, omega, quat
# running totals in acc that every rank steps alike, from sums completed over the ranks: the work of
# the cell and the walls, the viscous work, the dissipation of the rows that left the list
RANK_TOTALS = (ACC_BOUNDARY_WORK, ACC_VISC_WORK, ACC_DISS_RELEASED)


def check_decomposable(sim, nranks):
    """Refuse, before any step, what does not run decomposed yet (or cannot)."""
    if sim.ictl[ICTL_SORT]:
        raise ValueError("sort_particles=True does not run decomposed over MPI ranks: run on one rank, or without "
                         "it (the renumbering would break the global order of the spheres that the ranks' "
                         "neighbour builds rely on; see docs/parallel-mpi.md)")
    if sim.n < nranks:
        raise ValueError(f"{nranks} MPI ranks for {sim.n} spheres: the number of ranks must be at most the number "
                         "of spheres (every rank owns at least one)")


def build_cell(cell):
    """The cell as it was at the last neighbour rebuild: its lengths and tilts then (the cell
    deforms about its origin). A cell built untilted was built with the orthogonal geometry
    (core.cell.is_sheared was false: a shear rate moves the tilt in the step that sets it, so a
    build after it sees a tilt), so its shear rates are cleared too."""
    built = cell.copy()
    built[CELL_L:CELL_L + 3] = cell[CELL_LBUILD:CELL_LBUILD + 3]
    built[CELL_TILT:CELL_TILT + 3] = cell[CELL_TILT_BUILD:CELL_TILT_BUILD + 3]
    if not np.any(built[CELL_TILT:CELL_TILT + 3] != 0.0):
        built[CELL_SHEAR_RATE:CELL_SHEAR_RATE + 3] = 0.0
    return built


def cell_sizes(cell):
    """(sizes, tilted): what the bisection and the halo measure fractional distances by, the
    cell's lengths, or in a tilted cell its heights (core.cell.cell_heights)."""
    tilts = cell[CELL_TILT:CELL_TILT + 3]
    if np.any(tilts != 0.0):
        return cell_heights(cell[CELL_L:CELL_L + 3], tilts), True
    return cell[CELL_L:CELL_L + 3].copy(), False


def displacements_since_build(pos, pos_build, cell):
    """Each sphere's squared displacement relative to the cell's affine flow since the last
    rebuild (engine.integration.advance_particles' measure, from the cell after the step)."""
    lo = cell[CELL_LO:CELL_LO + 3]
    Lb = cell[CELL_LBUILD:CELL_LBUILD + 3]
    rel = pos_build - lo
    d = pos - (lo + rel * (cell[CELL_L:CELL_L + 3] / Lb))
    if np.any(cell[CELL_TILT:CELL_TILT + 3] != 0.0) or np.any(cell[CELL_SHEAR_RATE:CELL_SHEAR_RATE + 3] != 0.0):
        f01, f02, f12 = shear_since_build(cell)
        d[:, 0] -= rel[:, 1] * f01 + rel[:, 2] * f02
        d[:, 1] -= rel[:, 2] * f12
    return np.einsum("ij,ij->i", d, d)


def pack_bodies(sim, idx, gid, owner):
    """(floats (m, BODY_FLOATS), ints (m, BODY_INTS)) of bodies `idx` of `sim`."""
    floats = np.concatenate([sim.pos[idx], sim.vel[idx], sim.omega[idx], sim.quat[idx], sim.radius[idx, None],
                             sim.mass[idx, None], sim.inertia[idx, None], sim.pos_build[idx]], axis=1)
    ints = np.stack([gid[idx], sim.pmat[idx], np.broadcast_to(owner, idx.shape)], axis=1)
    return floats, ints.astype(np.int64)


class PhaseTimes:
    """Wall (time.perf_counter) and CPU (time.process_time) seconds of this rank summed per phase
    of decomposed runs, and how often each phase ran: what benchmarks/parallel_ranks.py --profile
    reports. CPU time leaves out the time a rank waits descheduled on a shared machine."""

    def __init__(self):
        self.sums = {}

    @staticmethod
    def now():
        return time.perf_counter(), time.process_time()

    def add(self, name, since):
        """Add the time from `since` (a now()) to now to phase `name`; returns now()."""
        t = self.now()
        s = self.sums.setdefault(name, [0.0, 0.0, 0])
        s[0] += t[0] - since[0]
        s[1] += t[1] - since[1]
        s[2] += 1
        return t


def _point_mask(ints, rows_mask):
    """Which packed history points belong to the rows of rows_mask."""
    return np.repeat(rows_mask, np.diff(history_slices(ints)))


def pack_owned_wall_rows(src, gid, owned):
    """(packed wall rows, their spheres' indices in src): row_transfer.pack_wall_rows of src's wall
    rows whose sphere is marked in owned (by src's sphere index), in src's row order."""
    nw = src.walls.shape[0]
    keys = src.wcand[:int(src.ictl[ICTL_NWCAND])] if nw else np.zeros(0, dtype=np.int64)
    spheres = keys // max(nw, 1)
    rows = np.flatnonzero(owned[spheres])
    return (pack_wall_rows(gid, src.wcand, max(nw, 1), src.wfs, src.wist, src.wcq, src.wrs, src.store, rows),
            spheres[rows])


class Subdomain:
    """This rank's spheres, ghosts and rows of the Simulation `sim` (which holds the whole state on
    every rank), ready to step."""

    def __init__(self, sim, comm, rebalance_every, phases=None):
        from mpi4py import MPI
        self.phases = phases if phases is not None else PhaseTimes()
        self.max_op = MPI.MAX
        self.sum_op = MPI.SUM
        # the step's contact sums (layout.LIMB_*): each rank's exact share, added as integers
        self.stress_sum = new_accumulator(N_CONTACT_LIMBS)
        self.viscous = bool(sim.ctl[CTL_VISC] > 0.0)
        self.n_spheres = sim.n
        # the walls' forces: each rank sums its wall rows exactly, the ranks' sums are added as integers
        # in the middle of each step, before the walls' work reads them (advance)
        self.n_walls = int(sim.walls.shape[0])
        self.wall_limbs = new_accumulator(3 * self.n_walls)
        self.wall_sum = new_accumulator(3 * self.n_walls)
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.meta = sim.state_dict()[1]
        self.periodic = np.array(sim.periodic, dtype=bool)
        self.halo = 2.0 * float(sim.ctl[CTL_RMAX]) + float(sim.ctl[CTL_SKIN])
        self.rebalance_every = int(rebalance_every)
        self.rebuilds_since_balance = 0
        # the damping work done before this decomposition; the ranks' work since is added to it
        self.base_work = float(sim.acc[ACC_LOCAL_WORK])
        self.local_work = 0.0
        # a deforming or sheared cell (prescribed strain rates, shear or the stress servo; also one
        # that did in the last step, whose work the servo closes with this step's stress sum): the
        # loop moves it on every rank alike, from the stress sum of all ranks, completed in the
        # middle of each step (advance)
        self.mode = sim.ictl[ICTL_MODE:ICTL_MODE + 3].copy()
        self.deforming = bool(np.any(self.mode != 0) or np.any(sim.ctl[CTL_RATE:CTL_RATE + 3] != 0.0)
                              or np.any(sim.ctl[CTL_SHEAR:CTL_SHEAR + 3] != 0.0)
                              or np.any(sim.cell[CELL_RATE:CELL_RATE + 3] != 0.0)
                              or np.any(sim.cell[CELL_SHEAR_RATE:CELL_SHEAR_RATE + 3] != 0.0))
        n = sim.n
        gid = np.arange(n, dtype=np.int64)
        built = build_cell(sim.cell)
        frac = fractional_coordinates(sim.pos_build, built, self.periodic)
        self.tree = self._bisect(frac, gid, built)
        owner = self.tree.owner(frac)
        near = self._halo_ranks(frac, built)
        mine = owner == self.rank
        local = np.flatnonzero(mine | near[:, self.rank])
        m = int(sim.ictl[ICTL_NPAIRS])
        rows = np.flatnonzero(mine[sim.pi[:m]] | mine[sim.pj[:m]])
        packed_rows = pack_rows(gid, sim.pi, sim.pj, sim.pfs, sim.pist, sim.pcq, sim.prs, sim.store, rows)
        # the wall rows of the owned spheres, which only their owner holds (in the serial order)
        packed_rows = join_rows(packed_rows, pack_owned_wall_rows(sim, gid, mine)[0])
        self._assemble(sim, *pack_bodies(sim, local, gid, owner[local]), *packed_rows, listed=True)
        # every rank steps the running totals as the serial loop does (from the same sums); the
        # stress sum of the last step is held by the ranks' accumulators together
        for k in RANK_TOTALS:
            self.local.acc[k] = sim.acc[k]
        self.local.rrel[:] = sim.rrel
        if self.rank == 0:
            self.local.stress_limbs[:] = sim.stress_limbs

    def _halo_ranks(self, frac, cell):
        """halo_ranks of fractional positions in the cell `cell` (its shape now)."""
        self.tree.lengths, tilted = cell_sizes(cell)
        return self.tree.halo_ranks(frac, self.periodic, self.halo, tilted)

    def _bisect(self, frac, gid, cell):
        tree = Bisection(frac, gid, self.size, cell_sizes(cell)[0])
        tree.check_thickness(self.halo)
        return tree

    # ------------------------------------------------------------ assembly
    def _assemble(self, src, bf, bi, ints, floats, pts, slips, listed):
        """The local state of bodies (bf, bi) and packed rows. listed: the rows are the serial
        list's rows among these bodies, in its order (a decomposition between rebuilds: a new local
        Simulation); else they are the rows to carry over into the local neighbour build (a
        rebuild: the arrays of the local Simulation are refilled, its pair arrays and history store
        kept when they are large enough)."""
        order = np.argsort(bi[:, 0], kind="stable")
        bf = bf[order]
        bi = bi[order]
        gid = np.ascontiguousarray(bi[:, 0])
        n = gid.size
        (ints, floats, pts, slips), wall_rows = split_wall_rows(ints, floats, pts, slips)
        li = np.minimum(np.searchsorted(gid, ints[:, 0]), n - 1)
        lj = np.minimum(np.searchsorted(gid, ints[:, 1]), n - 1)
        keep = (gid[li] == ints[:, 0]) & (gid[lj] == ints[:, 1])
        if listed and not keep.all():
            raise RuntimeError("a listed pair row names a sphere this rank does not hold (halo too small)")
        if not keep.all():
            pmask = _point_mask(ints, keep)
            ints, floats, pts, slips = ints[keep], floats[keep], pts[pmask], slips[pmask]
            li, lj = li[keep], lj[keep]
        m = ints.shape[0]
        cap = max(1024, 2 * m, 8 * n)
        nw = self.n_walls
        wall_keys = self._wall_keys(gid, wall_rows[0], nw, listed)
        # the walls' materials follow the spheres' (pmat[n + w])
        pmat = np.concatenate([bi[:, 1], src.pmat[src.pmat.shape[0] - nw:]])
        if listed:
            self.local = self._new_local(src, bf, bi, pmat, (ints, floats, pts, slips), li, lj, wall_rows, wall_keys,
                                         cap)
        else:
            L = self.local
            # the rows past m are cleared, as in fresh arrays: all of new arrays, else those the
            # last build wrote
            if L.pi.shape[0] < cap:
                L._alloc_pairs(cap + cap // 4)  # a margin: the local sphere count varies between rebuilds
                top = L.pi.shape[0]
            else:
                top = max(self.rows_written, m)
                L.pi[m:top] = 0
                L.pj[m:top] = 0
            # the wall rows past the listed ones are clear (the build and _keep_owned_wall_rows clear
            # what they drop): only the listed ones need clearing, unless the arrays are new
            wall_top = int(L.ictl[ICTL_NWCAND])
            if L.wfs.shape[0] < n * nw:
                L._alloc_wall_rows(n * nw + (n * nw) // 4)
                wall_top = 0
            store = L.store
            needed = store_capacity((ints, floats, pts, slips), wall_rows)
            if store.capacity < needed:
                L.store = store = HistoryStore(needed)
            unpack_rows_into((ints, floats, pts, slips), wall_rows, (L.pfs, L.pist, L.pcq, L.prs),
                             (L.wfs, L.wist, L.wcq, L.wrs),
                             store, top, wall_top)
            L.pi[:m] = li
            L.pj[:m] = lj
            L.wcand[:wall_keys.size] = wall_keys
            for name, a in (("pos", bf[:, 0:3]), ("vel", bf[:, 3:6]), ("omega", bf[:, 6:9]), ("quat", bf[:, 9:13]),
                            ("radius", bf[:, 13]), ("mass", bf[:, 14]), ("inertia", bf[:, 15]),
                            ("pos_build", bf[:, 16:19]), ("pmat", pmat)):
                setattr(L, name, np.ascontiguousarray(a))
            L.force = np.zeros((n, 3))
            L.torque = np.zeros((n, 3))
            L.pid = np.arange(n, dtype=np.int64)
            L.pstart = np.zeros(n + 1, dtype=np.int64)
            L.n = n
            L.ictl[ICTL_N] = n
            L.ictl[ICTL_NPAIRS] = m
            L.ictl[ICTL_NWCAND] = wall_keys.size
            L.acc[:] = 0.0
            L._rebuild()
        self.rows_written = max(m, int(self.local.ictl[ICTL_NPAIRS]))
        self.gid = gid
        self.owner = np.ascontiguousarray(bi[:, 2])
        self._prepare_steps()

    def _new_local(self, src, bf, bi, pmat, pairs, li, lj, wall_rows, wall_keys, cap):
        """A local Simulation of bodies (bf, bi) in global-id order, their listed pair rows and their
        wall rows (keys wall_keys)."""
        from ..engine.simulation import Simulation
        n = bf.shape[0]
        m = pairs[0].shape[0]
        nw = self.n_walls
        nrs = src.prs.shape[1]
        (pfs, pist, pcq, prs), (wfs, wist, wcq, wrs), store = unpack_rows(pairs, wall_rows, cap, n * nw, nrs)
        wcand = np.zeros(max(n * nw, 1), dtype=np.int64)
        wcand[:wall_keys.size] = wall_keys
        pi = np.zeros(cap, dtype=PAIR_INDEX)
        pj = np.zeros(cap, dtype=PAIR_INDEX)
        pi[:m] = li
        pj[:m] = lj
        lower = np.minimum(li, lj)
        if np.any(np.diff(lower) < 0):
            raise RuntimeError("the listed pair rows are not grouped by their lower sphere")
        pstart = np.searchsorted(lower, np.arange(n + 1)).astype(np.int64)
        ictl = src.ictl.copy()
        ictl[ICTL_N] = n
        ictl[ICTL_NPAIRS] = m
        ictl[ICTL_NWCAND] = wall_keys.size
        arrays = {"pos": bf[:, 0:3], "vel": bf[:, 3:6], "omega": bf[:, 6:9], "quat": bf[:, 9:13],
                  "radius": bf[:, 13], "mass": bf[:, 14], "inertia": bf[:, 15], "pos_build": bf[:, 16:19],
                  "force": np.zeros((n, 3)), "torque": np.zeros((n, 3)), "pmat": pmat,
                  "pid": np.arange(n, dtype=np.int64),
                  "prm": src.prm, "cell": src.cell, "ctl": src.ctl, "ictl": ictl, "walls": src.walls,
                  "wcand": wcand, "pstart": pstart, "pi": pi, "pj": pj, "pfs": pfs,
                  "pist": pist, "pcq": pcq, "wfs": wfs, "wist": wist, "wcq": wcq,
                  "acc": np.zeros(N_ACC0 + 3 * nw), "L0": src.L0, "materials": src.materials, "mu_pair": src.mu_pair,
                  "store_pts": store.pts, "store_nxt": store.nxt, "store_meta": store.meta}
        if nrs:
            arrays.update({"rolling_pairs": src.rolling_pairs, "prs": prs, "wrs": wrs, "rrel": src.rrel.copy()})
        return Simulation.from_state({k: np.ascontiguousarray(v) for k, v in arrays.items()}, self.meta)

    @staticmethod
    def _wall_keys(gid, wall_ints, nw, listed):
        """The local keys i * nw + w of packed wall rows (gid: the local spheres' global ids, sorted)."""
        li = np.minimum(np.searchsorted(gid, wall_ints[:, 0]), max(gid.size - 1, 0))
        if wall_ints.shape[0] and not np.array_equal(gid[li], wall_ints[:, 0]):
            raise RuntimeError("a wall row names a sphere this rank does not hold")
        keys = li * nw + wall_of(wall_ints)
        if listed and np.any(np.diff(keys) <= 0):
            raise RuntimeError("the listed wall rows are not in key order")
        return keys

    def _keep_owned_wall_rows(self, inv):
        """The wall rows of the owned spheres only, renumbered as the spheres (inv: old index -> new;
        the owned keep their order, so the keys stay in order); the ghosts' rows, fresh rows of the
        local build, are dropped: a ghost's wall contacts are its owner's."""
        L = self.local
        nw = self.n_walls
        nc = int(L.ictl[ICTL_NWCAND])
        if nw == 0 or nc == 0:
            return
        keys = L.wcand[:nc]
        i = keys // nw
        new_i = inv[i]
        keep = np.flatnonzero(new_i < self.n_own)
        dropped = np.setdiff1d(np.arange(nc), keep)
        if np.any(L.wist[dropped, S.I_HEAD] >= 0) or np.any(L.wfs[dropped] != 0.0):
            raise RuntimeError("a ghost sphere's wall row holds contact state")
        mw = keep.size
        L.wcand[:mw] = new_i[keep] * nw + (keys[keep] - i[keep] * nw)
        for name in ("wfs", "wist", "wcq", "wk", "wm", "wrs"):
            a = getattr(L, name)
            a[:mw] = a[keep]
        S.clear_rows(L.wfs, L.wist, L.wcq, mw, nc)
        L.wrs[mw:nc] = 0.0
        L.ictl[ICTL_NWCAND] = mw

    def _prepare_steps(self):
        """Renumber the local spheres owned first (the rows keep their order and orientation, so
        every sum over rows keeps its order), then the index lists and the halo exchange."""
        L = self.local
        n = L.n
        owned = self.owner == self.rank
        perm = np.concatenate([np.flatnonzero(owned), np.flatnonzero(~owned)])
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n)
        for name in ("pos", "vel", "omega", "quat", "force", "torque", "radius", "mass", "inertia", "pos_build"):
            setattr(L, name, np.ascontiguousarray(getattr(L, name)[perm]))
        L.pmat = np.ascontiguousarray(np.concatenate([L.pmat[:n][perm], L.pmat[n:]]))  # the walls' after the spheres
        m = int(L.ictl[ICTL_NPAIRS])
        L.pi[:m] = inv[L.pi[:m]]
        L.pj[:m] = inv[L.pj[:m]]
        L.pstart[:] = 0
        self.gid = self.gid[perm]
        self.owner = self.owner[perm]
        self.n_own = n_own = int(owned.sum())
        self._keep_owned_wall_rows(inv)
        # the time loop advances the owned spheres only (the first ictl[ICTL_N] rows)
        L.ictl[ICTL_N] = n_own
        # and never rebuilds by itself, not even for a tilt flip (engine.loop.rebuild_due with an
        # infinite skin): rebuilds are collective (_rebuild)
        self.step_ctl = L.ctl.copy()
        self.step_ctl[CTL_SKIN] = np.inf
        # each rank tells each owner which of its spheres it holds as ghosts (in global-id order),
        # so that the refresh sends exactly those, whatever the rounding of the halo test was
        recv = [np.flatnonzero(self.owner == r) if r != self.rank else np.zeros(0, dtype=np.int64)
                for r in range(self.size)]
        wanted, counts = alltoallv(self.comm, [self.gid[r] for r in recv], 1)
        local = np.searchsorted(self.gid[:n_own], wanted[:, 0])
        if not np.array_equal(self.gid[np.minimum(local, n_own - 1)], wanted[:, 0]):
            raise RuntimeError("a rank holds as a ghost a sphere its owner does not own")
        send = np.split(local, np.cumsum(counts)[:-1])
        self.halo_update = HaloUpdate(self.comm, send, recv, HALO_FLOATS)
        lower = np.where(self.gid[L.pi[:m]] < self.gid[L.pj[:m]], L.pi[:m], L.pj[:m])
        self.authoritative = lower < n_own

    # ------------------------------------------------------------ stepping
    def advance(self, nsteps, stops=None):
        """Up to nsteps steps of the decomposed run; returns (stop, diverged): the stop request
        honoured (its signal number, 0 for none) and whether some rank found the run diverged.

        Each step is the serial time loop (engine.loop.run_steps) on the local state: the serial
        kernels as the serial run compiles them (a kernel called from Python runs its own compiled
        copy, which may round differently from the copy inlined in run_steps). In a deforming cell
        the step is one call of it in two parts: the pair pass, then, with the stress sum completed
        from the ranks' exact accumulators (an integer sum: the serial run's exact sum, rounded
        once as there), the servo and the rest of the step. The decisions that end the steps early
        (a stop request on any rank, a divergence on any rank) travel in the step's one reduction,
        so every rank takes them at the same step."""
        reduced = np.zeros(3)
        n_own = self.n_own
        clock = self.phases
        for s in range(nsteps):
            t = clock.now()
            L = self.local
            L.store.ensure_free(int(L.ictl[ICTL_NPAIRS]) + n_own * self.n_walls + 1024)
            if self.deforming or self.n_walls or self.viscous:
                visc_work = L.acc[ACC_VISC_WORK]
                self._run_steps(UNTIL_STRESS)
                bad = int(L.out[OUT_STATUS]) != STATUS_STRESS_READY
                t = clock.add("loop", t)
                # every rank joins the sums, a diverged one too (the fault is told in the reduction below)
                if self.deforming or self.viscous:
                    self.comm.Allreduce(L.stress_limbs, self.stress_sum, op=self.sum_op)
                    for k in range(9):
                        L.acc[ACC_STRESS + k] = exact_value(self.stress_sum, k)
                    if self.viscous:
                        # the loop added this rank's share of the step's viscous work: the ranks' total
                        # in its place, rounded once as the serial loop rounds it
                        L.acc[ACC_VISC_WORK] = visc_work + exact_value(self.stress_sum, LIMB_VISC_WORK)
                self._sum_wall_forces()
                t = clock.add("stress_sum", t)
                if not bad:
                    self._run_steps(AFTER_STRESS)
                    bad = int(L.out[OUT_STATUS]) == STATUS_DIVERGED or int(L.out[OUT_STEPS]) != 1
            else:
                self._run_steps(WHOLE_STEPS)
                bad = int(L.out[OUT_STATUS]) == STATUS_DIVERGED or int(L.out[OUT_STEPS]) != 1
            # the ghosts' forces are partial sums, and their advance is replaced by their owners'
            L.force[n_own:] = 0.0
            L.torque[n_own:] = 0.0
            t = clock.add("loop", t)
            # the displacement since the rebuild (advance_particles' measure, relative to the cell's
            # stretch since the rebuild when it deforms), from the owned spheres, which the ghost
            # refresh does not touch: the reduction runs while the ghosts are refreshed
            if self.deforming:
                d2 = displacements_since_build(L.pos[:n_own], L.pos_build[:n_own], L.cell)
            else:
                d = L.pos[:n_own] - L.pos_build[:n_own]
                d2 = np.einsum("ij,ij->i", d, d)
            maxd2 = float(np.max(d2)) if n_own else 0.0
            flag = stops.flag if stops is not None else None
            mine = np.array([maxd2, 1.0 if bad else 0.0, float(flag or 0)])
            t = clock.add("displacement", t)
            pending = self.comm.Iallreduce(mine, reduced, op=self.max_op)
            self.halo_update(L.pos, L.vel, L.omega, L.quat)
            t = clock.add("halo", t)
            pending.Wait()
            t = clock.add("reduction", t)
            if reduced[1] > 0.0:
                self.fault = self._fault_report(bad)
                return 0, True
            stop = int(reduced[2])
            if rebuild_due(L.cell, L.ctl, reduced[0], wall_travel(L.walls, self.n_walls)):
                self._rebuild()
                clock.add("rebuild", t)
            if stop:
                return stop, False
        return 0, False

    def largest_overlap(self):
        """The largest overlap of the listed pair rows of all ranks, as
        Simulation.sphere_critical_time_step finds it in the serial list (each rank's rows of its own
        lower-id spheres, which together are the serial list, from the same positions; an exact
        maximum over the ranks)."""
        from mpi4py import MPI
        L = self.local
        m = int(L.ictl[ICTL_NPAIRS])
        rows = np.flatnonzero(self.authoritative[:m])
        i = L.pi[rows]
        j = L.pj[rows]
        d = minimum_image(L.pos[j] - L.pos[i], L.cell[CELL_L:CELL_L + 3], L.cell[CELL_TILT:CELL_TILT + 3],
                          self.periodic)
        delta = L.radius[i] + L.radius[j] - np.sqrt((d * d).sum(axis=1))
        largest = self.comm.allreduce(float(delta.max()) if delta.size else -np.inf, op=MPI.MAX)
        return largest if largest > -np.inf else 0.0

    def set_dt(self, dt):
        """The time step of the local steps (Simulation.adapt_dt changed it)."""
        self.local.ctl[CTL_DT] = dt
        self.step_ctl[CTL_DT] = dt

    def _run_steps(self, part):
        """One step of engine.loop.run_steps on the local state, or a part of one."""
        L = self.local
        st = L.store
        run_steps(1, L.pos, L.vel, L.omega, L.quat, L.force, L.torque, L.radius, L.mass, L.inertia, L.pmat, L.pid,
                  L.mtab, L.cell, self.step_ctl, L.ictl, L.walls, L.wcand, L.pstart, L.pi, L.pj, L.pfs, L.pist,
                  L.pcq, L.pk, L.pm, L.qi, L.qj, L.qfs, L.qist, L.qcq, L.wfs, L.wist, L.wcq, L.wk, L.wm,
                  L.pos_build, st.pts, st.nxt, st.meta, L.acc, L.out,
                  L.rolling_pairs.reshape(-1, RL.N_ROLL_PARAM), L.prs, L.wrs, L.rrel, NO_MORE_STRESS, L.stress_limbs,
                  part, self.wall_limbs)

    def _sum_wall_forces(self):
        """The walls' forces in acc: the ranks' exact sums (each over its own spheres' wall rows)
        added as integers and rounded once, the serial wall pass's values bit for bit."""
        if self.n_walls:
            self.comm.Allreduce(self.wall_limbs, self.wall_sum, op=self.sum_op)
            for r in range(3 * self.n_walls):
                self.local.acc[ACC_WALL + r] = exact_value(self.wall_sum, r)

    def _fault_report(self, here):
        """This rank's account of the divergence: [kind (0 none, 1 a contact, 2 a sphere), global
        ids of the contact's two spheres (or the sphere, -1), whether this rank owns the
        contact's lower-id sphere]."""
        L = self.local
        p, ci, cj = int(L.out[OUT_PARTICLE]), int(L.out[OUT_CI]), int(L.out[OUT_CJ])
        if not here:
            return np.array([0, -1, -1, 0], dtype=np.int64)
        if p >= 0:
            return np.array([2, self.gid[p], -1, 1], dtype=np.int64)
        if cj < 0:  # a wall contact (engine.loop: out[OUT_CJ] = -1 - wall)
            return np.array([3, self.gid[ci], -1 - cj, 1], dtype=np.int64)
        a, b = int(self.gid[ci]), int(self.gid[cj])
        lower = ci if a < b else cj
        return np.array([1, a, b, 1 if lower < self.n_own else 0], dtype=np.int64)

    def name_fault(self, sim):
        """Write into sim.out the divergence the serial run reports: the pair pass stops at its
        first faulty row in the serial order (rows grouped by their lower-id sphere, whose owner
        holds the whole group in that order), before the spheres are advanced; the integration
        stops at the first faulty sphere in id order."""
        reports, _ = allgatherv(self.comm, self.fault, 4)
        pairs = reports[reports[:, 0] == 1]
        sim.out[OUT_PARTICLE] = -1
        sim.out[OUT_CI] = -1
        sim.out[OUT_CJ] = -1
        if pairs.shape[0]:
            key = np.minimum(pairs[:, 1], pairs[:, 2]) * 2 + (1 - pairs[:, 3])
            first = pairs[np.argmin(key)]
            sim.out[OUT_CI] = first[1]
            sim.out[OUT_CJ] = first[2]
        elif np.any(reports[:, 0] == 3):
            # the wall pass runs after the pair pass, over its rows in key order (sphere, then wall)
            walls = reports[reports[:, 0] == 3]
            first = walls[np.lexsort((walls[:, 2], walls[:, 1]))[0]]
            sim.out[OUT_CI] = first[1]
            sim.out[OUT_CJ] = -1 - first[2]
        else:
            spheres = reports[reports[:, 0] == 2]
            sim.out[OUT_PARTICLE] = spheres[:, 1].min()
        sim.out[OUT_STATUS] = STATUS_DIVERGED

    # ------------------------------------------------------------ migration
    def _rebuild(self):
        """The neighbour rebuild of a decomposed run: new owners, bodies and rows sent to them,
        ghosts to the ranks whose halo they reach, the local list built with the rows carried."""
        L = self.local
        # the positions travel as they are (the local build wraps them once, as the serial build
        # does); their owners follow from the fractional coordinates in the cell the build will
        # use (its tilts flipped back within half a cell length: the same lattice of images)
        cell = L.cell.copy()
        flip_tilts(cell)
        frac = fractional_coordinates(L.pos, cell, self.periodic)
        own = np.arange(self.n_own)
        self.rebuilds_since_balance += 1
        if self.rebuilds_since_balance >= self.rebalance_every:
            all_frac, _ = allgatherv(self.comm, frac[own], 3)
            all_gid, _ = allgatherv(self.comm, self.gid[own], 1)
            self.tree = self._bisect(all_frac, all_gid[:, 0], cell)
            self.rebuilds_since_balance = 0
        new_owner = self.tree.owner(frac)
        dest = self._halo_ranks(frac[own], cell)
        dest[np.arange(own.size), new_owner[own]] = True
        bf, bi = pack_bodies(L, own, self.gid, new_owner[own])
        m = int(L.ictl[ICTL_NPAIRS])
        rows = np.flatnonzero(self.authoritative[:m])
        ints, floats, pts, slips = pack_rows(self.gid, L.pi, L.pj, L.pfs, L.pist, L.pcq, L.prs, L.store, rows)
        oi = new_owner[L.pi[rows]]
        oj = new_owner[L.pj[rows]]
        to = [(oi == r) | (oj == r) for r in range(self.size)]
        # every wall row goes with its sphere
        wall_rows, wall_spheres = pack_owned_wall_rows(L, self.gid, np.ones(L.n, dtype=bool))
        ints, floats, pts, slips = join_rows((ints, floats, pts, slips), wall_rows)
        to = [np.concatenate([t, new_owner[wall_spheres] == r]) for r, t in enumerate(to)]
        pmask = [_point_mask(ints, t) for t in to]
        c = self.comm
        rbf, rbi = alltoallv_rows(c, [bf[dest[:, r]] for r in range(self.size)],
                                  [bi[dest[:, r]] for r in range(self.size)])
        rrf, rri = alltoallv_rows(c, [floats[t] for t in to], [ints[t] for t in to])
        rpts, rslips = alltoallv_rows(c, [pts[p] for p in pmask], [slips[p, None] for p in pmask])
        self.local_work += float(L.acc[ACC_LOCAL_WORK])
        totals = L.acc[list(RANK_TOTALS)].copy()
        rolling_released = L.rrel.copy()
        wall_forces = L.acc[ACC_WALL:ACC_WALL + 3 * self.n_walls].copy()
        limbs = L.stress_limbs
        self._assemble(L, rbf, rbi, rri, rrf, rpts, rslips[:, 0], listed=False)
        L.acc[list(RANK_TOTALS)] = totals
        L.rrel[:] = rolling_released
        L.acc[ACC_WALL:ACC_WALL + 3 * self.n_walls] = wall_forces
        L.stress_limbs = limbs
        friction, rolling = self._released_dissipation(rri, rrf)
        L.acc[ACC_DISS_RELEASED] += friction
        if L.prs.shape[1]:
            L.rrel[0] += rolling

    def _released_dissipation(self, ints, floats):
        """(frictional dissipation, rolling energy) of the rows the rebuild dropped, as the serial
        build sums them (engine.neighbours.build_pairs: exactly, over every row that left the list;
        contact.rolling.released_energy of their rolling state). ints, floats: the
        rows this rank received (row_transfer). A dropped pair row is counted by the new owner of its
        lower-id sphere (it received the row once, from the row's last authority), a dropped wall row
        by the new owner of its sphere (its only holder); the ranks' exact sums are added as
        integers. The local build's own sum counts the rows it dropped that other ranks also
        held, and the rows between two ghosts, so it is not used."""
        L = self.local
        n_total = self.n_spheres
        nw = max(self.n_walls, 1)
        wall = is_wall_row(ints)
        lo = np.minimum(ints[:, 0], ints[:, 1])
        hi = np.maximum(ints[:, 0], ints[:, 1])
        # keys: a pair lo * n + hi, a wall row -1 - (sphere * n_walls + wall)
        keys = np.where(wall, -1 - (ints[:, 0] * nw + np.where(wall, wall_of(ints), 0)), lo * n_total + hi)
        mine = wall | np.isin(lo, self.gid[:self.n_own])
        m = int(L.ictl[ICTL_NPAIRS])
        a = self.gid[L.pi[:m]]
        b = self.gid[L.pj[:m]]
        nc = int(L.ictl[ICTL_NWCAND])
        spheres = L.wcand[:nc] // nw
        listed = np.concatenate([np.minimum(a, b) * n_total + np.maximum(a, b),
                                 -1 - (self.gid[spheres] * nw + L.wcand[:nc] - spheres * nw)])
        dropped = mine & ~np.isin(keys, listed)
        limbs = new_accumulator(2)
        exact_add_all(limbs, 0, np.ascontiguousarray(floats[dropped, S.F_DISS]))
        if floats.shape[1] > ROW_FLOATS:
            exact_add_all(limbs, 1, RL.released_energies(np.ascontiguousarray(floats[dropped, ROW_FLOATS:])))
        total = new_accumulator(2)
        self.comm.Allreduce(limbs, total, op=self.sum_op)
        return exact_value(total, 0), exact_value(total, 1)

    # ------------------------------------------------------------ gathering
    def gather_into(self, sim):
        """The whole state, in the serial layout, into `sim` on every rank (see the module
        docstring)."""
        L = self.local
        c = self.comm
        bf, bi = pack_bodies(L, np.arange(self.n_own), self.gid, self.rank)
        BF, _ = allgatherv(c, bf, BODY_FLOATS)
        BI, _ = allgatherv(c, bi, BODY_INTS)
        order = np.argsort(BI[:, 0], kind="stable")
        BF = BF[order]
        if not np.array_equal(BI[order, 0], np.arange(sim.n)):
            raise RuntimeError("the ranks' owned spheres are not each sphere exactly once")
        m = int(L.ictl[ICTL_NPAIRS])
        ints, floats, pts, slips = pack_rows(self.gid, L.pi, L.pj, L.pfs, L.pist, L.pcq, L.prs, L.store,
                                             np.flatnonzero(self.authoritative[:m]))
        ints, floats, pts, slips = join_rows((ints, floats, pts, slips),
                                             pack_owned_wall_rows(L, self.gid, np.ones(L.n, dtype=bool))[0])
        RI, _ = allgatherv(c, ints, ROW_INTS)
        RF, _ = allgatherv(c, floats, ROW_FLOATS + L.prs.shape[1])
        P, _ = allgatherv(c, pts, 4)
        SL, _ = allgatherv(c, slips, 1)
        sums, _ = allgatherv(c, np.array([[self.local_work + float(L.acc[ACC_LOCAL_WORK])]]), 1)
        acc = sim.acc.copy()
        acc[ACC_LOCAL_WORK] = self.base_work
        for r in range(self.size):  # rank order: the same sums on every rank, every time
            acc[ACC_LOCAL_WORK] += sums[r, 0]
        c.Allreduce(L.stress_limbs, self.stress_sum, op=self.sum_op)
        sim.stress_limbs = self.stress_sum.copy()
        for k in range(9):
            acc[ACC_STRESS + k] = exact_value(sim.stress_limbs, k)
        for k in RANK_TOTALS:
            acc[k] = L.acc[k]
        sim.rrel[:] = L.rrel
        nw = self.n_walls
        acc[ACC_WALL:ACC_WALL + 3 * nw] = L.acc[ACC_WALL:ACC_WALL + 3 * nw]
        (RI, RF, P, SL), wall_rows = split_wall_rows(RI, RF, P, SL[:, 0])
        # the wall rows in the serial key order, sphere (global id) then wall
        wall_keys = wall_rows[0][:, 0] * nw + wall_of(wall_rows[0])
        order = np.argsort(wall_keys, kind="stable")
        nrows = RI.shape[0]
        sim._alloc_pairs(max(sim.pi.shape[0], 2 * nrows))
        cap = sim.pi.shape[0]
        (sim.pfs, sim.pist, sim.pcq, sim.prs), (sim.wfs, sim.wist, sim.wcq, sim.wrs), sim.store = unpack_rows(
            (RI, RF, P, SL), take_rows(*wall_rows, order), cap, sim.n * nw, L.prs.shape[1])
        sim.wcand[:order.size] = wall_keys[order]
        # the serial list: its rows are grouped by their lower sphere in id order, and each group is
        # held whole, in the serial order, by the rank that owns that sphere (whose local build lists
        # the serial rows among its spheres in the serial order); a row's history stays where
        # unpack_rows laid it, its head travelling with the row
        lower = np.minimum(RI[:, 0], RI[:, 1])
        rows = np.argsort(lower, kind="stable")
        for a in (sim.pfs, sim.pist, sim.pcq, sim.prs):
            a[:nrows] = a[rows]
        sim.pi[:nrows] = RI[rows, 0]
        sim.pj[:nrows] = RI[rows, 1]
        sim.pstart = np.searchsorted(lower[rows], np.arange(sim.n + 1)).astype(np.int64)
        ictl = L.ictl.copy()
        ictl[ICTL_N] = sim.n
        ictl[ICTL_NPAIRS] = nrows
        ictl[ICTL_NWCAND] = order.size
        ictl[ICTL_MODE:ICTL_MODE + 3] = self.mode
        sim.ictl = ictl
        sim.pos = np.ascontiguousarray(BF[:, 0:3])
        sim.vel = np.ascontiguousarray(BF[:, 3:6])
        sim.omega = np.ascontiguousarray(BF[:, 6:9])
        sim.quat = np.ascontiguousarray(BF[:, 9:13])
        sim.pos_build = np.ascontiguousarray(BF[:, 16:19])
        sim.force = np.zeros((sim.n, 3))
        sim.torque = np.zeros((sim.n, 3))
        sim.cell = L.cell.copy()
        sim.walls = L.walls.copy()
        # the rows' constants, as the build sets them (and as a restart recomputes them)
        refresh_constants(sim.radius, sim.mass, sim.pmat, sim.mtab, sim.ctl, sim.ictl, sim.pi, sim.pj, sim.pk, sim.pm,
                          sim.wcand, sim.wk, sim.wm)
        sim.acc = acc


def run_decomposed(sim, comm, steps, callback, every, phase, stops=None, diverged=None):
    """Simulation.run of a sphere run over the ranks of `comm` (see the module docstring).

    stops: the run's engine.interrupts.StopRequests; a request seen by any rank stops every rank
    at the end of the same step, the whole state gathered, with RunStopped. diverged(): called on
    every rank, with the whole state gathered and sim.out naming the fault as the serial run
    names it, when some rank finds the run diverged (Simulation raises Diverged there, after
    on_diverge)."""
    from mpi4py import MPI
    from ..engine.interrupts import RunStopped
    check_decomposable(sim, comm.Get_size())
    t0 = time.perf_counter()
    # the phase times of the Simulation's decomposed runs, summed over its run calls
    phases = getattr(sim, "mpi_phases", None) or PhaseTimes()
    sim.mpi_phases = phases
    t = phases.now()
    sub = Subdomain(sim, comm, sim.mpi_rebalance_every, phases)
    phases.add("init", t)
    done = 0
    while done < steps:
        chunk = steps - done
        if every is not None:
            chunk = min(chunk, every - (int(sub.local.ictl[ICTL_STEP]) - phase) % every)
        start = int(sub.local.ictl[ICTL_STEP])
        if sim.adaptive_dt:
            # as the serial run adapts it, at the start of its chunks (cut at the interval's multiples)
            interval = sim.adaptive_dt_interval
            if start % interval == 0:
                sim.adapt_dt(sim.sphere_critical_time_step(sub.largest_overlap()))
                sub.set_dt(sim.dt)
            chunk = min(chunk, interval - start % interval)
        stop, fault = sub.advance(chunk, stops)
        if fault:
            # ranks that found no fault have finished the step: the serial run's step count is
            # that of the ranks that stopped inside it
            step = comm.allreduce(int(sub.local.ictl[ICTL_STEP]), op=MPI.MIN)
            sub.gather_into(sim)
            sim.ictl[ICTL_STEP] = step
            sub.name_fault(sim)
            sim.timing["run_s"] += time.perf_counter() - t0
            if diverged is not None:
                diverged()
            raise RuntimeError(f"run diverged at step {step} (MPI rank {sub.rank})")
        done += int(sub.local.ictl[ICTL_STEP]) - start
        t = phases.now()
        sub.gather_into(sim)
        phases.add("gather", t)
        if callback is not None and every is not None and (sim.step_count - phase) % every == 0:
            callback(sim)
        # a request that arrived outside the steps (while gathering, in the callback)
        flag = stops.flag if stops is not None else None
        stop = comm.allreduce(max(stop, int(flag or 0)), op=MPI.MAX)
        if stop:
            raise RunStopped(stop, sim.step_count)
    sim.timing["run_s"] += time.perf_counter() - t0
    sim.timing["steps"] += steps
