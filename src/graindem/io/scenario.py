"""Scenario files (TOML): load, validate against one schema, fill defaults.

Interface:

    load_scenario(path) -> dict
        Read a TOML file and return {section: {key: value}} with every key of every section
        present (defaults filled, None for optional keys left out), relative file paths resolved
        against the scenario file's folder. Errors: FileNotFoundError / ValueError naming the path
        for a missing, unreadable or non-TOML file; ValueError naming the key path
        ("material.nu") and the allowed range for every bad value; unknown sections/keys are
        rejected with the nearest known name suggested.
    validate_scenario(data, base_dir=None) -> dict
        The same for a dict already in memory (the Python API; `data` is not modified).
    apply_overrides(config, {"simulation.steps": 100}) -> dict
        A new validated config with some keys changed (command-line options such as --steps).
    scenario_to_toml(config) -> str
        TOML text of a (validated) scenario; load_scenario of that text gives the same dict.
    describe_schema() -> str
        The schema as a Markdown table (what docs/scenario-file.md lists).
    SCHEMA, EXCLUSIVE, CHECKS, Key
        The schema itself; extend it here (see below).

The schema is the dict literal SCHEMA: section -> key -> Key(type, default, ...). To add a key,
add a Key line; to add a section, add a dict. `type` is one of bool, int, float, str, "path"
(a str resolved relative to the scenario file), "vector" (a list of `length` floats), "list"
(a list of floats of any length, each in the key's range) or "names" (a list of strings, each one
of the key's choices). Ranges
are closed unless `gt`/`lt` (strict) are used. REQUIRED as default makes a key mandatory.
EXCLUSIVE lists groups of keys of one section that cannot be combined (e.g. dt / dt_fraction);
the defaults of a group's alternatives are applied only when the user chose none of them.
CHECKS holds functions (config) -> None for rules between keys; they raise ValueError.
Units are SI throughout.
"""

import difflib
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..contact.laws import TANGENTIAL_LAWS
from ..contact.shape_hertz import RADIUS_RULES, SHAPE_LAWS
from ..particles.size_distribution import MAX_LOGNORMAL_SIGMA, MAX_UNIFORM_SPREAD, Sieve

__all__ = ["Key", "REQUIRED", "SCHEMA", "EXCLUSIVE", "CHECKS", "load_scenario", "validate_scenario", "refuse_unused_keys",
           "apply_overrides", "scenario_to_toml", "describe_schema"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()


@dataclass(frozen=True)
class Key:
    """One scenario key: its type, default, allowed values, unit and meaning."""

    type: object
    default: object = None
    doc: str = ""
    unit: str = ""
    ge: float = None
    gt: float = None
    le: float = None
    lt: float = None
    choices: tuple = None
    length: int = None  # for "vector"

    def allowed(self):
        """Human-readable allowed range, used in error messages and the docs table."""
        if self.choices is not None:
            names = ", ".join(repr(c) for c in self.choices)
            return f"a list of one or more of {names}" if self.type == "names" else "one of " + names
        kind = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
                "path": "a file path (string)", "vector": f"a list of {self.length} numbers",
                "list": "a list of numbers, each"}[self.type]
        def num(x):
            return str(x) if isinstance(x, int) else f"{x:g}"
        lo = f"> {num(self.gt)}" if self.gt is not None else (f">= {num(self.ge)}" if self.ge is not None else None)
        hi = f"< {num(self.lt)}" if self.lt is not None else (f"<= {num(self.le)}" if self.le is not None else None)
        bounds = " and ".join(b for b in (lo, hi) if b)
        text = f"{kind} {bounds}" if bounds else kind
        return f"{text} [{self.unit}]" if self.unit and self.unit != "-" else text


# Generated packings: engine.prepare.random_gas is linear in n (10^6 spheres in 9-17 s,
# benchmarks/packing_generation.py); the bound is memory: a sphere with its contacts and Jaeger
# histories takes of the order of a kilobyte, so 10^7 spheres need about 10 GB.
MAX_GENERATED_SPHERES = 10_000_000
# solid fraction of a prepared dense packing, for the cell size estimate of _check_cell_size
DENSE_SOLID_FRACTION = 0.64


