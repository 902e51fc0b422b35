"""graindem.fem: finite-element mode extraction (linear elastic small-strain grains, rigid flat indenters).

The mode-file functions need only numpy/scipy/h5py; the FEM functions import scikit-fem (extra `fem`)
on first use, so reading a mode file does not require scikit-fem.
"""

from graindem.fem.modefile import FORMAT_VERSION, ModeSet, TetLocator, read_mode_file, write_mode_file

_LAZY = {
    "sphere_between_plates": "graindem.fem.contact",
    "octant_sphere_mesh": "graindem.fem.mesh",
    "compact_sphere": "graindem.fem.compaction",
    "compaction_mode_set": "graindem.fem.compaction",
    "SEED_TABLE_EPS": "graindem.fem.compaction",
    "SEED_TABLE_FORCE": "graindem.fem.compaction",
    "difference_modes": "graindem.fem.modes",
    "pod_modes": "graindem.fem.modes",
    "energy_orthogonalize": "graindem.fem.modes",
    "fit_energy_polynomial": "graindem.fem.compaction",
    "cantilever_bending_mode": "graindem.fem.beam",
}

__all__ = ["FORMAT_VERSION", "ModeSet", "TetLocator", "read_mode_file", "write_mode_file", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graindem.fem' has no attribute {name!r}")
