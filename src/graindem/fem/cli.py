"""`graindem modes extract CONFIG --out FILE.h5`: FEM mode extraction driven by a TOML file.

Config keys (all optional except `geometry`):
    geometry = "sphere_compaction" | "cantilever"
    sphere_compaction: radius = 10.0, E = 100.0, nu = 0.3, rho = 1.0, mesh_size = radius/20,
                       eps = [...] (indentation / radius, default: the seed's Appendix B points),
                       coordinate = "length" | "relative",
                       mode_eps = (one of eps; default the largest: the level whose field is the mode),
                       basis = "single" | "pod" | "difference", n_modes = 3, energy_orthogonal = false
    cantilever: length = 160, width = 4, height = 4, E = 1e4, nu = 0.3, rho = 1.0, elements_along = 40,
                elements_across = 2
    plots = true  (PNG files next to the output file)
"""

import json
import pathlib
import time
import tomllib

import numpy as np

GEOMETRIES = ("sphere_compaction", "cantilever")


def add_arguments(parser):
    sub = parser.add_subparsers(dest="modes_command", required=True)
    ex = sub.add_parser("extract", help="run the FEM mode extraction described by a TOML config")
    ex.add_argument("config", type=pathlib.Path, help="TOML configuration file")
    ex.add_argument("--out", type=pathlib.Path, required=True, help="mode file to write (HDF5)")
    ex.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


# key -> (kind, check, allowed) per geometry; kind: "number", "int", "bool", "str", "numbers"
_POSITIVE = (lambda v: v > 0, "> 0")
_NU = (lambda v: -1.0 < v < 0.5, "in (-1, 0.5)")
_ANY = (lambda v: True, "")
_COMMON = {"geometry": ("str", (lambda v: v in GEOMETRIES, f"one of {GEOMETRIES}")),
           "plots": ("bool", _ANY), "E": ("number", _POSITIVE), "nu": ("number", _NU), "rho": ("number", _POSITIVE)}
CONFIG_KEYS = {
    "sphere_compaction": {**_COMMON, "radius": ("number", _POSITIVE), "mesh_size": ("number", _POSITIVE),
                          "eps": ("numbers", (lambda v: 0.0 < v < 1.0, "each in (0, 1)")),
                          "coordinate": ("str", (lambda v: v in ("length", "relative"), "'length' or 'relative'")),
                          "mode_eps": ("number", (lambda v: 0.0 < v < 1.0, "in (0, 1)")),
                          "basis": ("str", (lambda v: v in ("single", "pod", "difference"),
                                            "'single', 'pod' or 'difference'")),
                          "n_modes": ("int", (lambda v: v >= 1, ">= 1")), "energy_orthogonal": ("bool", _ANY)},
    "cantilever": {**_COMMON, "length": ("number", _POSITIVE), "width": ("number", _POSITIVE),
                   "height": ("number", _POSITIVE), "elements_along": ("int", (lambda v: v >= 1, ">= 1")),
                   "elements_across": ("int", (lambda v: v >= 1, ">= 1"))},
}


def _is_number(v):
    import math
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_config(cfg, source="config"):
    """Refuse unknown keys and values of the wrong type or range, naming the key (before any work)."""
    import difflib
    geometry = cfg.get("geometry")
    if geometry not in GEOMETRIES:
        raise ValueError(f"{source}: geometry must be one of {GEOMETRIES}, got {geometry!r}")
    known = CONFIG_KEYS[geometry]
    for key, value in cfg.items():
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known for {geometry}: {', '.join(known)})"
            raise ValueError(f"{source}: unknown key {key!r}{hint}")
        kind, (ok, allowed) = known[key]
        type_ok = {"number": _is_number(value), "int": isinstance(value, int) and not isinstance(value, bool),
                   "bool": isinstance(value, bool), "str": isinstance(value, str),
                   "numbers": isinstance(value, list) and len(value) > 0 and all(_is_number(v) for v in value)}[kind]
        word = {"number": "a finite number", "int": "an integer", "bool": "true or false", "str": "a string",
                "numbers": "a non-empty list of finite numbers"}[kind]
        values = value if kind == "numbers" and type_ok else [value]
        if not type_ok or not all(ok(v) for v in values):
            raise ValueError(f"{source}: {key} must be {word}{' ' + allowed if allowed else ''}; got {value!r}")
    if "mode_eps" in cfg and "eps" in cfg and cfg["mode_eps"] not in cfg["eps"]:
        raise ValueError(f"{source}: mode_eps must be one of eps {cfg['eps']}; got {cfg['mode_eps']!r}")
    return cfg