# fmt: off
SCHEMA = {
    "simulation": {
        "scenario": Key(str, "biaxial", "which scenario builds and drives the run: 'biaxial' (a periodic cell under the stress servo; particles.kind 'sphere', 'levelset', 'mixture' or 'deformable'); 'pile' (particles.kind = 'mixture': spheres and shaped grains settling under gravity in a walled box)", choices=("biaxial", "pile")),
        "steps": Key(int, 40000, "number of time steps", "steps", ge=1, le=10**10),
        "dt": Key(float, None, "time step; give dt or dt_fraction, not both", "s", gt=0.0, le=1.0),
        "dt_fraction": Key(float, 0.2, "time step as a fraction of the critical one", "-", gt=0.0, le=1.0),
        "allow_dt_above_critical": Key(bool, False, "accept an explicit dt above the critical time step"),
        "seed": Key(int, 0, "seed of the random generator (packing, perturbations)", "-", ge=0, le=2**63 - 1),
        "output_interval": Key(int, 1000, "steps between measurements / time-series rows", "steps", ge=1),
        "vtk_interval": Key(int, 0, "steps between VTK frames (0: at every output_interval)", "steps", ge=0),
        "checkpoint_interval": Key(int, 0, "steps between checkpoints, a multiple of output_interval (0: only at the end, on interrupt and on failure)", "steps", ge=0),
        "adaptive_dt": Key(bool, False, "keep dt = dt_fraction * dt_crit as contacts stiffen (not with dt)"),
        "adaptive_dt_interval": Key(int, 100, "steps between re-evaluations of dt_crit when adaptive_dt is on", "steps", ge=1),
    },
    "material": {
        "E": Key(float, 70e9, "Young's modulus of the grains", "Pa", gt=0.0, le=1e13),
        "nu": Key(float, 0.25, "Poisson's ratio", "-", ge=0.0, lt=0.5),
        "density": Key(float, 2650.0, "grain density", "kg/m^3", gt=0.0, le=1e5),
        "mu": Key(float, 0.5, "inter-particle friction coefficient", "-", ge=0.0, le=10.0),
        "restitution": Key(float, 1.0, "normal coefficient of restitution (1: no viscous damping)", "-", gt=0.0, le=1.0),
        "damping": Key(float, 0.0, "local non-viscous damping coefficient (quasi-static runs)", "-", ge=0.0, lt=1.0),
    },
    "materials": {
        "E": Key("list", (), "Young's moduli of further materials 1, 2, ... ([material] is material 0)", "Pa", gt=0.0, le=1e13),
        "nu": Key("list", (), "their Poisson's ratios (one per material)", "-", ge=0.0, lt=0.5),
        "density": Key("list", (), "their densities (one per material)", "kg/m^3", gt=0.0, le=1e5),
        "mu": Key("list", (), "their friction coefficients (one per material; a pair takes the smaller)", "-", ge=0.0, le=10.0),
        "fraction": Key("list", (), "share of the generated spheres made of each further material (random, seeded)", "-", ge=0.0, le=1.0),
        "pair_friction": Key("list", (), "friction of chosen material pairs: triples m1, m2, mu (e.g. [0, 1, 0.3])", "-", ge=0.0, le=10.0),
        "pair_rolling_friction": Key("list", (), "rolling friction of chosen material pairs: triples m1, m2, mu_r (the pair keeps contact.rolling_damping, rolling_stiffness, twisting)", "-", ge=0.0, le=10.0),
        "hertz_curvature_pairs": Key("list", (), "level-set grains: material pairs (m1, m2, m1, m2, ...) that touch by the law 'hertz_curvature' whatever contact.shape_law", "-", ge=0.0, le=1000.0),
        "area_pairs": Key("list", (), "level-set grains: material pairs (m1, m2, m1, m2, ...) that touch by the node law of grains.law (the shape law 'area') whatever contact.shape_law", "-", ge=0.0, le=1000.0),
    },
    "contact": {
        "law": Key(str, "jaeger", "tangential contact law", choices=TANGENTIAL_LAWS),
        "xi": Key(float, 0.0, "Jaeger history merge tolerance (0: exact), in units of mu", "-", ge=0.0, le=1.0),
        "rolling_friction": Key(float, 0.0, "rolling friction coefficient mu_r of the rolling spring (Ai et al. 2011, type C; limiting moment mu_r R* N); 0: no rolling resistance", "-", ge=0.0, le=10.0),
        "rolling_damping": Key(float, 0.0, "damping ratio of the rolling dashpot (active below the limiting moment)", "-", ge=0.0, le=1.0),
        "rolling_stiffness": Key(float, None, "rolling spring stiffness (default: Ai et al.'s 2.25 k_n mu_r^2 R*^2)", "N m/rad", gt=0.0, le=1e12),
        "twisting": Key(bool, False, "twisting resistance: Marshall's (2009) spring k_t a^2/2 with limiting moment 2/3 mu a N"),
        "twisting_damping": Key(float, 0.0, "damping ratio of the twisting dashpot", "-", ge=0.0, le=1.0),
        "shape_law": Key(str, "area", "contact law of level-set grains: 'area', the node-to-level-set penalty of grains.law (grains.stiffness); 'hertz_curvature', one Hertzian contact per grain pair from the local curvatures (material.E, nu; tangential law contact.law, xi; normal damping grains.damping_ratio)", choices=SHAPE_LAWS),
        "shape_radius_rule": Key(str, "elliptic", "shape_law 'hertz_curvature': effective radius from the principal curvatures at the contact point ('elliptic': Hertz's elliptical contact, Johnson's factor; 'gauss': Gaussian radius; 'mean': mean-curvature radius)", choices=tuple(RADIUS_RULES)),
        "shape_curvature_limit": Key(float, 10.0, "shape_law 'hertz_curvature': bound on the effective radius at flat or concave points, in units of the pair's volume-equivalent R*", "-", gt=0.0, le=1000.0),
    },
    "particles": {
        "kind": Key(str, "sphere", "body kind: spheres, or rigid level-set grains of the shapes of [grains] (their size: the largest semi-axis, or the bounding radius of a mesh or voxel grain, drawn from the size distribution), or a 'mixture' of spheres (particles.n, the size distribution, materials) and shaped grains ([grains] shapes, grains.n or grains.number_fraction, grains.size_ratio, grains.material), or 'deformable' spheres with a compaction mode ([deformable]; size classes, contact stiffness and damping, preparation from [grains])", choices=("sphere", "levelset", "mixture", "deformable")),
        "n": Key(int, 512, "number of spheres (with a size distribution; or give file); the smallest n also depends on total_strain (the periodic cell must stay wider than two neighbour cutoffs)", "-", ge=1, le=MAX_GENERATED_SPHERES),
        "distribution": Key(str, "uniform", "size distribution of the generated spheres (size ratio max/min <= 10)",
                            choices=("uniform", "lognormal", "sieve")),
        "radius_mean": Key(float, 1e-3, "uniform: mean sphere radius", "m", gt=0.0, le=1e3),
        "radius_spread": Key(float, 0.2, "uniform: radii uniform in radius_mean*(1 +- radius_spread); at most 9/11 (size ratio 10)", "-", ge=0.0, le=MAX_UNIFORM_SPREAD),
        "radius_median": Key(float, None, "lognormal: median radius (by number)", "m", gt=0.0, le=1e3),
        "sigma": Key(float, None, "lognormal: standard deviation of ln(radius), truncated at +-3 sigma; at most ln(10)/6 (size ratio 10)", "-", gt=0.0, le=MAX_LOGNORMAL_SIGMA),
        "sieve_csv": Key("path", None, "sieve: CSV of rows 'diameter (m), % passing by mass', from 0 % to 100 % (size ratio <= 10); sampled by number"),
        "file": Key("path", None, "CSV of x,y,z,radius (one sphere per row) instead of n/radius_*"),
        "max_initial_overlap": Key(float, 0.05, "largest overlap at start, as a fraction of the smaller radius (with file)", "-", ge=0.0, lt=1.0),
    },
    "grains": {
        "shapes": Key("names", ("ellipsoid",), "level-set grain shapes of a levelset run (a mixture when several)", choices=("ellipsoid", "superquadric", "mesh", "voxel")),
        "fractions": Key("list", (), "share of the grains of each shape, by number (default: equal shares)", "-", ge=0.0, le=1.0),
        "axes": Key("vector", (1.0, 0.8, 0.6), "ellipsoid and superquadric semi-axes, relative (scaled so that the largest is the grain's size)", "-", gt=0.0, le=1.0, length=3),
        "exponents": Key("vector", (0.6, 0.6), "superquadric exponents e1, e2 (1, 1: the ellipsoid; smaller: boxier)", "-", ge=0.1, le=2.0, length=2),
        "mesh_file": Key("path", None, "closed triangulated surface (STL, OBJ, any meshio format) of the shape 'mesh', scaled to each grain's size"),
        "voxel_file": Key("path", None, "NumPy .npy 3-D boolean image (True = solid, one connected region) of the shape 'voxel', scaled to each grain's size"),
        "nodes": Key(int, 300, "surface nodes per grain template", "-", ge=20, le=100000),
        "grid_cells": Key(int, 6, "level-set grid cells across the smallest semi-axis of a template (analytic shapes)", "-", ge=3, le=100),
        "size_classes": Key(int, 3, "templates per shape: grain sizes drawn from the size distribution are rounded to this many classes (quantiles), each stored once", "-", ge=1, le=50),
        "law": Key(str, "area", "node-to-level-set normal law: 'area' (stiffness per unit area) or 'node' (per node)", choices=("area", "node")),
        "stiffness": Key(float, None, "contact stiffness (area: Pa/m; node: N/m); default: the stiffness at which a contact carrying p d^2 penetrates `overlap` of the mean size", gt=0.0),
        "overlap": Key(float, 0.005, "penetration (fraction of the mean size) of a contact carrying p d^2 at the confining stress p, which sets the default stiffness", "-", gt=0.0, lt=0.1),
        "kt_ratio": Key(float, 2.0 / 7.0, "tangential / normal node stiffness", "-", gt=0.0, le=10.0),
        "damping_ratio": Key(float, 0.3, "damping ratio of each contact as a linear oscillator", "-", ge=0.0, le=1.0),
        "n": Key(int, None, "mixture: number of shaped grains (or give grains.number_fraction)", "-", ge=1, le=10**6),
        "number_fraction": Key(float, None, "mixture: the shaped grains' share of all bodies by number (or give grains.n)", "-", gt=0.0, lt=1.0),
        "size_ratio": Key(float, 2.0, "mixture: the shaped grains' size (largest semi-axis, or bounding radius of a mesh or voxel grain) over the spheres' mean radius", "-", gt=0.0, le=100.0),
        "material": Key(int, 0, "mixture: material of the shaped grains (0: [material]; 1, 2, ...: those of [materials])", "-", ge=0, le=1000),
        "preparation_steps": Key(int, 20000, "most steps of the isotropic preparation under the servo (it ends earlier once settled)", "steps", ge=1, le=10**9),
    },
    "deformable": {
        "shape": Key(str, "sphere", "template shape of particles.kind = 'deformable' (deform.scenes.compaction_sphere, scaled to each size class)", choices=("sphere",)),
        "mode_file": Key("path", None, "graindem mode file (`graindem fem`, sphere_compaction) of the compaction mode, scaled to each size class; default: the analytic stand-in mode"),
        "nodes": Key(int, 400, "surface contact nodes per grain", "-", ge=6, le=20000),
        "modal_damping_ratio": Key(float, 0.2, "damping ratio of the mode as an oscillator: C = 2 zeta sqrt(K M), K and M the mode's generalized stiffness (material.E, nu) and mass (material.density)", "-", ge=0.0, le=1.0),
        "pullback": Key(str, "point", "pull-back of a slave node into the master's deformed level set: 'point' (the node's own inverse map) or 'corners' (of the grid cell's corners)", choices=("point", "corners")),
        "inverse_iterations": Key(int, 1, "Newton refinements of the pull-back's inverse map", "-", ge=0, le=10),
    },
    "boundary": {
        "kind": Key(str, "periodic", "periodic deforming cell or rigid planar walls", choices=("periodic", "walls")),
        "box": Key("vector", None, "cell edge lengths of the spheres of particles.file (default: their bounding box); pile: the walled box's inner edge lengths (default: a square base under the bodies' loose start)", "m", gt=0.0, length=3),
        "initial_solid_fraction": Key(float, 0.3, "solid fraction of the loose random start, before compression (not used by the biaxial and pile scenarios)", "-", gt=0.0, le=0.74),
        "gravity": Key(float, 9.81, "pile: gravitational acceleration, along -z", "m/s^2", ge=0.0, le=1e4),
    },
    "loading": {
        "kind": Key(str, "biaxial", "loading programme", choices=("biaxial", "isotropic", "none")),
        "axis": Key(int, 2, "compressed axis (0 = x, 1 = y, 2 = z)", "-", ge=0, le=2),
        "stress_axis": Key(int, 0, "biaxial: axis held at confining_stress; the third axis keeps zero strain", "-", ge=0, le=2),
        "total_strain": Key(float, 0.04, "biaxial: compressive strain reached at the last step; or give strain_rate", "-", gt=0.0, lt=1.0),
        "strain_rate": Key(float, None, "biaxial: compressive strain rate", "1/s", gt=0.0),
        "confining_stress": Key(float, 100e3, "confining pressure of preparation and lateral stress of the test", "Pa", gt=0.0, le=1e10),
        "preparation_mu": Key(float, 0.0, "friction coefficient while the assembly is compressed to confining_stress", "-", ge=0.0, le=10.0),
        "shear_rate": Key("vector", None, "biaxial: simple shear added to the test, velocity gradients [L_xy, L_xz, L_yz] of the periodic cell (Simulation.control_shear)", "1/s", length=3),
    },
    "output": {
        "vtk": Key(bool, True, "write particles and contacts as VTK (.vtu + .pvd) files"),
        "csv": Key(bool, True, "write the time series as CSV and JSON (the biaxial scenario always does: a restart resumes them)"),
        "plots": Key(bool, True, "write PNG plots at the end"),
    },
}

