"""One Hertz–Mindlin contact driven by prescribed movements, with the four tangential laws.

    python examples/single_contact.py [--steps-per-branch N] [--plot FIGURE.png]

The overlap is held constant while the tangential shift goes out to 0.7 of the sliding shift, back
to -0.7 and out again (a loading–unloading–reloading loop). Mindlin and Deresiewicz's closed form
gives the exact force along this loop; the `jaeger` law reproduces it at any number of steps per
branch, `md_incremental` approaches it as the steps get smaller (first order), and `linear` and
`mindlin` cannot follow it (they have one stiffness for loading and unloading).
"""

import argparse

import numpy as np

from graindem.contact import TANGENTIAL_LAWS, SingleContact
from graindem.contact import closed_forms

R, E, NU, MU = 1e-3, 70e9, 0.25, 0.5     # two equal quartz-like spheres of radius 1 mm
OVERLAP = 1e-6                           # total approach of the centres, m
KAPPA = (2.0 - NU) / (2.0 * (1.0 - NU))  # k_n / k_t of two spheres of one material (Mindlin)
AMPLITUDE = 0.7                          # of the sliding shift mu kappa delta


def loop_path(s_amp, steps_per_branch):
    """Shift targets and branch numbers along 0 -> s_amp -> -s_amp -> s_amp."""
    out = np.linspace(0.0, s_amp, steps_per_branch + 1)[1:]
    back = np.linspace(s_amp, -s_amp, steps_per_branch + 1)[1:]
    again = np.linspace(-s_amp, s_amp, steps_per_branch + 1)[1:]
    branch = np.repeat([0, 1, 2], steps_per_branch)
    return np.concatenate([out, back, again]), branch


def closed_form(s, branch, s_amp, N):
    """Mindlin–Deresiewicz force at the shifts s of the loop (graindem.contact.closed_forms)."""
    T_top = closed_forms.monotonic(s_amp, N, OVERLAP, MU, KAPPA)
    T_bottom = closed_forms.from_turning_point(-s_amp, s_amp, T_top, -1, N, OVERLAP, MU, KAPPA)
    return np.select(
        [branch == 0, branch == 1],
        [closed_forms.monotonic(s, N, OVERLAP, MU, KAPPA),
         closed_forms.from_turning_point(s, s_amp, T_top, -1, N, OVERLAP, MU, KAPPA)],
        closed_forms.from_turning_point(s, -s_amp, T_bottom, +1, N, OVERLAP, MU, KAPPA))


def run(steps_per_branch=10):
    """For every law: (shifts, forces along x, N, largest |T - T_MD| / (mu N) at the step ends)."""
    s_amp = AMPLITUDE * MU * KAPPA * OVERLAP
    s, branch = loop_path(s_amp, steps_per_branch)
    results = {}
    for law in TANGENTIAL_LAWS:
        contact = SingleContact(law=law, R1=R, R2=R, E=E, nu=NU, mu=MU)
        N, _ = contact.step(OVERLAP, [0.0, 0.0])
        T = np.array([contact.step(OVERLAP, [si, 0.0])[1] for si in s])
        error = np.max(np.abs(T[:, 0] - closed_form(s, branch, s_amp, N))) / (MU * N)
        results[law] = (s, T[:, 0], N, float(max(error, np.max(np.abs(T[:, 1])) / (MU * N))))
    return results


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    s_slide = MU * KAPPA * OVERLAP
    for law, (s, T, N, _) in results.items():
        ax.plot(np.r_[0.0, s] / s_slide, np.r_[0.0, T] / (MU * N), "o-", ms=3, label=law)
    ax.set_xlabel("shift / sliding shift")
    ax.set_ylabel("T / (mu N)")
    ax.legend()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps-per-branch", type=int, default=10)
    parser.add_argument("--plot", default=None, help="write the loops as a PNG figure")
    args = parser.parse_args(argv)
    if args.steps_per_branch < 1:
        parser.error(f"--steps-per-branch must be an integer >= 1; got {args.steps_per_branch}")
    results = run(args.steps_per_branch)
    for law, (_, _, N, error) in results.items():
        print(f"{law:15s} largest error against Mindlin–Deresiewicz: {error:.2e} mu N")
    if args.plot:
        plot(results, args.plot)
        print(f"figure written to {args.plot}")
    return results


if __name__ == "__main__":
    main()