def _read_config(path):
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"modes config {str(path)!r} does not exist")
    try:
        with open(path, "rb") as fh:
            cfg = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"modes config {str(path)!r} is not valid TOML: {exc}") from None
    return check_config(cfg, source=str(path))


def surface_triangles(tets):
    """Faces of a linear tet mesh that belong to exactly one tetrahedron."""
    from graindem.fem.modefile import boundary_faces

    return boundary_faces(tets)


def extract(cfg, progress=True):
    """Run the extraction for a config dict; returns (ModeSet, summary dict, curves dict)."""
    from ..io.progress import Progress

    geometry = cfg["geometry"]
    if geometry == "sphere_compaction":
        from graindem.fem.compaction import SEED_TABLE_EPS, compact_sphere, compaction_mode_set

        radius = float(cfg.get("radius", 10.0))
        eps = np.asarray(cfg.get("eps", SEED_TABLE_EPS[1:]), dtype=float)
        with Progress(len(eps), desc="FEM load levels", quiet=not progress, unit="level") as bar:
            result = compact_sphere(radius, float(cfg.get("E", 100.0)), float(cfg.get("nu", 0.3)), eps=eps,
                                    mesh_size=float(cfg.get("mesh_size", radius / 20.0)), progress=bar.update)
        basis = cfg.get("basis", "single")
        if basis == "single":
            modes = compaction_mode_set(result, coordinate=cfg.get("coordinate", "length"),
                                        rho=float(cfg.get("rho", 1.0)), mode_eps=cfg.get("mode_eps"))
        elif basis in ("pod", "difference"):
            from graindem.fem.compaction import snapshot_mode_set

            modes, _ = snapshot_mode_set(result, basis, cfg.get("n_modes"), bool(cfg.get("energy_orthogonal", False)),
                                         rho=float(cfg.get("rho", 1.0)))
        else:
            raise ValueError(f"basis must be 'single', 'pod' or 'difference', got {basis!r}")
        summary = {"unknowns_octant": int(result.unknowns), "modal_stiffness": modes.stiffness.tolist(),
                   "modal_mass": modes.mass.tolist()}
        if "singular_values" in modes.metadata:
            summary["singular_values"] = np.asarray(modes.metadata["singular_values"]).tolist()
        curves = {"eps": result.eps, "wall_force": result.wall_force, "energy": result.energy,
                  "contact_radius": result.contact_radius}
    else:
        from graindem.fem.beam import cantilever_bending_mode, euler_bernoulli_tip_stiffness
        from graindem.fem.mesh import split_quadratic_tets
        from graindem.fem.modefile import ModeSet
        from skfem import Basis, BilinearForm, ElementTetP2, asm
        from skfem.helpers import dot

        L, w, h = (float(cfg.get(k, d)) for k, d in (("length", 160.0), ("width", 4.0), ("height", 4.0)))
        E, nu, rho = float(cfg.get("E", 1e4)), float(cfg.get("nu", 0.3)), float(cfg.get("rho", 1.0))
        mesh, basis, K, phi, kg = cantilever_bending_mode(L, w, h, E, nu, int(cfg.get("elements_along", 40)),
                                                          int(cfg.get("elements_across", 2)))
        M = asm(BilinearForm(lambda u, v, _: rho * dot(u, v)), basis)
        nodes, tets = split_quadratic_tets(mesh, Basis(mesh, ElementTetP2()))
        centroid = np.array([L, w, h]) / 2.0
        modes = ModeSet(nodes=nodes - centroid, tets=tets, phi=phi.reshape(1, -1, 3),
                        mass=np.array([[phi @ (M @ phi)]]), stiffness=np.array([[kg]]), mode_names=["bending"],
                        units={"length": "voxel", "force": "E*voxel^2", "mass": "rho*voxel^3", "energy": "force*length"},
                        metadata={"geometry": "cantilever beam clamped at x = -length/2", "E": E, "nu": nu,
                                  "rho": rho, "length": L, "width": w, "height": h,
                                  "normalization": "mean deflection of the loaded end face (x = +length/2) is 1 along -z",
                                  "euler_bernoulli_stiffness": euler_bernoulli_tip_stiffness(L, w, h, E)})
        summary = {"modal_stiffness": kg, "euler_bernoulli": euler_bernoulli_tip_stiffness(L, w, h, E),
                   "modal_mass": float(modes.mass[0, 0]), "unknowns": int(basis.N)}
        curves = {}
    modes.surface = surface_triangles(modes.tets)
    return modes, summary, curves