EXCLUSIVE = [
    ("simulation", (("dt",), ("dt_fraction",))),
    ("particles", (("file",), ("n", "distribution", "radius_mean", "radius_spread", "radius_median", "sigma", "sieve_csv"))),
    ("loading", (("total_strain",), ("strain_rate",))),
    ("grains", (("n",), ("number_fraction",))),
]
# fmt: on


def _check_axes(config):
    load = config["loading"]
    if load["kind"] == "biaxial" and load["axis"] == load["stress_axis"]:
        raise ValueError(f"loading.stress_axis must differ from loading.axis (both are {load['axis']})")


def _check_dt_fraction(config):
    sim = config["simulation"]
    if sim["allow_dt_above_critical"] and sim["dt"] is None:
        raise ValueError("simulation.allow_dt_above_critical applies to an explicit simulation.dt (dt_fraction "
                         "is at most 1); give dt or remove allow_dt_above_critical")


def _check_intervals(config):
    sim = config["simulation"]
    ck, out = sim["checkpoint_interval"], sim["output_interval"]
    if ck and ck % out:
        raise ValueError(f"simulation.checkpoint_interval = {ck} must be a multiple of simulation.output_interval "
                         f"= {out} (or 0): checkpoints are written after an output row, so that a restart "
                         "resumes a complete series")


