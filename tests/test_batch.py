"""The batched kernel against SingleContact, the shared history store under growth and reuse, and
smoke runs of the contact-kernel benchmark and of `graindem demo`.

Reference for the batch: SingleContact driven by the same total overlaps and shifts (it computes
its shift increments as differences of totals; the batch is given exactly those differences).
Both end in the same law kernels, but compiled in different callers, so floating-point contraction
may differ: the issue's tolerance, 1e-12 relative (T relative to mu N), leaves room for that and
for nothing else.
"""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from graindem.contact import TANGENTIAL_LAWS, ContactBatch, HistoryStore, SingleContact
from graindem.contact import state as S
from graindem.contact.store import M_CAPACITY, M_FREE_HEAD, M_LIVE

MATERIAL = dict(R1=1e-3, R2=2e-3, E=70e9, nu=0.25, mu=0.4)
REPO = Path(__file__).resolve().parents[1]


def random_paths(n, steps, rng, kappa_mu, open_close=True):
    """Total overlaps (steps, n) and total shifts (steps, n, 2) of n independent random 2D paths.

    Mixed sizes on purpose: DEM-sized steps, steps as large as the overlap, elastic and slipping
    ratios |ds| / (kappa mu |d delta|) from 0.01 to 10, and the degenerate movements of the issue's
    contract (zero tangential movement, exact retrace of the previous movement, repeated point).
    With open_close, every contact separates (overlap <= 0) and touches again a few times.
    """
    d0 = 1e-6
    delta = np.empty((steps, n))
    shift = np.empty((steps, n, 2))
    d = d0 * rng.uniform(0.5, 1.5, n)
    s = np.zeros((n, 2))
    prev_d, prev_s = d.copy(), s.copy()
    for t in range(steps):
        size = d0 * 10.0 ** rng.uniform(-3.0, 0.0, n)
        dd = size * rng.normal(0.2, 1.0, n)
        new_d = d + dd
        if open_close:
            # Pull back up contacts that have been open, so they close again.
            new_d = np.where(d <= 0, d0 * rng.uniform(0.05, 1.0, n), new_d)
            opens = rng.random(n) < 0.02
            new_d[opens] = -d0 * rng.uniform(0.0, 0.1, opens.sum())
        else:
            new_d = np.maximum(new_d, d0 * 0.05)
        new_d = np.minimum(new_d, 5 * d0)
        ratio = 10.0 ** rng.uniform(-2.0, 1.0, n)
        mag = ratio * kappa_mu * np.maximum(np.abs(new_d - d), 1e-3 * d0)
        ang = rng.uniform(0, 2 * math.pi, n)
        new_s = s + mag[:, None] * np.column_stack([np.cos(ang), np.sin(ang)])
        kind = rng.random(n)
        zero_t = kind < 0.05
        new_s[zero_t] = s[zero_t]
        retrace = (kind >= 0.05) & (kind < 0.10)
        new_d[retrace], new_s[retrace] = prev_d[retrace], prev_s[retrace]
        repeat = (kind >= 0.10) & (kind < 0.13)
        new_d[repeat], new_s[repeat] = d[repeat], s[repeat]
        prev_d, prev_s = d, s
        d, s = new_d, new_s
        delta[t], shift[t] = d, s
    return delta, shift


def walk(nxt, i):
    out = []
    while i >= 0:
        out.append(int(i))
        i = int(nxt[i]) >> 1
    return out


def check_store(store, ist):
    """Every point of the store is on exactly one contact's stack or on the free list; counts agree."""
    cap = int(store.meta[M_CAPACITY])
    free = walk(store.nxt, int(store.meta[M_FREE_HEAD]))
    stacks = [walk(store.nxt, int(h)) for h in ist[:, S.I_HEAD]]
    for stack, length in zip(stacks, ist[:, S.I_LEN]):
        assert len(stack) == length
    owned = [i for st in stacks for i in st]
    assert int(store.meta[M_LIVE]) == len(owned) == int(ist[:, S.I_LEN].sum())
    assert len(free) == cap - len(owned)
    assert sorted(owned + free) == list(range(cap))


