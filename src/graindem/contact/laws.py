"""The registry of tangential laws and the per-contact dispatcher every caller goes through.

A law is a module with one numba kernel

    step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta) -> None

that advances contact `c` from its stored state (rows `fs[c]`, `ist[c]`, see `state`) to the new
total overlap `delta` > 0 along a straight movement whose tangential shift increment, in the
contact frame, is (dsx, dsy). It writes F_DELTA, F_N, F_TX, F_TY and F_KIND of the row and keeps
whatever else it needs in its private slots and, for history laws, in the shared HistoryStore
(`pts, nxt, meta`). It may push at most one history point per call, and only when the store has a
free point (callers guarantee one). Separation is handled here, once, for all laws.
"""

import math

from .._jit import njit
from . import jaeger, linear, md_incremental, mindlin
from . import state as S
from .store import release

LINEAR = 0
MINDLIN = 1
MD_INCREMENTAL = 2
JAEGER = 3

TANGENTIAL_LAWS = ("linear", "mindlin", "md_incremental", "jaeger")
LAW_IDS = {name: i for i, name in enumerate(TANGENTIAL_LAWS)}
HISTORY_LAWS = ("jaeger",)


def law_id(name):
    """The integer id of a law name, with a clear error for an unknown name."""
    try:
        return LAW_IDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"law must be one of {', '.join(TANGENTIAL_LAWS)}; got {name!r}") from None


@njit
def separate(fs, ist, c, pts, nxt, meta):
    """The contact opened: release its history and zero its state (energy counters are kept)."""
    release(pts, nxt, meta, ist[c, S.I_HEAD])
    ist[c, S.I_HEAD] = -1
    ist[c, S.I_LEN] = 0
    diss = fs[c, S.F_DISS]
    work = fs[c, S.F_WORK]
    for k in range(S.N_FSTATE):
        fs[c, k] = 0.0
    fs[c, S.F_DISS] = diss
    fs[c, S.F_WORK] = work
    fs[c, S.F_KIND] = S.KIND_SEPARATED


@njit
def contact_step(law, prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta):
    """Advance one contact by one movement with the law `law` (an id)."""
    if not (delta > 0.0) or not math.isfinite(delta):
        separate(fs, ist, c, pts, nxt, meta)
        return
    if law == JAEGER:
        jaeger.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    elif law == MINDLIN:
        mindlin.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    elif law == MD_INCREMENTAL:
        md_incremental.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)
    else:
        linear.step(prm, fs, ist, c, delta, dsx, dsy, pts, nxt, meta)


@njit
def advance_contacts(law, prm, fs, ist, delta, ds, pts, nxt, meta, start):
    """Batched kernel: contacts start..n-1 by one movement each (delta[c], ds[c, 0:2]).

    Returns the index of the first contact not advanced: n when all were, earlier when the
    store ran out of free points (the caller grows the store and calls again from there).
    """
    n = delta.shape[0]
    for c in range(start, n):
        if meta[0] < 0:
            return c
        contact_step(law, prm, fs, ist, c, delta[c], ds[c, 0], ds[c, 1], pts, nxt, meta)
    return n