def _check_cell_size(config):
    """Generated spheres in the periodic cell: the cell must stay wider than two neighbour cutoffs
    (2 (2 r_max + skin), skin = 0.2 r_max) along the compressed axis at the end of the test, or the
    minimum image fails. The cell of n spheres at DENSE_SOLID_FRACTION is estimated from the mean
    cube of radii uniform in r (1 +- s): <r^3> = r^3 (1 + s^2)."""
    part, load, sim = config["particles"], config["loading"], config["simulation"]
    if (part["file"] or part["distribution"] != "uniform" or sim["scenario"] != "biaxial"
            or config["boundary"]["kind"] != "periodic" or part["kind"] in ("levelset", "deformable")):
        return  # other size distributions: the engine checks the cell against the cutoff when it is built
    strain = load["total_strain"] if load["kind"] == "biaxial" and load["total_strain"] is not None else 0.0
    s = part["radius_spread"]
    volume = part["n"] * 4.0 / 3.0 * math.pi * (1.0 + s * s) / DENSE_SOLID_FRACTION  # in units of radius_mean^3
    side = volume ** (1.0 / 3.0) * (1.0 - strain)
    need = 2.0 * (2.0 + 0.2) * (1.0 + s)
    if side <= need:
        n_min = math.ceil(need ** 3 / (1.0 - strain) ** 3 * DENSE_SOLID_FRACTION / (4.0 / 3.0 * math.pi * (1.0 + s * s)))
        raise ValueError(f"particles.n = {part['n']} is too small: its periodic cell (~{side:.2f} radius_mean wide "
                         f"at total_strain {strain:g}) must exceed two neighbour cutoffs ({need:.2f} radius_mean); "
                         f"give particles.n >= {n_min}")


