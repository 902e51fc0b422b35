"""The contact-law demonstration: the four tangential laws against the Mindlin–Deresiewicz closed forms.

Writes into a folder:
- `loops_constant_N.png`: loading–unloading–reloading at constant overlap for all four laws with the
  closed-form loop overlaid, and each law's error against it as the number of steps per branch grows;
- `md17_sequence.png`: Mindlin & Deresiewicz §17 proportional loading and reversal (Kuhn 2011 §4.1,
  his Figure 8): `jaeger` in four large steps, `md_incremental` in four large steps and subdivided;
- `history_length_xi.png`: the equivalent-history length of `jaeger` contacts along DEM-like paths for
  xi = 0, 0.1, 0.2 and the force error the approximation causes;
- `summary.json`: the numbers behind the plots (errors relative to mu N).

`DemLikeMovements` (the random DEM-like contact paths) is shared with `benchmarks/contact_kernel.py`.
"""

import json
import math
import time
from pathlib import Path

import numpy as np

from ..contact import TANGENTIAL_LAWS, ContactBatch, SingleContact, closed_forms
from ..contact import state as S
from ..contact.laws import contact_step
from ..io.plots import color_for, new_figure, save_figure

# A millimetre glass-like sphere pair: the material every part of the demonstration uses.
MATERIAL = dict(R1=1e-3, R2=1e-3, E=70e9, nu=0.25, mu=0.5)


