"""Small matplotlib helpers shared by the demonstrations and the engine's reports.

Figures are built with `matplotlib.figure.Figure` directly (no pyplot), so they are rendered by the
Agg canvas without touching the global backend or pyplot's figure registry: safe in tests, in
worker processes and on machines without a display.
"""

from pathlib import Path

from matplotlib.figure import Figure

# Colours fixed per name so that the same law looks the same in every figure.
PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
           "tab:gray", "tab:olive", "tab:cyan")


def color_for(index):
    return PALETTE[index % len(PALETTE)]


def new_figure(nrows=1, ncols=1, width=6.4, height=4.8, **subplot_kw):
    """A figure and its axes (a single Axes for 1x1, else a 2D array, as `plt.subplots` with squeeze)."""
    if nrows < 1 or ncols < 1:
        raise ValueError(f"nrows and ncols must be >= 1, got {nrows}, {ncols}")
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True, **subplot_kw)
    return fig, axes


def save_figure(fig, path, dpi=120, announce=print):
    """Write `fig` as PNG (or whatever the suffix says), creating the folder; announce and return the path."""
    from .outputs import replacing
    path = Path(path)
    with replacing(path) as tmp:  # a reader never sees half a picture, an old one survives a failed write
        fig.savefig(tmp, dpi=dpi, format=path.suffix[1:] or "png")
    if announce is not None:
        announce(f"wrote {path}")
    return path