def shape_laws_used(config):
    """The contact laws of level-set grains a scenario uses: contact.shape_law and the laws that
    materials.hertz_curvature_pairs and materials.area_pairs give to chosen material pairs."""
    mats = config.get("materials") or {}
    used = {config["contact"]["shape_law"]}
    if mats.get("hertz_curvature_pairs"):
        used.add("hertz_curvature")
    if mats.get("area_pairs"):
        used.add("area")
    return used


def refuse_unused_keys(config):
    """For the biaxial scenario (what `graindem run` drives): keys it does not use are refused when
    set to anything but their default (accepting them silently would suggest an effect they do not
    have). Not one of CHECKS: a scenario file stays valid for other drivers and for round trips."""
    if config["simulation"]["scenario"] != "biaxial":
        return
    unused = [("boundary", "initial_solid_fraction", "the preparation starts from its own loose gas")]
    if not config["particles"]["file"]:
        unused += [("boundary", "box", "generated spheres get the cell the preparation reaches; box applies to "
                    "particles.file"),
                   ("particles", "max_initial_overlap", "generated spheres start without overlap; it applies to "
                    "particles.file")]
    unused.append(("output", "csv", "the series are always written: a restart resumes them"))
    shape_keys = [("contact", name, "it applies to particles.kind = 'levelset'") for name in SCHEMA["contact"]
                  if name.startswith("shape_")]
    if config["particles"]["kind"] == "levelset":
        unused.append(("material", "restitution", "grain contacts use grains.damping_ratio"))
        laws = shape_laws_used(config)
        if laws == {"hertz_curvature"}:
            unused += [("grains", name, "a setting of contact.shape_law = 'area'")
                       for name in ("law", "stiffness", "overlap", "kt_ratio")]
        elif laws == {"area"}:
            unused += [("contact", "law", "level-set grains use grains.law"), ("contact", "xi", "a Jaeger setting"),
                       ("material", "E", "grain contacts use grains.stiffness"), ("material", "nu", "a Hertz setting")]
            unused += [(s, n, "a setting of contact.shape_law = 'hertz_curvature'") for s, n, _ in shape_keys
                       if n != "shape_law"]
    elif config["particles"]["kind"] == "mixture":
        unused += [("grains", "size_classes", "a mixture's grains have one size, grains.size_ratio")]
        unused += [(s, n, "a mixture's grains use grains.law") for s, n, _ in shape_keys]
        unused += [("materials", name, "a mixture's grains use grains.law")
                   for name in ("hertz_curvature_pairs", "area_pairs")]
    elif config["particles"]["kind"] == "sphere":
        unused += [("grains", name, "it applies to particles.kind = 'levelset'") for name in SCHEMA["grains"]]
        unused += shape_keys
        unused += [("materials", name, "it applies to particles.kind = 'levelset'")
                   for name in ("hertz_curvature_pairs", "area_pairs")]
    if config["particles"]["kind"] == "deformable":
        unused += [("grains", name, "it applies to level-set grains") for name in DEFORMABLE_UNUSED_GRAIN_KEYS]
        unused += [("contact", name, "deformable grains touch by the node penalty of grains.stiffness")
                   for name in SCHEMA["contact"]]
        unused.append(("material", "restitution", "deformable contacts use grains.damping_ratio"))
    else:
        unused += [("deformable", name, "it applies to particles.kind = 'deformable'") for name in SCHEMA["deformable"]]
    for section, name, why in unused:
        value, default = config[section][name], SCHEMA[section][name].default
        if value != (list(default) if isinstance(default, tuple) else default):
            raise ValueError(f"{section}.{name} = {_toml_value(value)} has no effect in the biaxial scenario ({why}); "
                             "remove it")


def _check_adaptive_dt(config):
    sim = config["simulation"]
    if sim["adaptive_dt"] and sim["dt"] is not None:
        raise ValueError("simulation.adaptive_dt = true sets dt from dt_fraction: remove simulation.dt "
                         "(or give dt_fraction instead)")


