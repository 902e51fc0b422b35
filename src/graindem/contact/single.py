"""`SingleContact`: one sphere–sphere contact driven by total overlap and total shift.

It runs exactly the kernels the engine runs (the batched dispatcher on a batch of one), so a law
has one implementation. Conventions (shared/notes/contact-mechanics.md): `overlap` is the total
approach of the centres, `shift` the total tangential displacement (2-vector, contact frame) since
first touch; N >= 0 compressive; T parallel to the shift in elastic loading.
"""

import math

import numpy as np

from . import state as S
from .hertz import contact_params
from .energy import normal_energy
from .laws import HISTORY_LAWS, contact_step, law_id, tangential_energy
from .traction import tractions
from .store import PT_DELTA, PT_N, PT_PX, PT_PY, HistoryStore, link_slip


class SingleContact:
    """One contact between two spheres of the same material.

    Parameters: law (one of TANGENTIAL_LAWS), R1, R2 (m, R2 = inf for a plane), E (Pa), nu, mu,
    xi (Jaeger approximation, 0 = exact), kt_linear (linear law only: constant tangential
    stiffness in N/m; 0 = Mindlin's k_t at the current overlap).
    """

    def __init__(self, law="jaeger", R1=1e-3, R2=1e-3, E=70e9, nu=0.25, mu=0.5, xi=0.0, kt_linear=0.0):
        self.law_name = law
        self.law = law_id(law)
        self.prm = contact_params(R1, R2, E, nu, mu, xi, kt_linear)
        self.fs = np.zeros((1, S.N_FSTATE))
        self.ist = np.full((1, S.N_ISTATE), 0, dtype=np.int64)
        self.ist[0, S.I_HEAD] = -1
        self.store = HistoryStore(64)
        self.s_prev = np.zeros(2)

    def step(self, overlap, shift):
        """Move (straight line) to total `overlap` and total `shift`; returns (N, T) with T a 2-vector."""
        overlap = float(overlap)
        if not math.isfinite(overlap):
            raise ValueError(f"overlap must be a finite number, got {overlap!r}")
        shift = np.asarray(shift, dtype=np.float64)
        if shift.shape != (2,):
            raise ValueError(f"shift must be a 2-vector (total tangential shift in the contact plane), got shape {shift.shape}")
        if not np.all(np.isfinite(shift)):
            raise ValueError(f"shift must be finite, got {shift!r}")
        ds = shift - self.s_prev
        self.s_prev = shift.copy()
        self.store.ensure_free(1)
        st = self.store
        contact_step(self.law, self.prm, self.fs, self.ist, 0, overlap, ds[0], ds[1], st.pts, st.nxt, st.meta)
        return float(self.fs[0, S.F_N]), self.fs[0, S.F_TX:S.F_TY + 1].copy()

    def separate(self):
        """Open the contact now (the same as a step to overlap 0, keeping the shift); energy still
        stored is counted as dissipated, as in any opening step."""
        st = self.store
        contact_step(self.law, self.prm, self.fs, self.ist, 0, 0.0, 0.0, 0.0, st.pts, st.nxt, st.meta)

    @property
    def N(self):
        return float(self.fs[0, S.F_N])

    @property
    def T(self):
        return self.fs[0, S.F_TX:S.F_TY + 1].copy()

    @property
    def kind(self):
        """What the last step was: 'separated', 'elastic', 'partial_slip' or 'gross_sliding'."""
        return ("separated", "elastic", "partial_slip", "gross_sliding")[int(self.fs[0, S.F_KIND])]

    def normal_energy(self):
        """Hertz elastic energy 2/5 N delta (J)."""
        return float(normal_energy(self.prm, self.fs[0, S.F_DELTA]))

    def tangential_energy(self):
        """Stored tangential elastic energy (J), as defined per law in `graindem.contact.energy`."""
        st = self.store
        return float(tangential_energy(self.law, self.prm, self.fs, self.ist, 0, st.pts, st.nxt))

    def elastic_energy(self):
        """Stored elastic energy of the contact, normal + tangential (J)."""
        return self.normal_energy() + self.tangential_energy()

    @property
    def dissipation(self):
        """Cumulative frictional dissipation since creation (J), kept across separations."""
        return float(self.fs[0, S.F_DISS])

    @property
    def tangential_work(self):
        """Cumulative tangential work, integral of T . ds over all movements (J)."""
        return float(self.fs[0, S.F_WORK])

    @property
    def work(self):
        """Cumulative work of the contact forces on the movement, normal + tangential (J). The
        normal part is Hertz-conservative: it equals the current normal energy, whatever the path."""
        return self.tangential_work + self.normal_energy()

    def traction(self, r):
        """Jaeger only: tractions of the current state at radii r (0 <= r <= a): a
        `traction.TractionState` with the shear traction q (m, 2) (Mindlin's sign, integrating to T),
        the normal pressure p (m,), the mask `slip` of radii at the friction limit and the slip
        annuli `slip_zones` [(r_in, r_out)], from the equivalent load history (Kuhn 2011, eq. 21)."""
        if self.law_name not in HISTORY_LAWS:
            raise ValueError(f"traction() is defined for the laws {HISTORY_LAWS}, not {self.law_name!r}")
        h = self.history_points()
        if h["delta"].size == 0:
            r = np.asarray(r, dtype=np.float64)
            if np.any(r != 0.0):
                raise ValueError("r must lie in [0, a]; the contact is open (a = 0)")
        return tractions(self.prm, r, h["delta"], h["p"], h["slip"])

    def history_points(self):
        """Jaeger only: the equivalent load history bottom-up, one row per stored point i >= 1:
        dict of arrays delta, N, p (k, 2), slip (k,), T (k, 2)."""
        if self.law_name not in HISTORY_LAWS:
            raise ValueError(f"history() is defined for the laws {HISTORY_LAWS}, not {self.law_name!r}")
        st = self.store
        idx = st.chain(self.ist[0, S.I_HEAD])
        k = len(idx)
        delta = np.array([st.pts[i, PT_DELTA] for i in idx])
        N = np.array([st.pts[i, PT_N] for i in idx])
        p = np.array([[st.pts[i, PT_PX], st.pts[i, PT_PY]] for i in idx]).reshape(k, 2)
        slip = np.array([bool(link_slip(st.nxt, i)) for i in idx], dtype=bool)
        # Forces at the points from the top down: T_{i-1} = T_i - p_i (N_i - N_{i-1}).
        T = np.zeros((k, 2))
        if k:
            T[-1] = self.fs[0, S.F_TX:S.F_TY + 1]
            for j in range(k - 1, 0, -1):
                T[j - 1] = T[j] - p[j] * (N[j] - N[j - 1])
        return {"delta": delta, "N": N, "p": p, "slip": slip, "T": T}

    def history(self):
        """Jaeger only: the equivalent load history as a (k, 3) array of (N, Tx, Ty) points
        (the origin, point 0, is implicit and not listed)."""
        h = self.history_points()
        return np.column_stack([h["N"], h["T"]]) if len(h["N"]) else np.zeros((0, 3))