@pytest.mark.parametrize("law", TANGENTIAL_LAWS)
def test_batch_equals_single_contacts(law):
    rng = np.random.default_rng(12345 + TANGENTIAL_LAWS.index(law))
    n, steps = 16, 150
    batch = ContactBatch(law, n, store=HistoryStore(1), **MATERIAL)
    mu, kappa = batch.prm[S.P_MU], batch.prm[S.P_KAPPA]
    delta, shift = random_paths(n, steps, rng, kappa * mu)
    singles = [SingleContact(law=law, **MATERIAL) for _ in range(n)]
    s_prev = np.zeros((n, 2))
    capacities = set()
    for t in range(steps):
        ds = shift[t] - s_prev   # the increments SingleContact computes from the same totals
        s_prev = shift[t]
        N_b, T_b = batch.step(delta[t], ds)
        capacities.add(batch.store.capacity)
        for c, single in enumerate(singles):
            N_s, T_s = single.step(delta[t, c], shift[t, c])
            assert abs(N_b[c] - N_s) <= 1e-12 * N_s, (t, c)
            scale = mu * N_s
            assert np.all(np.abs(T_b[c] - T_s) <= 1e-12 * scale), (t, c, T_b[c], T_s)
            if N_s == 0.0:
                assert np.all(T_b[c] == 0.0)
            assert batch.ist[c, S.I_LEN] == single.ist[0, S.I_LEN], (t, c)
        if law == "jaeger" and t % 20 == 19:
            check_store(batch.store, batch.ist)
    assert np.all(np.abs(T_b) <= mu * N_b[:, None] * (1 + 1e-12) + 0.0)
    if law == "jaeger":
        # The store started with one point: it must have grown during the run, several times.
        assert len(capacities) >= 3, capacities
        check_store(batch.store, batch.ist)
        # Stored points equal, point by point, those of the single contacts.
        for c, single in enumerate(singles):
            mine = walk(batch.store.nxt, batch.ist[c, S.I_HEAD])
            theirs = walk(single.store.nxt, single.ist[0, S.I_HEAD])
            assert len(mine) == len(theirs)
            for i, j in zip(mine, theirs):
                np.testing.assert_allclose(batch.store.pts[i], single.store.pts[j], rtol=1e-12, atol=0)
                assert (batch.store.nxt[i] & 1) == (single.store.nxt[j] & 1)


@pytest.mark.parametrize("xi", [0.0, 0.2])
def test_batch_equals_single_contacts_long_jaeger_histories(xi):
    """DEM-like paths (the benchmark's) build histories of tens of points; the batch still matches."""
    from graindem.demo.contact import DemLikeMovements

    n, steps = 12, 400
    batch = ContactBatch("jaeger", n, store=HistoryStore(1), xi=xi, **MATERIAL)
    prm = batch.prm
    moves = DemLikeMovements(n, prm[S.P_RSTAR], prm[S.P_MU], prm[S.P_KAPPA], seed=5)
    singles = [SingleContact(law="jaeger", xi=xi, **MATERIAL) for _ in range(n)]
    shift = np.zeros((n, 2))
    longest = 0
    for _ in range(steps):
        delta, ds = moves.next_step()
        new_shift = shift + ds
        N_b, T_b = batch.step(delta, new_shift - shift)
        shift = new_shift
        for c, single in enumerate(singles):
            N_s, T_s = single.step(delta[c], shift[c])
            assert abs(N_b[c] - N_s) <= 1e-12 * N_s
            assert np.all(np.abs(T_b[c] - T_s) <= 1e-12 * prm[S.P_MU] * N_s)
            assert batch.ist[c, S.I_LEN] == single.ist[0, S.I_LEN]
        longest = max(longest, int(batch.ist[:, S.I_LEN].max()))
    assert longest >= 30, longest
    check_store(batch.store, batch.ist)


def test_store_growth_does_not_change_results():
    """A store that has to grow many times during the run gives bit-identical forces and histories to
    one that never grows (same kernel, so equality is exact)."""
    rng = np.random.default_rng(99)
    n, steps = 40, 100
    tiny = ContactBatch("jaeger", n, store=HistoryStore(1), **MATERIAL)
    big = ContactBatch("jaeger", n, store=HistoryStore(200_000), **MATERIAL)
    mu, kappa = tiny.prm[S.P_MU], tiny.prm[S.P_KAPPA]
    delta, shift = random_paths(n, steps, rng, kappa * mu, open_close=False)
    ds_all = np.diff(np.concatenate([np.zeros((1, n, 2)), shift]), axis=0)
    grew_while_live = 0
    for t in range(steps):
        cap, live = tiny.store.capacity, tiny.store.n_live
        tiny.step(delta[t], ds_all[t])
        big.step(delta[t], ds_all[t])
        grew_while_live += tiny.store.capacity != cap and live > 0
        np.testing.assert_array_equal(tiny.fs, big.fs)
        np.testing.assert_array_equal(tiny.ist[:, S.I_LEN], big.ist[:, S.I_LEN])
    assert grew_while_live >= 2
    assert big.store.capacity == 200_000
    check_store(tiny.store, tiny.ist)
    for c in range(n):
        a = walk(tiny.store.nxt, tiny.ist[c, S.I_HEAD])
        b = walk(big.store.nxt, big.ist[c, S.I_HEAD])
        np.testing.assert_array_equal(tiny.store.pts[a], big.store.pts[b])
        np.testing.assert_array_equal(tiny.store.nxt[a] & 1, big.store.nxt[b] & 1)