def _check_materials(config):
    mats = config["materials"]
    k = len(mats["E"])
    for name in ("nu", "density", "mu"):
        if len(mats[name]) != k:
            raise ValueError(f"materials.{name} must give one value per further material: materials.E has {k}, "
                             f"materials.{name} has {len(mats[name])}")
    if mats["fraction"]:
        if len(mats["fraction"]) != k:
            raise ValueError(f"materials.fraction must give one share per further material ({k}); "
                             f"got {len(mats['fraction'])}")
        if sum(mats["fraction"]) > 1.0:
            raise ValueError(f"materials.fraction must add up to at most 1 (material 0 takes the rest); "
                             f"got {sum(mats['fraction']):g}")
        if config["particles"]["file"]:
            raise ValueError("materials.fraction applies to generated spheres; with particles.file give each "
                             "sphere's material in a fifth CSV column instead")
    for key in ("hertz_curvature_pairs", "area_pairs"):
        pairs = mats[key]
        if len(pairs) % 2:
            raise ValueError(f"materials.{key} must hold pairs m1, m2; got {len(pairs)} numbers")
        for m in pairs:
            if m != int(m) or not (0 <= m <= k):
                raise ValueError(f"materials.{key} must hold material indices in [0, {k}]; got {m!r}")
    hertz, area = mats["hertz_curvature_pairs"], mats["area_pairs"]
    both = {frozenset(map(int, p)) for p in zip(hertz[::2], hertz[1::2])}
    both &= {frozenset(map(int, p)) for p in zip(area[::2], area[1::2])}
    if both:
        raise ValueError(f"materials.hertz_curvature_pairs and materials.area_pairs both name the pair "
                         f"{sorted(next(iter(both)))}")
    for key, what in (("pair_friction", "mu"), ("pair_rolling_friction", "mu_r")):
        pf = mats[key]
        if len(pf) % 3:
            raise ValueError(f"materials.{key} must hold triples m1, m2, {what}; got {len(pf)} numbers")
        for t in range(0, len(pf), 3):
            for m in pf[t:t + 2]:
                if m != int(m) or not (0 <= m <= k):
                    raise ValueError(f"materials.{key}[{t}:{t + 2}] must be material indices in [0, {k}]; "
                                     f"got {pf[t:t + 2]}")


def _check_size_distribution(config):
    part = config["particles"]
    dist = part["distribution"]
    if dist is None:  # particles.file
        return
    uses = {"uniform": (), "lognormal": ("radius_median", "sigma"), "sieve": ("sieve_csv",)}
    for other, keys in uses.items():
        for key in keys:
            if other != dist and part[key] is not None:
                raise ValueError(f"particles.{key} applies to particles.distribution = {other!r}; "
                                 f"this scenario has {dist!r}")
    for key in uses[dist]:
        if part[key] is None:
            raise ValueError(f"particles.{key} is required with particles.distribution = {dist!r}: "
                             f"{SCHEMA['particles'][key].doc} ({SCHEMA['particles'][key].allowed()})")
    if dist != "uniform":
        for key in ("radius_mean", "radius_spread"):
            if part[key] != SCHEMA["particles"][key].default:
                raise ValueError(f"particles.{key} applies to particles.distribution = 'uniform'; "
                                 f"this scenario has {dist!r}")
    if dist == "sieve":
        Sieve.from_csv(part["sieve_csv"])  # its errors name particles.sieve_csv


def _check_mixture(config):
    g, part, sim = config["grains"], config["particles"], config["simulation"]
    mixture = part["kind"] == "mixture"
    if not mixture:
        for key in ("n", "number_fraction"):
            if g[key] is not None:
                raise ValueError(f"grains.{key} applies to particles.kind = 'mixture'")
        if sim["scenario"] == "pile":
            raise ValueError("simulation.scenario = 'pile' is run by `graindem run` for particles.kind = 'mixture'; "
                             "level-set grains alone pour into a box with `graindem pile`")
        return
    if g["n"] is None and g["number_fraction"] is None:
        raise ValueError("a mixture needs the count of its shaped grains: give grains.n or grains.number_fraction")
    k = len(config["materials"]["E"])
    if g["material"] > k:
        raise ValueError(f"grains.material = {g['material']} is not defined (materials 0..{k}: [material] and the "
                         "lists of [materials])")
    if sim["scenario"] == "pile" and config["boundary"]["kind"] != "walls":
        raise ValueError("boundary.kind must be 'walls' for the pile scenario (a floor and four side walls)")
    if sim["scenario"] == "biaxial" and config["boundary"]["kind"] != "periodic":
        raise ValueError("boundary.kind must be 'periodic' for a mixture's biaxial scenario (the periodic cell "
                         "under the stress servo)")


# the [grains] keys a deformable run does not read (it reads size_classes, stiffness, overlap,
# kt_ratio, damping_ratio and preparation_steps)
DEFORMABLE_UNUSED_GRAIN_KEYS = ("shapes", "fractions", "axes", "exponents", "mesh_file", "voxel_file", "nodes",
                                "grid_cells", "law", "n", "number_fraction", "size_ratio", "material")
# a periodic axis must stay wider than two neighbour cutoffs (2 (2.4 r + skin), the level-set grid
# reaching 0.2 r beyond the surface) through a dense packing: four grains across (27 grains, three
# across, reach that bound when they pack densely)
MIN_DEFORMABLE_GRAINS = 64


