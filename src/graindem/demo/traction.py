"""The traction and energy demonstration (issue 7): what the Jäger equivalent history knows beyond the force.

`write_traction_demo(out_dir)` writes:
- `traction_nonsimple.png`: the shear traction after the nine-movement nonsimple sequence of Kuhn's
  Figure 4 (shared/notes/jaeger-algorithm.md, case 8.1) — the seven superposed Cattaneo–Mindlin
  functions of the final equivalent history, their sum q(r), the friction limit +-mu p(r), and the
  stick and slip zones (his Figure 4d);
- `traction_md17.png`: Mindlin & Deresiewicz section 17 (Kuhn section 4.1) in four large movements:
  the Jäger traction at each step end against the closed-form distribution;
- `traction_energy.json`: the numbers behind them (resultants, largest deviations) and the
  dissipation of a closed Mindlin–Deresiewicz loop against its closed-form area.
"""

import json
import math
from pathlib import Path

import numpy as np

from ..contact import SingleContact, closed_forms
from ..contact import state as S
from ..contact.traction import hertz_pressure, pressure_coefficient
from ..io.plots import color_for, new_figure, save_figure

# Units of the notes' hand-checked cases: N = delta^1.5, kappa = 1, R* = 1.
UNIT = dict(R1=2.0, R2=2.0, E=1.5, nu=0.0, mu=0.5)
NINE_MOVEMENTS = [(1.0, 0.2), (2.0, 0.5), (3.0, 0.6), (3.5, 1.2), (4.0, 1.55), (5.0, 1.75), (6.0, 1.85),
                  (6.5, 2.3), (6.5, 1.9)]
MATERIAL = dict(R1=1e-3, R2=1e-3, E=70e9, nu=0.25)


def _root(a, r):
    return np.sqrt(np.maximum(a * a - r * r, 0.0))


def _md17_traction(prm, mu, c, N0, N1, N, unloading, r):
    """Closed-form section-17 traction (Johnson 1985, section 7.2, written with radii; see
    tests/test_traction.py for the derivation)."""
    cn = prm[S.P_CN]
    rstar = prm[S.P_RSTAR]
    k = pressure_coefficient(prm)

    def radius(force):
        return math.sqrt(rstar * (force / cn) ** (2.0 / 3.0))

    a = radius(N)
    N_b1 = N1 - c / mu * (N1 - N0)
    if not unloading:
        return mu * k * (_root(a, r) - _root(radius(N - c / mu * (N - N0)), r))
    N_star = (c * (N - N0) + mu * N + mu * N_b1) / (2.0 * mu)
    return mu * k * (2.0 * _root(radius(N_star), r) - _root(a, r) - _root(radius(N_b1), r))


def nonsimple_figure(out_dir, announce):
    sc = SingleContact("jaeger", **UNIT)
    for d, s in NINE_MOVEMENTS:
        sc.step(d, [s, 0.0])
    prm = sc.prm
    mu = prm[S.P_MU]
    h = sc.history_points()
    a = math.sqrt(prm[S.P_RSTAR] * h["delta"][-1])
    r = np.linspace(0.0, a, 2001)
    tr = sc.traction(r)
    fig, ax = new_figure(width=7.5, height=4.8)
    lower = np.zeros_like(r)
    for j, (d, p) in enumerate(zip(h["delta"], h["p"][:, 0])):
        upper = hertz_pressure(prm, r, d)
        ax.plot(r / a, p * (upper - lower), lw=0.8, color=color_for(j), alpha=0.8,
                label=f"segment {j + 1}: p = {p:+.2f}" + (" (slip)" if h["slip"][j] else ""))
        lower = upper
    ax.plot(r / a, tr.q[:, 0], color="black", lw=2.0, label="q(r), their sum")
    ax.plot(r / a, mu * tr.p, color="gray", ls="--", lw=1.0, label="+- mu p(r)")
    ax.plot(r / a, -mu * tr.p, color="gray", ls="--", lw=1.0)
    for k, (r_in, r_out) in enumerate(tr.slip_zones):
        ax.axvspan(r_in / a, r_out / a, color="tab:red", alpha=0.15, label="slip zone" if k == 0 else None)
    ax.axvspan(0.0, (tr.slip_zones[0][0] if tr.slip_zones else a) / a, color="tab:green", alpha=0.06,
               label="stick zone")
    for d in h["delta"][:-1]:
        ax.axvline(math.sqrt(prm[S.P_RSTAR] * d) / a, color="gray", lw=0.5, ls=":")
    ax.set_xlabel("r / a")
    ax.set_ylabel("shear traction (x component)")
    ax.set_title("Traction after Kuhn's nine-movement nonsimple sequence (his Figure 4d)")
    ax.legend(fontsize=7, ncol=2, loc="lower left")
    path = save_figure(fig, Path(out_dir) / "traction_nonsimple.png", announce=announce)
    return path, {"T": float(sc.T[0]), "slip_zones": [list(z) for z in tr.slip_zones], "history_length": int(h["delta"].size)}