def test_opening_and_closing_contacts_reuse_store_points():
    """Contacts that open release their points and later contacts reuse them: after each step the
    live count equals the sum of history lengths, and the store stops growing although far more
    points are pushed over the run than it holds."""
    rng = np.random.default_rng(2024)
    n, steps = 50, 400
    batch = ContactBatch("jaeger", n, store=HistoryStore(1), **MATERIAL)
    mu, kappa = batch.prm[S.P_MU], batch.prm[S.P_KAPPA]
    phase = rng.integers(0, 40, n)
    amp = rng.uniform(0.5, 1.5, n) * 1e-6
    pushed_at_least = 0
    prev_len = np.zeros(n, dtype=np.int64)
    cap_mid = None
    for t in range(steps):
        # Cycles of 40 steps: ~30 steps of elastic loading (one point each), then open for the rest.
        k = (t + phase) % 40
        delta = np.where(k < 30, amp * (k + 1) / 30, -1e-9)
        ang = rng.uniform(0, 2 * math.pi, n)
        ds = 0.5 * kappa * mu * (amp / 30)[:, None] * np.column_stack([np.cos(ang), np.sin(ang)])
        batch.step(delta, ds)
        lengths = batch.ist[:, S.I_LEN]
        assert batch.store.n_live == lengths.sum()
        assert np.all(lengths[delta <= 0] == 0)
        assert np.all(batch.fs[delta <= 0, S.F_TX:S.F_TY + 1] == 0.0)
        pushed_at_least += int(np.maximum(lengths - prev_len, 0).sum())
        prev_len = lengths.copy()
        if t == 100:
            cap_mid = batch.store.capacity
    check_store(batch.store, batch.ist)
    assert batch.store.capacity == cap_mid
    assert pushed_at_least > 5 * cap_mid, (pushed_at_least, cap_mid)


def _load_benchmark():
    spec = importlib.util.spec_from_file_location("contact_kernel_bench", REPO / "benchmarks" / "contact_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_contact_kernel_benchmark_quick(tmp_path):
    bench = _load_benchmark()
    out = tmp_path / "bench.json"
    bench.main(["--quick", "--json", str(out)])
    data = json.loads(out.read_text())
    assert set(data["laws"]) == set(TANGENTIAL_LAWS)
    for rec in data["laws"].values():
        assert rec["updates_per_s"] > 0 and math.isfinite(rec["updates_per_s"])
        assert rec["bytes_per_contact"] >= (S.N_FSTATE + S.N_ISTATE) * 8
    assert data["ratio_jaeger_mindlin"] > 0 and math.isfinite(data["ratio_jaeger_mindlin"])
    # Only jaeger keeps a history: its contacts must carry more bytes than the history-free laws.
    assert data["laws"]["jaeger"]["mean_history_length"] > 1.0
    assert data["laws"]["mindlin"]["mean_history_length"] == 0.0
    # The headline is the recorded biaxial trace without energy accounting; the synthetic mix and
    # the energy-on figures are reported beside it.
    assert data["mix"] == "trace"
    assert set(data["laws_with_energy"]) == set(TANGENTIAL_LAWS)
    assert set(data["synthetic"]["laws"]) == set(TANGENTIAL_LAWS)
    assert set(data["synthetic"]["jaeger_xi"]) == {"0.1", "0.2"}
    # The trace's histories are short (~5 points), the synthetic ones long (~80 at steady state).
    assert data["laws"]["jaeger"]["mean_history_length"] < data["synthetic"]["laws"]["jaeger"]["mean_history_length"]
    for key in ("ratio_jaeger_mindlin_with_energy", "ratio_jaeger_mindlin_harness_subtracted", "harness_ns_per_update"):
        assert data[key] > 0 and math.isfinite(data[key]), key


def test_demo_writes_plots_and_summary(tmp_path):
    from graindem.cli import main

    # The contact-law part only: the biaxial part is covered by the engine's own tests.
    assert main(["demo", "--skip-biaxial", "--out", str(tmp_path / "demo")]) == 0
    out = tmp_path / "demo" / "contact"
    for name in ("loops_constant_N.png", "md17_sequence.png", "history_length_xi.png", "summary.json",
                 "traction_nonsimple.png", "traction_energy.json"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    # jaeger against both closed forms (constant-N loop, section 17 in four large steps)
    assert summary["md17"]["max_error_rel_muN_four_large_steps"]["jaeger"] < 1e-9
    assert summary["max_error_rel_muN"]["jaeger"] < 1e-9
    # The md_incremental law converges to the closed form as the steps are refined.
    conv = summary["constant_N_loop"]["error_vs_steps_per_branch"]["md_incremental"]
    assert conv[max(conv, key=int)] < conv[min(conv, key=int)]