def _check_deformable(config):
    part, sim = config["particles"], config["simulation"]
    if part["kind"] != "deformable":
        return
    if sim["scenario"] != "biaxial":
        raise ValueError(f"simulation.scenario must be 'biaxial' for particles.kind = 'deformable' (loading.kind "
                         f"'biaxial' or 'isotropic'); got {sim['scenario']!r}")
    if config["boundary"]["kind"] != "periodic":
        raise ValueError("boundary.kind must be 'periodic' for deformable grains in `graindem run` (the periodic cell "
                         "under the stress servo; walls: simulation.scenario = 'deformable_compaction')")
    if part["file"]:
        raise ValueError("particles.file holds spheres; a deformable run generates its grains (particles.n and the "
                         "size distribution)")
    if part["n"] < MIN_DEFORMABLE_GRAINS:
        raise ValueError(f"particles.n must be >= {MIN_DEFORMABLE_GRAINS} for deformable grains (a periodic axis must "
                         f"stay wider than two neighbour cutoffs: four grains across); got {part['n']}")
    for name, values in config["materials"].items():
        if values:
            raise ValueError(f"materials.{name} is not supported for deformable grains (they take [material] only): "
                             "remove it")
    if config["material"]["damping"] != 0.0:
        raise ValueError(f"material.damping must be 0 for deformable grains (local damping is not applied to them: "
                         f"grains.damping_ratio and deformable.modal_damping_ratio damp them); got "
                         f"{config['material']['damping']!r}")
    if sim["adaptive_dt"]:
        raise ValueError("simulation.adaptive_dt follows the spheres' Hertz stiffness; deformable grains run at "
                         "dt_fraction of their contact and modal critical step: remove it")


def _check_grains(config):
    g, part = config["grains"], config["particles"]
    if part["kind"] == "sphere":
        return
    if part["file"]:
        raise ValueError("particles.file holds spheres; a levelset or mixture run generates its grains (particles.n and the "
                         "size distribution)")
    if g["fractions"] and len(g["fractions"]) != len(g["shapes"]):
        raise ValueError(f"grains.fractions must give one share per shape of grains.shapes ({len(g['shapes'])}); "
                         f"got {len(g['fractions'])}")
    if g["fractions"] and not math.isclose(sum(g["fractions"]), 1.0, rel_tol=1e-9):
        raise ValueError(f"grains.fractions must add up to 1; got {sum(g['fractions']):g}")
    for shape, key in (("mesh", "mesh_file"), ("voxel", "voxel_file")):
        if shape in g["shapes"] and g[key] is None:
            raise ValueError(f"grains.{key} is required with the shape {shape!r} in grains.shapes")
        if g[key] is not None and shape not in g["shapes"]:
            raise ValueError(f"grains.{key} applies to the shape {shape!r}, which grains.shapes does not list")
    if config["boundary"]["kind"] != "periodic" and part["kind"] == "levelset":
        raise ValueError("boundary.kind must be 'periodic' for level-set grains in `graindem run`")
    if config["simulation"]["adaptive_dt"]:
        raise ValueError("simulation.adaptive_dt follows the spheres' Hertz stiffness; level-set grains run at "
                         "dt_fraction of their node contacts' critical step: remove it")


CHECKS = [_check_deformable, _check_mixture, _check_grains, _check_axes, _check_dt_fraction, _check_adaptive_dt, _check_materials, _check_size_distribution,
          _check_intervals, _check_cell_size]


def _suggest(name, known):
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    if not close:  # case slips ("e" for "E") or long prefixes are not caught by the ratio alone
        lowered = {k.lower(): k for k in known}
        close = [lowered[name.lower()]] if name.lower() in lowered else []
    return f"; did you mean {close[0]!r}?" if close else ""


def _convert(path, key, value, base_dir):
    """Type-check and range-check one value; returns it converted (ints to floats, paths resolved)."""
    def bad(got=value):
        return ValueError(f"{path} must be {key.allowed()}; got {got!r}")

    if key.type is bool:
        if not isinstance(value, bool):
            raise bad()
        return value
    if key.type is str:
        if not isinstance(value, str):
            raise bad()
        if key.choices is not None and value not in key.choices:
            raise ValueError(f"{path} must be {key.allowed()}; got {value!r}{_suggest(value, key.choices)}")
        return value
    if key.type == "path":
        if not isinstance(value, str) or not value:
            raise bad()
        p = Path(value).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        return str(p)
    if key.type == "names":
        if not isinstance(value, (list, tuple)) or not value:
            raise bad()
        for k, item in enumerate(value):
            if not isinstance(item, str) or item not in key.choices:
                raise ValueError(f"{path}[{k}] must be one of {', '.join(repr(c) for c in key.choices)}; got "
                                 f"{item!r}{_suggest(item, key.choices) if isinstance(item, str) else ''}")
        return list(value)
    if key.type == "list":
        if not isinstance(value, (list, tuple)):
            raise bad()
        return [_number(f"{path}[{k}]", key, item, float) for k, item in enumerate(value)]
    if key.type == "vector":
        if not isinstance(value, (list, tuple)) or len(value) != key.length:
            raise bad()
        out = []
        for k, item in enumerate(value):
            out.append(_number(f"{path}[{k}]", key, item, float))
        return out
    return _number(path, key, value, key.type)


