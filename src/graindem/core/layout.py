"""Layouts of the flat arrays the sphere engine's kernels share (a struct of arrays per concept).

All arrays are plain float64/int64 numpy arrays, except the pair rows' particle indices and the
pair passes' row list (PAIR_INDEX, int32):

particles (N rows): pos, vel, omega, force, torque (N, 3); quat (N, 4); radius, mass, inertia (N,);
    pid (N,) the particle's index in the order it was added (rows are renumbered in cell order
    at rebuilds when ictl[ICTL_SORT] is set); pmat (N + n_walls,) the material of each particle,
    then of each wall. `vel` is the velocity relative to the homogeneous (affine) flow of a
    deforming periodic cell.
pairs: half neighbour list grouped by the lower index (CSR offsets `pstart`, N + 1), pair rows
    pi, pj (cap,) PAIR_INDEX, contact state pfs (cap, N_FSTATE), pist (cap, N_ISTATE), frame
    quaternion pcq (cap, 4); a second set of the same shape (q*) is scratch for rebuilds. A row keeps
    the orientation it was made with (normal from pi to pj), so after a renumbering pi may be the
    higher index. Per-row constants pk (cap, N_PK) and material-pair rows pm (cap,) are set at every
    rebuild.
walls: rows q < ictl[ICTL_NWCAND] of wfs, wist, wcq, wk, wm are the candidate wall contacts: the
    (particle, wall) pairs within r + skin of the wall at the last rebuild, keyed wcand[q] =
    i * n_walls + w (ascending at each rebuild); their state carries over from one rebuild to the
    next by key. The arrays are allocated for n * n_walls rows, of which only the front is used.
    walls (n_walls, N_WALL): one row per plane wall, columns WALL_* below.
mtab (n_materials^2, state.N_PARAM): the contact record of each material pair (row m1 * n + m2).
cell (float64, core.cell.CELL_*): box origin, lengths, tilts, rates.
ctl (float64, CTL_*): time step, gravity, damping, skin and the servo of the periodic cell.
ictl (int64, ICTL_*): law id, counts, periodic flags, servo modes.
acc (float64, ACC_*): per-step sums (stress), wall forces and running totals.
out (int64, OUT_*): status and where a divergence was found.

Contact parameters: the laws read a state.P_* record. The force loops keep one scratch record
(N_PRM long: the record plus the material pair it holds), copy a material pair's row of mtab into
it only when the pair changes from one contact to the next, and set the two entries that depend on
the radii (R*, 4/3 E* sqrt(R*)) from the row's constants, computed once per rebuild rather than
every step (with the viscous coefficient and the divergence overlap).
"""

import numpy as np

from ..contact import state as S


# ctl
CTL_DT = 0
CTL_G = 1            # 3: gravity
CTL_LOCAL_DAMP = 4   # Cundall's local non-viscous damping coefficient (0..1)
CTL_VISC = 5         # viscous normal damping coefficient alpha (from the restitution coefficient)
CTL_SKIN = 6
CTL_DIVERGE_OVERLAP = 7   # an overlap above this fraction of the smaller radius means divergence
CTL_TARGET = 8       # 3: servo target stress per axis (Pa, compression positive)
CTL_GAIN = 11        # 3: servo gain (1/s per relative stress error)
CTL_MAXRATE = 14     # 3: servo strain rate limit (1/s)
CTL_RATE = 17        # 3: prescribed strain rates of strain-controlled axes
CTL_RMAX = 20        # largest radius
CTL_INTEGRAL = 21    # 3: servo integral gain per step (fraction of the proportional gain)
CTL_SHEAR = 24       # 3: prescribed velocity gradients L_xy, L_xz, L_yz (1/s) of a shearing cell
N_CTL = 27

