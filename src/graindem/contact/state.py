"""Layout of the per-contact state shared by all tangential laws.

Every law keeps its per-contact data in one row of a float64 array `fs` (width N_FSTATE) and one
row of an int64 array `ist` (width N_ISTATE), so the engine can allocate, carry over at neighbour
rebuilds, checkpoint and restore contacts without knowing which law runs. All vectors are stored
in the contact frame: a rigid rotation of the pair turns the frame quaternion, never the state.

Slots below F_LAW0 have the same meaning for every law; slots F_LAW0..N_FSTATE-1 are private to
the law that owns the row (each law module documents its own use of them).
"""

import numpy as np


# --- parameter record: one float64 array of length N_PARAM per interacting pair type ---
P_CN = 0      # Hertz coefficient: N = P_CN * delta**1.5  (= 4/3 E* sqrt(R*))
P_RSTAR = 1   # effective radius R* = R1 R2 / (R1 + R2)
P_KNC = 2     # normal stiffness per contact radius: k_n = P_KNC * a  (= 2 E*)
P_KTC = 3     # Mindlin initial tangential stiffness per contact radius: k_t = P_KTC * a (= 4G/(2-nu))
P_KAPPA = 4   # kappa = k_n / k_t = (2 - nu) / (2 (1 - nu))
P_MU = 5      # friction coefficient
P_XI = 6      # Jaeger xi approximation (0 = exact)
P_KTLIN = 7   # linear law: constant tangential stiffness (N/m); 0 = use the current Mindlin k_t
P_ESTAR = 8   # E* = E / (2 (1 - nu^2))
P_G = 9       # shear modulus G = E / (2 (1 + nu))
P_NU = 10     # Poisson's ratio
P_ENERGY = 11  # 1: laws.contact_step counts tangential work and dissipation (F_WORK, F_DISS); 0: skips it
N_PARAM = 12

# --- per-contact float state ---
F_DELTA = 0   # overlap at the end of the last step (0: fresh or separated)
F_N = 1       # normal force at the end of the last step
F_TX = 2      # tangential force (contact frame, Mindlin's sign convention)
F_TY = 3
F_KIND = 4    # what the last step was: KIND_* below
F_DISS = 5    # cumulative frictional dissipation (J)
F_WORK = 6    # cumulative work done on the contact by the movement (J)
F_LAW0 = 7    # first law-private slot
N_FSTATE = 16

# --- per-contact integer state ---
I_HEAD = 0    # top point of the contact's history in the HistoryStore (-1: none)
I_LEN = 1     # number of stored history points (point 0, the origin, is implicit)
N_ISTATE = 2

# --- kinds of step, reported in F_KIND ---
KIND_SEPARATED = 0
KIND_ELASTIC = 1
KIND_PARTIAL_SLIP = 2
KIND_GROSS_SLIDING = 3


def fresh_rows(capacity):
    """(fs, ist, cq) of `capacity` rows, each a fresh contact: no state, no history (head -1), the
    identity frame. Allocated zeroed, so rows never written stay out of the resident memory."""
    fs = np.zeros((capacity, N_FSTATE))
    ist = np.zeros((capacity, N_ISTATE), dtype=np.int64)
    ist[:, I_HEAD] = -1
    cq = np.zeros((capacity, 4))
    cq[:, 0] = 1.0
    return fs, ist, cq


def clear_rows(fs, ist, cq, start, stop):
    """Rows start .. stop - 1 of (fs, ist, cq) made fresh contacts, as fresh_rows makes them."""
    fs[start:stop] = 0.0
    ist[start:stop] = 0
    ist[start:stop, I_HEAD] = -1
    cq[start:stop] = (1.0, 0.0, 0.0, 0.0)