def md17_figure(out_dir, announce):
    mu, c = 0.4, 0.6
    sc = SingleContact("jaeger", mu=mu, **MATERIAL)
    prm = sc.prm
    N0 = prm[S.P_CN] * (1e-3 * prm[S.P_RSTAR]) ** 1.5
    N1 = 2.5 * N0
    sc.step((N0 / prm[S.P_CN]) ** (2.0 / 3.0), [0.0, 0.0])
    stops = [(N0 + 0.5 * (N1 - N0), False), (N1, False), (N1 - 0.5 * (N1 - N0), True), (N0, True)]
    fig, ax = new_figure(width=7.5, height=4.8)
    a1 = math.sqrt(prm[S.P_RSTAR] * (N1 / prm[S.P_CN]) ** (2.0 / 3.0))
    k = pressure_coefficient(prm)
    worst = 0.0
    for i, (N, unloading) in enumerate(stops):
        delta, s, T = closed_forms.md_proportional_cycle(N, N0, N1, c, mu, prm[S.P_KAPPA], prm[S.P_CN], unloading)
        sc.step(float(delta), [float(s), 0.0])
        a = math.sqrt(prm[S.P_RSTAR] * float(delta))
        r = np.linspace(0.0, a, 400)
        q = sc.traction(r).q[:, 0]
        ref = _md17_traction(prm, mu, c, N0, N1, N, unloading, r)
        worst = max(worst, float(np.max(np.abs(q - ref)) / (mu * k * a1)))
        label = f"step {i + 1}: N/N0 = {N / N0:.2f} ({'unloading' if unloading else 'loading'})"
        ax.plot(r / a1, ref / (mu * k * a1), color=color_for(i), lw=1.5, label=label + ", closed form")
        ax.plot(r[::20] / a1, q[::20] / (mu * k * a1), "o", ms=3.5, color=color_for(i), mfc="none")
    ax.set_xlabel("r / a(N1)")
    ax.set_ylabel("q / (mu p0(N1))")
    ax.set_title("Mindlin–Deresiewicz §17 in four large movements: Jäger (o) vs closed form (—)")
    ax.legend(fontsize=7)
    path = save_figure(fig, Path(out_dir) / "traction_md17.png", announce=announce)
    return path, {"max_abs_deviation_over_mu_p0": worst}


def loop_energy():
    mu = 0.4
    out = {}
    for n in (1, 100):
        sc = SingleContact("jaeger", mu=mu, **MATERIAL)
        prm = sc.prm
        delta = 2e-3 * prm[S.P_RSTAR]
        N = prm[S.P_CN] * delta ** 1.5
        sc.step(delta, [0.0, 0.0])
        T_amp = 0.8 * mu * N
        s_amp = float(closed_forms.monotonic_shift(T_amp, N, delta, mu, prm[S.P_KAPPA]))
        sc.step(delta, [s_amp, 0.0])
        D0 = sc.dissipation
        for s in np.concatenate([np.linspace(s_amp, -s_amp, n + 1)[1:], np.linspace(-s_amp, s_amp, n + 1)[1:]]):
            sc.step(delta, [s, 0.0])
        ref = closed_forms.loop_dissipation(T_amp, N, delta, mu, prm[S.P_KAPPA])
        out[f"movements_per_branch_{n}"] = {"dissipation_J": sc.dissipation - D0, "closed_form_J": ref,
                                            "relative_error": (sc.dissipation - D0) / ref - 1.0}
    return out


def write_traction_demo(out_dir, announce=print):
    """Write the traction/energy figures and their numbers into `out_dir`; returns the list of files."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p1, s1 = nonsimple_figure(out_dir, announce)
    p2, s2 = md17_figure(out_dir, announce)
    summary = {"nonsimple": s1, "md17": s2, "md_loop_dissipation": loop_energy()}
    p3 = out_dir / "traction_energy.json"
    p3.write_text(json.dumps(summary, indent=2))
    if announce is not None:
        announce(f"wrote {p3}")
    return [p1, p2, p3]