# ictl
ICTL_LAW = 0
ICTL_N = 1
ICTL_NWALLS = 2
ICTL_PERIODIC = 3    # 3 flags
ICTL_MODE = 6        # 3: 0 = strain rate prescribed, 1 = stress servo (periodic axes only)
ICTL_NPAIRS = 9
ICTL_NREBUILDS = 10
ICTL_STEP = 11       # steps done since the start of the simulation
ICTL_NWCAND = 12     # number of (particle, wall) rows near enough to be checked until the next rebuild
ICTL_ENERGY = 13     # 1: count tangential work and frictional dissipation per contact (laws.contact_step)
ICTL_NMAT = 14       # number of materials (the material-pair table mtab has NMAT^2 rows)
ICTL_SORT = 15       # 1: renumber the particles in cell order at every neighbour rebuild
ICTL_COMPACT_EVERY = 16  # steps between compactions of the history store (0: COMPACT_EVERY, < 0: never)
N_ICTL = 17

# default steps between compactions of the history store (compact_store)
COMPACT_EVERY = 100

# dtype of the pair rows' particle indices (pi, pj and their scratch qi, qj) and of the pair passes'
# list of rows (act): half the bytes of int64 on the arrays every pair pass streams through.
# One dtype only: each other dtype would be another full compile of every kernel that takes them.
# Simulation keeps the particle count and the pair capacity within PAIR_INDEX_MAX.
PAIR_INDEX = np.int32
PAIR_INDEX_MAX = np.iinfo(PAIR_INDEX).max

# per-row constants of a pair or wall row (pk, wk), set when the neighbour list is built
PK_RSTAR = 0         # effective radius R*
PK_CN = 1            # Hertz coefficient 4/3 E* sqrt(R*)
PK_DAMP = 2          # viscous normal damping: F_d = -PK_DAMP delta^(1/4) v_n (alpha sqrt(m* c_N))
PK_LIMIT = 3         # an overlap at or above this means the run diverged
N_PK = 4

# the force loops' scratch parameter record: a state.P_* record plus the material pair it holds
PRM_PAIR = S.N_PARAM
N_PRM = S.N_PARAM + 1

# acc
ACC_STRESS = 0       # 9: sum over contacts of f (x) l at the last step (row-major), / V = stress
ACC_DISS_RELEASED = 9   # frictional dissipation carried by contacts that left the neighbour list
ACC_VISC_WORK = 10   # energy removed by viscous normal damping
ACC_LOCAL_WORK = 11  # energy removed by local damping
ACC_BOUNDARY_WORK = 12   # work done on the particles by the deforming cell and the moving walls
ACC_WALL = 13        # 3 * n_walls: total force exerted by the particles on each wall
N_ACC0 = 13

# rows of the exact accumulator of a step's contact sums (core.exact_sum; Simulation.stress_limbs):
# each rounded once to a double, so that its bits do not depend on the order or the split of the rows
LIMB_STRESS = 0      # 9: the stress sum, row-major (rounded into acc[ACC_STRESS:+9])
LIMB_VISC_WORK = 9   # the step's viscous work (rounded, then added to acc[ACC_VISC_WORK])
N_CONTACT_LIMBS = 10

# out
OUT_STATUS = 0
OUT_STEPS = 1
OUT_PARTICLE = 2
OUT_CI = 3
OUT_CJ = 4
N_OUT = 5

STATUS_DONE = 0
STATUS_STORE_LOW = 1
STATUS_PAIRS_FULL = 2
STATUS_DIVERGED = 3

# walls: a wall row (the columns of the float64 (n_walls, N_WALL) array every body kind's loop reads;
# boundaries.walls makes the rows and holds the servo)
WALL_POINT = 0        # 3: a point of the plane now
WALL_NORMAL = 3       # 3: the inward unit normal m
WALL_VEL = 6          # 3: the velocity of the step in hand (set by the servo on a servo wall)
WALL_BUILD = 9        # 3: the point at the last neighbour rebuild
WALL_MODE = 12        # WALL_PRESCRIBED or WALL_SERVO
WALL_TARGET = 13      # servo: the target normal force P* (N) the grains press the wall with
WALL_GAIN = 14        # servo: speed per unit force error, m/(N s)
WALL_MAX_SPEED = 15   # servo: the largest normal speed (m/s)
WALL_TANGENT_VEL = 16  # 3, servo: the prescribed tangential velocity
N_WALL = 19
# the rows of checkpoints written before the servo columns: point, normal, velocity, build point
N_WALL_PRESCRIBED = 12

WALL_PRESCRIBED = 0
WALL_SERVO = 1