def plot_mode(modes, path, scale=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phi = modes.phi[0]
    mag = np.linalg.norm(phi, axis=1)
    extent = np.ptp(modes.nodes, axis=0).max()
    scale = 0.1 * extent / max(mag.max(), 1e-300) if scale is None else scale
    x = modes.nodes + scale * phi
    tri = modes.surface
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection="3d")
    values = mag[tri].mean(axis=1)
    norm = matplotlib.colors.Normalize(vmin=values.min(), vmax=values.max())
    cmap = matplotlib.colormaps["viridis"]
    ax.add_collection3d(Poly3DCollection(x[tri], facecolors=cmap(norm(values)), edgecolor="k", linewidth=0.05))
    ax.set_xlim(x[:, 0].min(), x[:, 0].max())
    ax.set_ylim(x[:, 1].min(), x[:, 1].max())
    ax.set_zlim(x[:, 2].min(), x[:, 2].max())
    fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.6,
                 label="|Φ| (displacement per unit coordinate)")
    ax.set_title(f"{modes.mode_names[0]} mode, displacement ×{scale:.3g}")
    ax.set_box_aspect(np.ptp(x, axis=0))
    from ..io.plots import save_figure
    save_figure(fig, path, announce=None)
    plt.close(fig)


def plot_compaction_curves(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from graindem.fem.compaction import SEED_TABLE_EPS, SEED_TABLE_FORCE, normalized_curve

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(SEED_TABLE_EPS, SEED_TABLE_FORCE, "ko", label="seed Appendix B table")
    a1.plot(np.r_[0, curves["eps"]], np.r_[0, curves["wall_force"]], "C0-", label="graindem FEM (one wall)")
    a1.set_xlabel("ε = δ/R")
    a1.set_ylabel("wall reaction")
    a1.legend()
    d, f = normalized_curve(SEED_TABLE_EPS, SEED_TABLE_FORCE)
    a2.plot(d, f, "ko", label="seed table")
    d, f = normalized_curve(np.r_[0, curves["eps"]], np.r_[0, curves["wall_force"]])
    a2.plot(d, f, "C0-", label="graindem FEM")
    a2.set_xlabel("δ̂ = δ/δ0")
    a2.set_ylabel("F̂ = F/(K_g δ0)")
    a2.set_title("eq. 52 normalization")
    a2.legend()
    fig.tight_layout()
    from ..io.plots import save_figure
    save_figure(fig, path, announce=None)
    plt.close(fig)


def run(args):
    from graindem.fem.modefile import write_mode_file

    if args.modes_command != "extract":
        raise ValueError(f"unknown modes command {args.modes_command!r}")
    cfg = _read_config(args.config)
    start = time.perf_counter()
    modes, summary, curves = extract(cfg)
    summary["seconds"] = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_mode_file(args.out, modes)
    if cfg.get("plots", True) and not args.no_plots:
        stem = args.out.with_suffix("")
        plot_mode(modes, f"{stem}_mode.png")
        if curves:
            plot_compaction_curves(curves, f"{stem}_force.png")
    print(json.dumps(summary, indent=1, default=float))
    return 0