def _number(path, key, value, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ValueError(f"{path} must be {key.allowed()}; got {value!r}")
    value = kind(value)
    if not math.isfinite(value):
        raise ValueError(f"{path} must be {key.allowed()} and finite; got {value!r}")
    if ((key.ge is not None and value < key.ge) or (key.gt is not None and value <= key.gt)
            or (key.le is not None and value > key.le) or (key.lt is not None and value >= key.lt)):
        raise ValueError(f"{path} must be {key.allowed()}; got {value!r}")
    if key.choices is not None and value not in key.choices:
        raise ValueError(f"{path} must be {key.allowed()}; got {value!r}")
    return value


def _all_key_paths():
    return {f"{s}.{k}": (s, k) for s, keys in SCHEMA.items() for k in keys}


def validate_scenario(data, base_dir=None):
    """Validate a scenario dict ({section: {key: value}}) and return a new dict with defaults."""
    if not isinstance(data, dict):
        raise ValueError(f"a scenario must be a table of sections; got {type(data).__name__}")
    for section, table in data.items():
        if section not in SCHEMA:
            if not isinstance(table, dict):
                hint = [p for p, (_, k) in _all_key_paths().items() if k == section]
                hint = f"; keys belong in a section, did you mean {hint[0]!r}?" if hint else _suggest(section, SCHEMA)
                raise ValueError(f"unknown top-level key {section!r}{hint}")
            raise ValueError(f"unknown section [{section}]{_suggest(section, SCHEMA)} (known: {', '.join(SCHEMA)})")
        if not isinstance(table, dict):
            raise ValueError(f"[{section}] must be a table of keys; got {table!r}")
        for name in table:
            if name not in SCHEMA[section]:
                raise ValueError(f"unknown key {section}.{name}{_suggest(name, SCHEMA[section])}")

    config = {}
    for section, keys in SCHEMA.items():
        given = data.get(section, {})
        skip_defaults = set()
        for group_section, groups in EXCLUSIVE:
            if group_section != section:
                continue
            chosen = [g for g in groups if any(k in given for k in g)]
            if len(chosen) > 1:
                a, b = (f"{section}.{next(k for k in g if k in given)}" for g in chosen[:2])
                raise ValueError(f"{a} and {b} cannot both be given; choose one")
            if not chosen:  # the default choice is the first alternative that has defaults
                chosen = [g for g in groups if any(keys[k].default is not None for k in g)][:1]
            skip_defaults.update(k for g in groups if not chosen or g is not chosen[0] for k in g)
        out = {}
        for name, key in keys.items():
            path = f"{section}.{name}"
            if name in given:
                out[name] = _convert(path, key, given[name], base_dir)
            elif key.default is REQUIRED:
                raise ValueError(f"{path} is required: {key.doc} ({key.allowed()})")
            elif name in skip_defaults:
                out[name] = None
            else:
                out[name] = list(key.default) if isinstance(key.default, (list, tuple)) else key.default
        config[section] = out
    for check in CHECKS:
        check(config)
    return config


def load_scenario(path):
    """Read and validate the TOML scenario file `path` (see the module docstring)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"scenario file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"scenario file {str(path)!r} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"scenario file {str(path)!r} cannot be read: {exc}") from None
    try:
        return validate_scenario(data, base_dir=path.resolve().parent)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def apply_overrides(config, overrides):
    """A new validated config with {"section.key": value} overrides applied (e.g. from the CLI).

    Setting one member of an exclusive group (say simulation.dt) drops the others (dt_fraction).
    Unknown key paths and bad values raise ValueError as in a scenario file.
    """
    raw = {section: {k: v for k, v in table.items() if v is not None} for section, table in config.items()}
    known = _all_key_paths()
    for path, value in overrides.items():
        if path not in known:
            raise ValueError(f"unknown key {path}{_suggest(path, known)}")
        section, name = known[path]
        for group_section, groups in EXCLUSIVE:
            if group_section == section and any(name in g for g in groups):
                for g in groups:
                    if name not in g:
                        for other in g:
                            raw[section].pop(other, None)
        raw.setdefault(section, {})[name] = value
    return validate_scenario(raw)


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf else repr(value))
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes; characters beyond the BMP stay
        # literal (JSON would write surrogate pairs, which TOML refuses) and DEL is escaped (TOML
        # forbids it literally, JSON leaves it)
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ValueError(f"cannot write {value!r} ({type(value).__name__}) to TOML")


def scenario_to_toml(config):
    """TOML text of a scenario dict; keys whose value is None are left out."""
    lines = []
    for section, table in config.items():
        lines.append(f"[{section}]")
        for name, value in table.items():
            if value is not None:
                lines.append(f"{name} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def describe_schema():
    """The schema as a Markdown table per section (key, allowed values and unit, default, meaning)."""
    out = []
    for section, keys in SCHEMA.items():
        out.append(f"### [{section}]\n\n| key | allowed | default | meaning |\n|---|---|---|---|")
        for name, key in keys.items():
            default = "required" if key.default is REQUIRED else ("-" if key.default is None else _toml_value(key.default))
            out.append(f"| `{name}` | {key.allowed()} | `{default}` | {key.doc} |")
        out.append("")
    return "\n".join(out)