class DemLikeMovements:
    """Per-step movements (total overlap, shift increment in the contact frame) of n contacts that
    behave like contacts in a quasi-static DEM assembly.

    Each contact's overlap rises slowly and falls back faster, in cycles of 100–500 steps around a
    mean overlap of 1e-4..1e-3 R*, with a little per-step rate noise: a step changes the overlap by
    a few thousandths of itself. The shift increment is a multiple r of kappa mu |d delta| along a
    direction that wanders (random walk, occasional reversals): contacts with r < 1 (most of them)
    load elastically, the others slip on every step. A few contacts have cycles deep enough to
    separate and touch again. Deterministic for a given seed.
    """

    def __init__(self, n, rstar, mu, kappa, seed=0, slipping_fraction=0.2, opening_fraction=0.03,
                 loading_share=0.8, turn=0.4):
        n = int(n)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        for name, value in (("rstar", rstar), ("kappa", kappa)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if not (math.isfinite(mu) and mu >= 0):
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        for name, value in (("slipping_fraction", slipping_fraction), ("opening_fraction", opening_fraction)):
            if not (0.0 <= value <= 1.0):
                raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
        if not (0.0 < loading_share < 1.0):
            raise ValueError(f"loading_share must lie in (0, 1), got {loading_share!r}")
        self.n = n
        self.rng = np.random.default_rng(seed)
        rng = self.rng
        self.mean_overlap = rstar * 10.0 ** rng.uniform(-4.0, -3.0, n)
        amplitude = rng.uniform(0.1, 0.5, n)
        opening = rng.random(n) < opening_fraction
        amplitude[opening] = rng.uniform(1.1, 1.5, opening.sum())
        self.low = self.mean_overlap * (1.0 - amplitude)
        self.high = self.mean_overlap * (1.0 + amplitude)
        self.period = rng.integers(100, 501, n)
        self.loading_share = loading_share
        self.phase = rng.integers(0, 100_000, n)
        slipping = rng.random(n) < slipping_fraction
        self.ratio = np.where(slipping, rng.uniform(1.2, 3.0, n), rng.uniform(0.05, 0.9, n))
        self.kappa_mu = kappa * mu
        self.angle = rng.uniform(0.0, 2.0 * math.pi, n)
        self.turn = float(turn)
        self.t = 0
        self.prev = self._overlap(0)

    def _overlap(self, t):
        # Sawtooth cycle: a long rise (loading_share of the period) then a short fall.
        frac = ((t + self.phase) % self.period) / self.period
        rising = frac < self.loading_share
        up = frac / self.loading_share
        down = (1.0 - frac) / (1.0 - self.loading_share)
        return self.low + (self.high - self.low) * np.where(rising, up, down)

    def next_step(self):
        """The next movement: (total overlap (n,), shift increment (n, 2)); <= 0 overlap means open."""
        self.t += 1
        rng = self.rng
        target = self._overlap(self.t)
        # Rate noise: a step is 0.5..1.5 times its nominal size, never reversing the trend.
        delta = self.prev + (target - self.prev) * rng.uniform(0.5, 1.5, self.n)
        step = np.abs(delta - self.prev)
        self.prev = delta
        self.angle += rng.normal(0.0, self.turn, self.n)
        flip = rng.random(self.n) < 0.002
        self.angle[flip] += math.pi
        size = self.ratio * rng.lognormal(0.0, 0.3, self.n) * self.kappa_mu * step
        ds = np.empty((self.n, 2))
        ds[:, 0] = size * np.cos(self.angle)
        ds[:, 1] = size * np.sin(self.angle)
        return delta, ds


def _rel_err(T, T_ref, mu, N):
    return float(np.max(np.abs(np.asarray(T) - np.asarray(T_ref)) / (mu * N)))


def _loop_path(s_amp, n_per_branch):
    """Shift targets of a loop 0 -> s_amp -> -s_amp -> s_amp with n steps per branch, and the branch of each."""
    n = int(n_per_branch)
    s = np.concatenate([np.linspace(0.0, s_amp, n + 1)[1:], np.linspace(s_amp, -s_amp, n + 1)[1:],
                        np.linspace(-s_amp, s_amp, n + 1)[1:]])
    branch = np.repeat([0, 1, 2], n)
    return s, branch


def _loop_closed_form(s, branch, s_amp, N, delta, mu, kappa):
    T1 = float(closed_forms.monotonic(s_amp, N, delta, mu, kappa))
    T2 = float(closed_forms.from_turning_point(-s_amp, s_amp, T1, -1, N, delta, mu, kappa))
    return np.where(branch == 0, closed_forms.monotonic(s, N, delta, mu, kappa),
                    np.where(branch == 1, closed_forms.from_turning_point(s, s_amp, T1, -1, N, delta, mu, kappa),
                             closed_forms.from_turning_point(s, -s_amp, T2, +1, N, delta, mu, kappa)))


def run_loop(law, delta, s_amp, n_per_branch, **material):
    """Press to `delta` at zero shift, then run the loop along x at constant overlap.
    Returns (s, T (k, 2), N, branch) at the ends of the tangential steps."""
    c = SingleContact(law=law, **material)
    N, _ = c.step(delta, (0.0, 0.0))
    s, branch = _loop_path(s_amp, n_per_branch)
    T = np.array([c.step(delta, (si, 0.0))[1] for si in s])
    return s, T, N, branch


def loop_error(law, delta, s_amp, n_per_branch, **material):
    """Max |T - T_closed_form| / (mu N) over the step ends of the constant-N loop."""
    c0 = SingleContact(law=law, **material)
    mu, kappa = c0.prm[S.P_MU], c0.prm[S.P_KAPPA]
    s, T, N, branch = run_loop(law, delta, s_amp, n_per_branch, **material)
    ref = _loop_closed_form(s, branch, s_amp, N, delta, mu, kappa)
    return max(_rel_err(T[:, 0], ref, mu, N), _rel_err(T[:, 1], 0.0, mu, N))


def constant_n_loops(out, announce=print, delta=1e-6, s_amp_frac=0.7, n_plot=60,
                     step_counts=(1, 2, 5, 10, 30, 100, 300)):
    """Plot (a) and its numbers."""
    material = MATERIAL
    prm = SingleContact(law="linear", **material).prm
    mu, kappa = prm[S.P_MU], prm[S.P_KAPPA]
    s_slide = mu * kappa * delta
    s_amp = s_amp_frac * s_slide
    fig, axes = new_figure(1, 2, width=12.0, height=5.0)
    ax, ax_err = axes
    s_cf, T_cf = closed_forms.loop(s_amp, 1.0, delta, mu, kappa, n=300)  # T per unit N
    ax.plot(s_cf / s_slide, T_cf / mu, color="black", lw=3, alpha=0.35, label="Mindlin–Deresiewicz (closed form)")
    errors = {}
    convergence = {}
    for k, law in enumerate(TANGENTIAL_LAWS):
        s, T, N, branch = run_loop(law, delta, s_amp, n_plot, **material)
        path_s = np.concatenate([[0.0], s])
        path_T = np.concatenate([[0.0], T[:, 0]])
        # linear (at Mindlin's stiffness) and mindlin coincide at constant N: dash one of them.
        ax.plot(path_s / s_slide, path_T / (mu * N), color=color_for(k), lw=1.2,
                ls="--" if law == "linear" else "-", label=f"{law} ({n_plot} steps/branch)")
        ref = _loop_closed_form(s, branch, s_amp, N, delta, mu, kappa)
        errors[law] = max(_rel_err(T[:, 0], ref, mu, N), _rel_err(T[:, 1], 0.0, mu, N))
        convergence[law] = {int(n): loop_error(law, delta, s_amp, n, **material) for n in step_counts}
        ax_err.loglog(list(convergence[law]), [max(e, 1e-17) for e in convergence[law].values()], "o-",
                      color=color_for(k), label=law)
        announce(f"  loop {law:15s} max error {errors[law]:.3e} mu N at {n_plot} steps/branch")
    # jaeger in one step per branch: the three turning points only.
    s1, T1, N1, branch1 = run_loop("jaeger", delta, s_amp, 1, **material)
    ax.plot(np.concatenate([[0.0], s1]) / s_slide, np.concatenate([[0.0], T1[:, 0]]) / (mu * N1), "s",
            color=color_for(3), ms=8, mfc="none", label="jaeger, one step per branch")
    one_step = max(_rel_err(T1[:, 0], _loop_closed_form(s1, branch1, s_amp, N1, delta, mu, kappa), mu, N1),
                   _rel_err(T1[:, 1], 0.0, mu, N1))
    ax.set_xlabel(r"shift $s/(\mu\kappa\delta)$")
    ax.set_ylabel(r"tangential force $T/(\mu N)$")
    ax.set_title(f"Constant normal force: loop to $\\pm${s_amp_frac:g} of the sliding shift")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax_err.set_xlabel("steps per branch")
    ax_err.set_ylabel(r"max $|T - T_{MD}|/(\mu N)$ at step ends")
    ax_err.set_title("Error against the closed form (floored at 1e-17)")
    ax_err.grid(alpha=0.3, which="both")
    ax_err.legend(fontsize=8)
    path = save_figure(fig, Path(out) / "loops_constant_N.png", announce=announce)
    return path, {
        "overlap": delta, "shift_amplitude_over_sliding_shift": s_amp_frac, "steps_per_branch": n_plot,
        "max_error_rel_muN": errors, "jaeger_one_step_per_branch_error_rel_muN": one_step,
        "error_vs_steps_per_branch": {law: {str(n): e for n, e in conv.items()} for law, conv in convergence.items()},
    }


def _md17_path(prm, N0, N1, c, n_sub):
    """Targets (delta, s) of Kuhn's four large steps (ends at N0 + dN/2, N1, N1 - dN/2, N0 of the
    force-controlled solution), each split into n_sub straight sub-steps; and which targets are large-step ends."""
    mu, kappa, c_N = prm[S.P_MU], prm[S.P_KAPPA], prm[S.P_CN]
    dN = N1 - N0
    ends_N = [(N0 + 0.5 * dN, False), (N1, False), (N1 - 0.5 * dN, True), (N0, True)]
    pts = [closed_forms.md_proportional_cycle(N, N0, N1, c, mu, kappa, c_N, unloading=u) for N, u in ends_N]
    d0 = (N0 / c_N) ** (2.0 / 3.0)
    prev = (d0, 0.0)
    delta, s, is_end = [], [], []
    for d_end, s_end, _ in pts:
        for k in range(1, n_sub + 1):
            f = k / n_sub
            delta.append(prev[0] + f * (float(d_end) - prev[0]))
            s.append(prev[1] + f * (float(s_end) - prev[1]))
            is_end.append(k == n_sub)
        prev = (float(d_end), float(s_end))
    T_ref = np.array([float(T) for _, _, T in pts])
    N_ref = np.array([N for N, _ in ends_N])
    return d0, np.array(delta), np.array(s), np.array(is_end), T_ref, N_ref


def _md17_run(law, material, N0, N1, c, n_sub):
    contact = SingleContact(law=law, **material)
    d0, delta, s, is_end, T_ref, N_ref = _md17_path(contact.prm, N0, N1, c, n_sub)
    contact.step(d0, (0.0, 0.0))
    out = np.array([[*contact.step(d, (si, 0.0))[1]] for d, si in zip(delta, s)])
    mu = contact.prm[S.P_MU]
    ends = out[is_end]
    err = float(np.max(np.hypot(ends[:, 0] - T_ref, ends[:, 1]) / (mu * N_ref)))
    return s, out[:, 0], is_end, err


def md17_sequence(out, announce=print, delta0=1e-6, c=0.8, load_frac=0.95, subdivisions=(1, 3, 10, 30, 100)):
    """Plot (b): Mindlin & Deresiewicz section 17 / Kuhn section 4.1 in four large steps."""
    if not hasattr(closed_forms, "md_proportional_cycle"):
        return None, {"skipped": "closed_forms.md_proportional_cycle (section 17 closed form) not available"}
    material = MATERIAL
    prm = SingleContact(law="jaeger", **material).prm
    mu, kappa, c_N = prm[S.P_MU], prm[S.P_KAPPA], prm[S.P_CN]
    N0 = c_N * delta0 ** 1.5
    N1 = load_frac * c * N0 / (c - mu)    # T1 = c (N1 - N0) is load_frac of the way to mu N1
    NN = np.linspace(N0, N1, 300)
    _, s_load, T_load = closed_forms.md_proportional_cycle(NN, N0, N1, c, mu, kappa, c_N)
    _, s_unl, T_unl = closed_forms.md_proportional_cycle(NN[::-1], N0, N1, c, mu, kappa, c_N, unloading=True)
    s_cf = np.concatenate([s_load, s_unl])
    T_cf = np.concatenate([T_load, T_unl])
    scale_s = mu * kappa * delta0
    scale_T = mu * N0
    fig, axes = new_figure(1, 2, width=12.0, height=5.0, sharey=True)
    for ax in axes:
        ax.plot(s_cf / scale_s, T_cf / scale_T, color="black", lw=3, alpha=0.35,
                label="Mindlin–Deresiewicz §17 (closed form)")
    errors = {}
    s4, T4, end4, errors["jaeger"] = _md17_run("jaeger", material, N0, N1, c, 1)
    axes[0].plot(np.concatenate([[0.0], s4]) / scale_s, np.concatenate([[0.0], T4]) / scale_T, "o:",
                 color=color_for(3), label="jaeger, four large steps (step ends)")
    axes[0].set_title("jaeger (exact for any step)")
    md_conv = {}
    for k, n_sub in enumerate(subdivisions):
        s_m, T_m, end_m, md_conv[n_sub] = _md17_run("md_incremental", material, N0, N1, c, n_sub)
        if n_sub in (1, 10, 100):
            style = "o:" if n_sub == 1 else "-"
            axes[1].plot(np.concatenate([[0.0], s_m]) / scale_s, np.concatenate([[0.0], T_m]) / scale_T, style,
                         color=color_for(k), label=f"md_incremental, {n_sub} sub-step(s) per large step")
        announce(f"  md17 md_incremental, {n_sub:3d} sub-steps per large step: error {md_conv[n_sub]:.3e} mu N")
    errors["md_incremental"] = md_conv[1]
    for law in ("linear", "mindlin"):
        errors[law] = _md17_run(law, material, N0, N1, c, 1)[3]
    axes[1].set_title("md_incremental (incremental stiffness)")
    for ax in axes:
        ax.set_xlabel(r"shift $s/(\mu\kappa\delta_0)$")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    axes[0].set_ylabel(r"tangential force $T/(\mu N_0)$")
    fig.suptitle(f"Proportional loading dT/dN = {c:g} from preload N0, then reversal (four large steps)")
    path = save_figure(fig, Path(out) / "md17_sequence.png", announce=announce)
    announce(f"  md17 jaeger, four large steps: error {errors['jaeger']:.3e} mu N")
    return path, {
        "c": c, "N0": N0, "N1": N1, "T1_over_muN1": c * (N1 - N0) / (mu * N1),
        "max_error_rel_muN_four_large_steps": errors,
        "md_incremental_error_vs_substeps": {str(k): v for k, v in md_conv.items()},
    }


def step_one_by_one(batch, delta, ds):
    """`batch.step(delta, ds)` through the single-contact kernel (laws.contact_step), which the loops
    above have compiled: the batched kernel would be one more compilation of every law (over a minute
    on a fresh machine) for a hundred contacts. With energy counted (contact_params' default) the
    batched kernel runs the same contact_step on each contact in turn."""
    st = batch.store
    st.ensure_free(batch.n)  # as ContactBatch.step: as many free points as contacts, more when they run out
    for c in range(batch.n):
        if st.n_free < 1:
            st.ensure_free(batch.n - c)
        contact_step(batch.law, batch.prm, batch.fs, batch.ist, c, delta[c], ds[c, 0], ds[c, 1], st.pts, st.nxt,
                     st.meta)
    return batch.normal_force, batch.tangential_force


def history_lengths_xi(out, announce=print, n_contacts=100, n_steps=1000, xis=(0.0, 0.1, 0.2), seed=7):
    """Plot (c): jaeger history lengths along DEM-like paths for several xi, and the force error of xi > 0."""
    material = MATERIAL
    probe = ContactBatch("jaeger", 1, **material).prm
    mu, kappa, rstar = probe[S.P_MU], probe[S.P_KAPPA], probe[S.P_RSTAR]
    batches = {xi: ContactBatch("jaeger", n_contacts, **material, xi=xi) for xi in xis}
    moves = DemLikeMovements(n_contacts, rstar, mu, kappa, seed=seed)
    mean_len = {xi: np.zeros(n_steps) for xi in xis}
    one_len = {xi: np.zeros(n_steps, dtype=int) for xi in xis}
    errors = {xi: [] for xi in xis}
    for t in range(n_steps):
        delta, ds = moves.next_step()
        T_exact = None
        for xi in xis:
            N, T = step_one_by_one(batches[xi], delta, ds)
            lengths = batches[xi].history_lengths()
            mean_len[xi][t] = lengths.mean()
            one_len[xi][t] = lengths[0]
            if xi == 0.0:
                T_exact = T.copy()
            elif T_exact is not None:
                touching = N > 0
                if touching.any():
                    errors[xi].append(np.hypot(*(T[touching] - T_exact[touching]).T) / (mu * N[touching]))
    fig, axes = new_figure(1, 2, width=12.0, height=4.5)
    steps = np.arange(1, n_steps + 1)
    for k, xi in enumerate(xis):
        axes[0].plot(steps, mean_len[xi], color=color_for(k), label=f"xi = {xi:g} (mean of {n_contacts})")
        axes[1].plot(steps, one_len[xi], color=color_for(k), label=f"xi = {xi:g}")
    axes[0].set_title("Mean equivalent-history length, DEM-like paths")
    axes[1].set_title("History length of one contact")
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylabel("history points")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    path = save_figure(fig, Path(out) / "history_length_xi.png", announce=announce)
    summary = {}
    for xi in xis:
        half = n_steps // 2  # past the start-up transient
        summary[f"{xi:g}"] = {"mean_length": float(mean_len[xi][half:].mean()),
                              "max_length_one_contact": int(one_len[xi].max())}
        line = f"  xi = {xi:g}: mean history length {summary[f'{xi:g}']['mean_length']:.1f}"
        if xi != 0.0:
            err = np.concatenate(errors[xi])
            stats = {"max": float(err.max()), "p99": float(np.percentile(err, 99)),
                     "median": float(np.median(err))}
            summary[f"{xi:g}"]["force_error_vs_exact_rel_muN"] = stats
            line += (f", force error vs xi = 0: max {stats['max']:.2e}, 99th percentile {stats['p99']:.2e}, "
                     f"median {stats['median']:.2e} mu N")
        announce(line)
    return path, {"contacts": n_contacts, "steps": n_steps, "xi": summary}


def run_demo(out, announce=print):
    """Run the whole contact demonstration into folder `out`; returns the summary dict."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summary = {"material": MATERIAL}
    announce("[1/3] constant-N loading-unloading-reloading loops, four laws")
    _, summary["constant_N_loop"] = constant_n_loops(out, announce)
    announce("[2/3] Mindlin-Deresiewicz section 17 proportional loading and reversal")
    _, summary["md17"] = md17_sequence(out, announce)
    if "skipped" in summary["md17"]:
        announce(f"  skipped: {summary['md17']['skipped']}")
    announce("[3/3] jaeger history lengths along DEM-like paths, xi = 0, 0.1, 0.2")
    _, summary["history_xi"] = history_lengths_xi(out, announce)
    # Each law's worst error against a closed form, over the runs plotted (loop at the plotted
    # step size, jaeger also in one step per branch; section 17 in four large steps).
    overall = dict(summary["constant_N_loop"]["max_error_rel_muN"])
    overall["jaeger"] = max(overall["jaeger"], summary["constant_N_loop"]["jaeger_one_step_per_branch_error_rel_muN"])
    for law, err in summary["md17"].get("max_error_rel_muN_four_large_steps", {}).items():
        overall[law] = max(overall[law], err)
    summary["max_error_rel_muN"] = overall
    summary["runtime_s"] = time.perf_counter() - t0
    path = out / "summary.json"
    path.write_text(json.dumps(summary, indent=2))
    announce(f"wrote {path}")
    return summary
