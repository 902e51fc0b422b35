"""Tests of graindem.io: VTK, checkpoints, scenario files, progress line, time series.

References are independent of the code under test: the arrays handed to a writer (read back by
meshio / xml.etree / csv / json, not by our own readers where avoidable), hand-placed periodic
geometry, the bytes of the inputs (bit identity), and hand-derived progress figures.
"""

import csv
import io
import json
import math
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import meshio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graindem.io import checkpoint, progress, scenario, timeseries, vtk

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------- VTK

def _vtu_arrays(path, section):
    """Name -> (type, components) of the DataArrays in <PointData> or <CellData>, by xml.etree."""
    root = ET.parse(path).getroot()
    assert root.get("type") == "UnstructuredGrid"
    block = root.find(f"UnstructuredGrid/Piece/{section}")
    if block is None:
        return {}
    return {a.get("Name"): (a.get("type"), int(a.get("NumberOfComponents", 1))) for a in block.findall("DataArray")}


@pytest.mark.parametrize("binary,compression", [(True, "zlib"), (True, None), (False, None)])
def test_particles_vtu_parses_back_with_every_array(tmp_path, binary, compression):
    rng = np.random.default_rng(1)
    n = 37
    x = rng.random((n, 3))
    fields = {"radius": rng.random(n), "velocity": rng.normal(size=(n, 3)), "force": rng.normal(size=(n, 3)),
              "id": np.arange(n, dtype=np.int64), "stress": rng.normal(size=(n, 3, 3)), "fixed": rng.random(n) < 0.5}
    path = vtk.write_particles(tmp_path / "p.vtu", x, fields, binary=binary, compression=compression)
    mesh = meshio.read(path)
    # binary keeps every bit; meshio's ASCII writer prints 12 significant digits
    rtol = 0 if binary else 1e-11
    np.testing.assert_allclose(mesh.points, x, rtol=rtol, atol=0)
    for name in ("radius", "velocity", "force"):
        np.testing.assert_allclose(mesh.point_data[name], fields[name], rtol=rtol, atol=0)
    np.testing.assert_array_equal(mesh.point_data["id"], fields["id"])
    np.testing.assert_allclose(mesh.point_data["stress"], fields["stress"].reshape(n, 9), rtol=rtol, atol=0)
    np.testing.assert_array_equal(mesh.point_data["fixed"], fields["fixed"].astype(np.uint8))
    assert [(b.type, len(b.data)) for b in mesh.cells] == [("vertex", n)]
    arrays = _vtu_arrays(path, "PointData")
    assert arrays["velocity"] == ("Float64", 3) and arrays["radius"] == ("Float64", 1)
    assert arrays["stress"][1] == 9
    assert not list(tmp_path.glob(".*tmp"))  # the temporary file was renamed, not left behind


def test_particles_bad_fields_are_refused_before_writing(tmp_path):
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="'radius' must have 4 rows"):
        vtk.write_particles(tmp_path / "p.vtu", x, {"radius": np.ones(3)})
    with pytest.raises(ValueError, match="positions must have shape"):
        vtk.write_particles(tmp_path / "p.vtu", np.zeros(4))
    with pytest.raises(ValueError, match="positions must be finite"):
        vtk.write_particles(tmp_path / "p.vtu", np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match=r"must end in \.vtu"):
        vtk.write_particles(tmp_path / "p.vtk", x)
    with pytest.raises(ValueError, match="compression must be 'zlib', 'lzma' or None"):
        vtk.write_particles(tmp_path / "p.vtu", x, compression="gzip")
    assert not list(tmp_path.iterdir())


def _periodic_example():
    """Orthogonal cell 10 x 10 x 10; radii 0.5. Hand-placed contacts:
    (0, 1) across the x boundary: 0 at x = 0.5, 1 at x = 9.6, so the image of 1 at x = -0.4 touches 0
            (branch (-0.9, 0, 0), overlap 0.1);
    (0, 2) inside the cell: 2 at x = 1.4 (branch (0.9, 0, 0));
    (3, 4) across the z boundary and the y boundary at once: 3 at (5, 0.2, 9.7), 4 at (5, 9.9, 0.1):
            image of 4 at (5, -0.1, 10.1), branch (0, -0.3, 0.4), length 0.5."""
    x = np.array([[0.5, 5, 5], [9.6, 5, 5], [1.4, 5, 5], [5, 0.2, 9.7], [5, 9.9, 0.1]])
    pairs = np.array([[0, 1], [0, 2], [3, 4]])
    images = {0: np.array([-0.4, 5, 5]), 2: np.array([5, -0.1, 10.1])}
    return x, pairs, images


@pytest.mark.parametrize("source", ["cell", "branch"])
def test_contacts_across_periodic_boundary_drawn_to_the_image(tmp_path, source):
    x, pairs, images = _periodic_example()
    fn = np.array([1.0, 2.0, 3.0])
    ft = np.array([[0.1, 0, 0], [0, 0.2, 0], [0, 0, 0.3]])
    branch = np.array([[-0.9, 0, 0], [0.9, 0, 0], [0, -0.3, 0.4]])
    kwargs = {"cell": 10 * np.eye(3)} if source == "cell" else {"branch": branch}
    count = vtk.write_contacts(tmp_path / "c.vtu", x, pairs, {"normal_force": fn, "tangential_force": ft}, **kwargs)
    assert count == 3
    mesh = meshio.read(tmp_path / "c.vtu")
    (block,) = mesh.cells
    assert block.type == "line"
    lines = block.data
    np.testing.assert_allclose(mesh.points[:5], x, rtol=0, atol=0)
    for k, (i, j) in enumerate(pairs):
        start, end = mesh.points[lines[k, 0]], mesh.points[lines[k, 1]]
        np.testing.assert_array_equal(start, x[i])
        expected_end = images.get(k, x[j])
        np.testing.assert_allclose(end, expected_end, atol=1e-12)
        assert np.linalg.norm(end - start) <= 1.0 + 1e-12  # never longer than the sum of radii
    cd = {name: arrays[0] for name, arrays in mesh.cell_data.items()}
    np.testing.assert_array_equal(cd["wrapped"], [1, 0, 1])
    np.testing.assert_array_equal(cd["i"], pairs[:, 0])
    np.testing.assert_array_equal(cd["j"], pairs[:, 1])
    np.testing.assert_array_equal(cd["normal_force"], fn)
    np.testing.assert_array_equal(cd["tangential_force"], ft)
    assert _vtu_arrays(tmp_path / "c.vtu", "CellData")["tangential_force"] == ("Float64", 3)


def test_contacts_skip_mode_drops_wrapped_lines_and_their_data(tmp_path):
    x, pairs, _ = _periodic_example()
    fn = np.array([1.0, 2.0, 3.0])
    count = vtk.write_contacts(tmp_path / "c.vtu", x, pairs, {"normal_force": fn}, cell=10 * np.eye(3), periodic="skip")
    assert count == 1
    mesh = meshio.read(tmp_path / "c.vtu")
    np.testing.assert_array_equal(mesh.cells[0].data, [[0, 2]])
    np.testing.assert_array_equal(mesh.cell_data["normal_force"][0], [2.0])
    assert len(mesh.points) == 5  # no image points in skip mode


def test_contacts_in_a_sheared_cell(tmp_path):
    # Cell rows a = (10,0,0), b = (3,10,0), c = (0,0,10). Particle 0 at (5, 0.2, 5), particle 1 at
    # (8, 9.9, 5) = (5, -0.1, 5) + b, so the image of 1 touching 0 is at (5, -0.1, 5): branch (0, -0.3, 0).
    # In a naively orthogonal picture the two would be 3 apart in x and 9.7 apart in y.
    x = np.array([[5, 0.2, 5], [8, 9.9, 5.0]])
    cell = np.array([[10.0, 0, 0], [3, 10, 0], [0, 0, 10]])
    vtk.write_contacts(tmp_path / "c.vtu", x, np.array([[0, 1]]), cell=cell)
    mesh = meshio.read(tmp_path / "c.vtu")
    np.testing.assert_allclose(mesh.points[mesh.cells[0].data[0, 1]], [5, -0.1, 5], atol=1e-12)


def test_contacts_bad_input(tmp_path):
    x = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"pairs must index particles in \[0, 2\]"):
        vtk.write_contacts(tmp_path / "c.vtu", x, np.array([[0, 3]]))
    with pytest.raises(ValueError, match="periodic must be 'image' or 'skip'"):
        vtk.write_contacts(tmp_path / "c.vtu", x, np.array([[0, 1]]), periodic="wrap")
    with pytest.raises(ValueError, match="reserved"):
        vtk.write_contacts(tmp_path / "c.vtu", x, np.array([[0, 1]]), {"i": np.ones(1)})
    with pytest.raises(ValueError, match="cell must be non-singular"):
        vtk.write_contacts(tmp_path / "c.vtu", x, np.array([[0, 1]]), cell=np.zeros((3, 3)))
    # no contacts at all is a valid (empty) network
    assert vtk.write_contacts(tmp_path / "c.vtu", x, np.empty((0, 2), dtype=np.int64), {"fn": np.empty(0)}) == 0
    piece = ET.parse(tmp_path / "c.vtu").getroot().find("UnstructuredGrid/Piece")
    assert (piece.get("NumberOfPoints"), piece.get("NumberOfCells")) == ("3", "0")
    assert set(_vtu_arrays(tmp_path / "c.vtu", "CellData")) == {"fn", "i", "j", "wrapped"}


def test_surface_with_point_and_cell_data(tmp_path):
    # two unit tetrahedra, the second shifted by 2 in x, merged into one surface mesh
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    t = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    verts, tris, grain = vtk.merge_surfaces([(v, t), (v + [2, 0, 0], t)])
    np.testing.assert_array_equal(tris[4:], t + 4)
    np.testing.assert_array_equal(grain, [0] * 4 + [1] * 4)
    displacement = np.arange(24.0).reshape(8, 3) * 1e-3
    area = np.full(8, 0.5)
    vtk.write_surface(tmp_path / "s.vtu", verts, tris, {"displacement": displacement, "grain": grain}, {"area": area})
    mesh = meshio.read(tmp_path / "s.vtu")
    assert mesh.cells[0].type == "triangle"
    np.testing.assert_array_equal(mesh.cells[0].data, tris)
    np.testing.assert_array_equal(mesh.point_data["displacement"], displacement)
    np.testing.assert_array_equal(mesh.point_data["grain"], grain)
    np.testing.assert_array_equal(mesh.cell_data["area"][0], area)
    with pytest.raises(ValueError, match=r"triangles must index vertices in \[0, 7\]"):
        vtk.write_surface(tmp_path / "s.vtu", verts, tris + 1)


def test_pvd_collection_indexes_the_series_and_resumes(tmp_path):
    out = tmp_path / "results"
    pvd = vtk.PVDCollection(out / "particles.pvd")
    x = np.zeros((2, 3))
    for step in range(3):
        f = vtk.write_particles(out / "vtk" / f"particles_{step:06d}.vtu", x + step)
        pvd.add(step * 1e-3, f)
    root = ET.parse(out / "particles.pvd").getroot()
    assert root.get("type") == "Collection"
    ds = root.findall("Collection/DataSet")
    assert [float(d.get("timestep")) for d in ds] == [0.0, 1e-3, 2e-3]
    assert [d.get("file") for d in ds] == [f"vtk/particles_{s:06d}.vtu" for s in range(3)]
    for d in ds:  # ParaView resolves files relative to the .pvd
        assert (out / d.get("file")).exists()

    # a run restarted from the checkpoint at t = 1e-3 rewrites frames from there on
    resumed = vtk.PVDCollection(out / "particles.pvd", resume=True)
    resumed.add(1e-3, out / "vtk" / "particles_000001.vtu")
    ds = ET.parse(out / "particles.pvd").getroot().findall("Collection/DataSet")
    assert [float(d.get("timestep")) for d in ds] == [0.0, 1e-3]
    with pytest.raises(ValueError, match=r"must end in \.pvd"):
        vtk.PVDCollection(out / "particles.xml")


# ---------------------------------------------------------------------------------- checkpoints

def _same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _special_arrays():
    f64 = np.array([0x7FF8_0000_DEAD_BEEF, 0xFFF8_0000_0000_0001, 0x7FF0_0000_0000_0001,  # qNaN payloads, sNaN
                    0x8000_0000_0000_0000, 0x0000_0000_0000_0001, 0x7FF0_0000_0000_0000], dtype=np.uint64).view(np.float64)
    f32 = np.array([0x7FC0_1234, 0xFF80_0001, 0x8000_0000], dtype=np.uint32).view(np.float32)
    return {
        "positions": f64.reshape(2, 3),
        "float32": f32,
        "int64": np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max], dtype=np.int64),
        "int32": np.array([np.iinfo(np.int32).min, 7, np.iinfo(np.int32).max], dtype=np.int32),
        "uint8": np.arange(256, dtype=np.uint8),
        "flags": np.array([True, False, True]),
        "complex": np.array([complex(-0.0, np.nan), 1 + 2j]),
        "big_endian": np.array([1.5, -0.0, np.inf], dtype=">f8"),
        "scalar": np.array(-0.0),
        "empty": np.empty((0, 3)),
        "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        "contacts/history/points": np.arange(10, dtype=np.int32),
    }


def test_checkpoint_round_trip_is_bit_identical(tmp_path):
    arrays = _special_arrays()
    rng_state = np.random.default_rng(123).bit_generator.state  # holds 128-bit Python ints
    meta = {"step": 40000, "dt": 1.0000000000000002e-8, "law": "jaeger", "rng": rng_state, "minus_zero": -0.0,
            "nested": {"a": [1, 2.5, None, True]}, "n": np.int64(4096), "ok": np.bool_(True)}
    checkpoint.save_checkpoint(tmp_path / "c.h5", arrays, meta)
    loaded, meta2 = checkpoint.load_checkpoint(tmp_path / "c.h5", required=("positions", "contacts/history/points"))
    assert set(loaded) == set(arrays)
    for name, a in arrays.items():
        assert _same_bits(a, loaded[name]), name
    assert math.copysign(1.0, meta2.pop("minus_zero")) == -1.0
    meta.pop("minus_zero")
    assert meta2 == meta and type(meta2["n"]) is int and meta2["ok"] is True
    # the restored generator continues the same stream
    g1, g2 = np.random.default_rng(0), np.random.default_rng(0)
    g1.bit_generator.state = rng_state
    g2.bit_generator.state = meta2["rng"]
    assert g1.random(5).tobytes() == g2.random(5).tobytes()
    info = checkpoint.checkpoint_info(tmp_path / "c.h5")
    assert info["schema"] == checkpoint.SCHEMA_VERSION and info["arrays"]["int32"] == ((3,), "int32")


@settings(max_examples=40, deadline=None)
@given(raw=st.binary(min_size=0, max_size=96),
       dtype=st.sampled_from(["<f8", "<f4", "<i8", "<i4", "<u2", ">f8", "<c16"]))
def test_checkpoint_keeps_any_bit_pattern(tmp_path_factory, raw, dtype):
    dt = np.dtype(dtype)
    raw = raw[: len(raw) // dt.itemsize * dt.itemsize]
    a = np.frombuffer(raw, dtype=dt).copy()
    path = tmp_path_factory.mktemp("ck") / "c.h5"
    checkpoint.save_checkpoint(path, {"a": a})
    assert _same_bits(checkpoint.load_checkpoint(path)[0]["a"], a)


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "c.h5"
    checkpoint.save_checkpoint(path, {"x": np.arange(3.0)}, {"step": 1})
    before = path.read_bytes()
    real = h5py.Group.create_dataset
    calls = []

    def crash_on_second(self, name, **kw):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt("simulated crash while writing")
        return real(self, name, **kw)

    monkeypatch.setattr(h5py.Group, "create_dataset", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_checkpoint(path, {"x": np.arange(5.0), "y": np.arange(2)}, {"step": 2})
    monkeypatch.undo()
    assert path.read_bytes() == before  # the old checkpoint is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.h5"]  # no temporary left over
    arrays, meta = checkpoint.load_checkpoint(path)
    assert meta == {"step": 1} and _same_bits(arrays["x"], np.arange(3.0))


def test_checkpoint_errors_name_the_path(tmp_path):
    missing = tmp_path / "nope.h5"
    with pytest.raises(FileNotFoundError, match="nope.h5"):
        checkpoint.load_checkpoint(missing)

    good = tmp_path / "good.h5"
    pattern = np.arange(1000, dtype=np.float64) + 0.25  # a recognisable byte pattern in the file
    checkpoint.save_checkpoint(good, {"x": pattern})
    data = bytearray(good.read_bytes())

    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated.h5"):
        checkpoint.load_checkpoint(truncated)

    flipped = tmp_path / "flipped.h5"
    at = bytes(data).find(pattern[500:502].tobytes())
    assert at > 0
    data[at + 3] ^= 0x10
    flipped.write_bytes(data)
    with pytest.raises(ValueError, match="flipped.h5.*'x' fails its checksum"):
        checkpoint.load_checkpoint(flipped)

    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"not an hdf5 file at all" * 10)
    with pytest.raises(ValueError, match="garbage.h5.*not a readable HDF5"):
        checkpoint.load_checkpoint(garbage)

    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.zeros(2)
    with pytest.raises(ValueError, match="foreign.h5.*not a graindem checkpoint"):
        checkpoint.load_checkpoint(foreign)

    newer = tmp_path / "newer.h5"
    checkpoint.save_checkpoint(newer, {"x": np.zeros(1)}, schema=checkpoint.SCHEMA_VERSION + 1)
    with pytest.raises(ValueError, match="newer.h5.*schema"):
        checkpoint.load_checkpoint(newer)

    with pytest.raises(ValueError, match="lacks required arrays.*'velocities'"):
        checkpoint.load_checkpoint(good, required=("x", "velocities"))


def test_checkpoint_bad_arguments_write_nothing(tmp_path):
    path = tmp_path / "c.h5"
    with pytest.raises(ValueError, match=r"arrays\['objs'\] must have a bool, integer"):
        checkpoint.save_checkpoint(path, {"objs": np.array([object()])})
    with pytest.raises(ValueError, match=r"arrays\['x'\] must be a numpy array"):
        checkpoint.save_checkpoint(path, {"x": [1.0, 2.0]})
    with pytest.raises(ValueError, match="metadata must be JSON-serialisable"):
        checkpoint.save_checkpoint(path, {"x": np.zeros(1)}, {"bad": {1, 2}})
    with pytest.raises(ValueError, match="metadata must be JSON-serialisable.*ndarray"):
        checkpoint.save_checkpoint(path, {"x": np.zeros(1)}, {"bad": np.zeros(2)})
    with pytest.raises(ValueError, match="also used as a group"):
        checkpoint.save_checkpoint(path, {"a": np.zeros(1), "a/b": np.zeros(1)})
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------ scenarios

def _toml_block(markdown):
    blocks = re.findall(r"```toml\n(.*?)```", markdown, flags=re.S)
    assert blocks, "docs/scenario-file.md has no ```toml example"
    return blocks[0]


def test_documented_example_loads_and_docs_tables_match_schema(tmp_path):
    doc = (ROOT / "docs" / "scenario-file.md").read_text()
    path = tmp_path / "example.toml"
    path.write_text(_toml_block(doc))
    cfg = scenario.load_scenario(path)
    # the example switches rolling and twisting resistance on; their optional keys take their defaults
    assert cfg["contact"] == {"law": "jaeger", "xi": 0.1, "rolling_friction": 0.1, "rolling_damping": 0.0,
                              "rolling_stiffness": None, "twisting": True, "twisting_damping": 0.0,
                              "shape_law": "area", "shape_radius_rule": "elliptic", "shape_curvature_limit": 10.0}
    assert cfg["material"]["E"] == 70e9 and isinstance(cfg["material"]["E"], float)
    assert cfg["simulation"]["dt"] is None and cfg["simulation"]["dt_fraction"] == 0.2
    assert cfg["particles"]["file"] is None and cfg["boundary"]["box"] is None
    assert scenario.describe_schema() in doc, (
        "docs/scenario-file.md tables are out of date: regenerate them with "
        "python -c 'from graindem.io.scenario import describe_schema; print(describe_schema())'")


def test_defaults_exclusive_groups_and_paths(tmp_path):
    (tmp_path / "sub").mkdir()
    p = tmp_path / "sub" / "s.toml"
    p.write_text('[simulation]\ndt = 1e-8\n[particles]\nfile = "pack.csv"\n[loading]\nstrain_rate = 5\n[material]\nE = 70000000000\n')
    cfg = scenario.load_scenario(p)
    assert cfg["simulation"]["dt"] == 1e-8 and cfg["simulation"]["dt_fraction"] is None
    assert cfg["particles"]["file"] == str(tmp_path.resolve() / "sub" / "pack.csv")
    assert cfg["particles"]["n"] is None and cfg["particles"]["radius_mean"] is None
    assert cfg["particles"]["max_initial_overlap"] is not None  # not part of the exclusive group
    assert cfg["loading"]["strain_rate"] == 5.0 and type(cfg["loading"]["strain_rate"]) is float
    assert cfg["loading"]["total_strain"] is None
    assert type(cfg["material"]["E"]) is float
    data = {"simulation": {"steps": 10}}
    scenario.validate_scenario(data)
    assert data == {"simulation": {"steps": 10}}  # input not modified


BAD = [
    ("[simulation]\nsteps = 0", "simulation.steps must be an integer >= 1"),
    ("[simulation]\nsteps = 1.5", "simulation.steps must be an integer"),
    ("[simulation]\nsteps = true", "simulation.steps must be an integer"),
    ("[material]\nnu = 0.5", r"material.nu must be a number >= 0 and < 0.5; got 0.5"),
    ("[material]\nE = -1.0", r"material.E must be a number > 0 .*\[Pa\]"),
    ('[material]\nE = "70 GPa"', "material.E must be a number"),
    ("[material]\ndensity = nan", "material.density must be .* finite"),
    ("[material]\nmu = inf", "material.mu must be"),
    ('[contact]\nlaw = "mindlen"', "contact.law must be one of .*did you mean 'mindlin'"),
    ("[contact]\nlw = 'jaeger'", "unknown key contact.lw; did you mean 'law'"),
    ("[materal]\nE = 1e9", r"unknown section \[materal\]; did you mean 'material'"),
    ("steps = 5", "unknown top-level key 'steps'.*'simulation.steps'"),
    ("[simulation]\ndt = 1e-8\ndt_fraction = 0.1", "simulation.dt and simulation.dt_fraction cannot both be given"),
    ('[particles]\nfile = "a.csv"\nn = 10', "particles.file and particles.n cannot both be given"),
    ("[simulation]\ndt_fraction = 1.5", r"simulation.dt_fraction must be a number > 0 and <= 1; got 1.5"),
    ("[loading]\naxis = 0", "loading.stress_axis must differ from loading.axis"),
    ("[boundary]\nbox = [1.0, 2.0]", r"boundary.box must be a list of 3 numbers > 0 \[m\]"),
    ("[boundary]\nbox = [1.0, 2.0, -3.0]", r"boundary.box\[2\]"),
    ("[simulation]\nallow_dt_above_critical = 1", "simulation.allow_dt_above_critical must be true or false"),
    ("simulation = 3", r"\[simulation\] must be a table"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_each_bad_value_names_the_key_and_range(tmp_path, text, message):
    p = tmp_path / "bad.toml"
    p.write_text(text + "\n")
    with pytest.raises(ValueError, match=message) as info:
        scenario.load_scenario(p)
    assert "bad.toml" in str(info.value)


def test_every_schema_bound_and_choice_is_enforced():
    checked = 0
    for section, keys in scenario.SCHEMA.items():
        for name, key in keys.items():
            outside = []
            if key.type in (int, float):
                step = 1 if key.type is int else 1e-9 * max(1.0, abs(key.ge or key.gt or key.le or key.lt or 1.0))
                if key.ge is not None:
                    outside.append(key.type(key.ge - step))
                if key.gt is not None:
                    outside.append(key.type(key.gt))
                if key.le is not None:
                    outside.append(key.type(key.le + step) if key.type is int else key.le * (1 + 1e-9) + 1e-12)
                if key.lt is not None:
                    outside.append(key.type(key.lt))
            if key.choices is not None:
                outside.append("no-such-choice")
            for value in outside:
                with pytest.raises(ValueError, match=re.escape(f"{section}.{name} must be")):
                    scenario.validate_scenario({section: {name: value}})
                checked += 1
    assert checked > 30


def test_unreadable_scenario_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.toml"):
        scenario.load_scenario(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[simulation\nsteps = 3\n")
    with pytest.raises(ValueError, match="broken.toml.*not valid TOML"):
        scenario.load_scenario(broken)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="binary.toml"):
        scenario.load_scenario(binary)
    with pytest.raises(ValueError, match="adir"):
        (tmp_path / "adir").mkdir()
        scenario.load_scenario(tmp_path / "adir")


def test_scenario_to_toml_round_trips(tmp_path):
    text = _toml_block((ROOT / "docs" / "scenario-file.md").read_text())
    src = tmp_path / "a.toml"
    src.write_text(text.replace("# box = ", "box = "))
    cfg = scenario.load_scenario(src)
    assert cfg["boundary"]["box"] == [0.02, 0.02, 0.02]
    out = tmp_path / "b.toml"
    out.write_text(scenario.scenario_to_toml(cfg))
    assert scenario.load_scenario(out) == cfg


def test_overrides_are_validated_and_respect_exclusive_groups():
    cfg = scenario.validate_scenario({"simulation": {"steps": 10}})
    new = scenario.apply_overrides(cfg, {"simulation.steps": 500, "simulation.dt": 1e-8})
    assert new["simulation"]["steps"] == 500 and new["simulation"]["dt"] == 1e-8
    assert new["simulation"]["dt_fraction"] is None  # dt replaced the default dt_fraction
    assert cfg["simulation"]["steps"] == 10  # the original is unchanged
    with pytest.raises(ValueError, match="simulation.steps must be an integer >= 1"):
        scenario.apply_overrides(cfg, {"simulation.steps": -5})
    with pytest.raises(ValueError, match="unknown key simulation.step; did you mean 'simulation.steps'"):
        scenario.apply_overrides(cfg, {"simulation.step": 5})


# ------------------------------------------------------------------------------------- progress

class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_progress_line_without_tty_reports_rate_eta_and_fields(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    out = io.StringIO()
    p = progress.Progress(1000, desc="biaxial", file=out, log_interval=5.0)
    clock.t += 10.0
    p.update(250, stress=123456.789, contacts=8600)
    # 250 steps in 10 s: 25 steps/s; 750 left: 30 s to go
    line = out.getvalue()
    assert "\r" not in line and line.endswith("\n")
    assert "250/1.00k" in line and "00:10<00:30" in line and "25.0step/s" in line
    assert "stress=1.235e+05" in line and "contacts=8600" in line
    clock.t += 1.0
    p.update(10)  # within log_interval: nothing printed
    assert out.getvalue() == line
    clock.t += 29.0
    p.update(740)
    p.close()
    last = out.getvalue().splitlines()[-1]
    assert "1.00k/1.00k" in last and "100%" in last and "25.0step/s" in last  # 1000 steps in 40 s
    assert len(out.getvalue().splitlines()) == 2  # the close did not repeat the final line
    assert p.rate == pytest.approx(25.0)


def test_progress_quiet_and_tty_modes():
    out = io.StringIO()
    with progress.Progress(100, quiet=True, file=out) as p:
        p.update(100, contacts=3)
    assert out.getvalue() == "" and p.n == 100

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    with progress.Progress(100, file=tty, desc="run") as p:
        for _ in range(4):
            p.update(25, stress=1.5)
    assert "\r" in tty.getvalue() and "stress=1.5" in tty.getvalue()
    with pytest.raises(ValueError, match="total must be an integer >= 0"):
        progress.Progress(-1)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        progress.Progress(10, quiet=True).update(-2)


# ----------------------------------------------------------------------------------- timeseries

ROWS = [
    {"step": 0, "time": 0.0, "stress": 0.1 + 0.2, "contacts": np.int64(8600)},
    {"step": 1000, "time": np.float64(1e-300), "stress": -0.0, "contacts": 8601},
    {"step": 2000, "time": 2e-4, "stress": math.nan, "contacts": 8602},
    {"step": 3000, "time": 3e-4, "stress": math.inf, "contacts": 8603},
]


def test_timeseries_csv_and_json_hold_exact_values(tmp_path):
    cols = ["step", "time", "stress", "contacts"]
    with timeseries.TimeSeriesWriter(tmp_path / "series", cols) as ts:
        for row in ROWS:
            ts.append(row)
    with open(tmp_path / "series.csv", newline="") as f:  # read with the csv module, not our reader
        rows = list(csv.reader(f))
    assert rows[0] == cols and len(rows) == 5
    assert float(rows[1][2]) == 0.1 + 0.2 and float(rows[2][1]) == 1e-300
    assert math.copysign(1, float(rows[2][2])) == -1 and math.isnan(float(rows[3][2])) and float(rows[4][2]) == math.inf
    lines = [json.loads(x) for x in (tmp_path / "series.jsonl").read_text().splitlines()]
    assert lines[0] == {"step": 0, "time": 0.0, "stress": 0.1 + 0.2, "contacts": 8600}
    assert lines[2]["stress"] is None and lines[3]["stress"] is None  # strict JSON has no nan/inf
    doc = json.loads((tmp_path / "series.json").read_text())
    assert doc["columns"] == cols and doc["data"]["contacts"] == [8600, 8601, 8602, 8603]
    for suffix in (".csv", ".jsonl", ".json"):
        got = timeseries.read_timeseries(tmp_path / f"series{suffix}")
        assert got["step"].dtype == np.int64 and list(got["step"]) == [0, 1000, 2000, 3000]
        assert got["stress"][0] == 0.1 + 0.2 and math.isnan(got["stress"][2])


def test_timeseries_survives_a_crash(tmp_path):
    # a child process appends rows and dies without closing anything
    code = textwrap.dedent(f"""
        import os
        from graindem.io.timeseries import TimeSeriesWriter
        ts = TimeSeriesWriter({str(tmp_path / 'run')!r}, ["step", "energy"])
        for k in range(5):
            ts.append([k, k * 0.5])
        os._exit(3)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert result.returncode == 3, result.stderr.decode()
    with open(tmp_path / "run.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["step", "energy"]] + [[str(k), repr(k * 0.5)] for k in range(5)]
    assert len((tmp_path / "run.jsonl").read_text().splitlines()) == 5


def test_timeseries_resume_after_a_checkpoint(tmp_path):
    with timeseries.TimeSeriesWriter(tmp_path / "s", ["step", "x"]) as ts:
        for k in range(5):
            ts.append([1000 * k, float(k)])
    with timeseries.TimeSeriesWriter(tmp_path / "s", ["step", "x"], resume_after=("step", 2000)) as ts:
        ts.append([3000, 30.0])
    got = timeseries.read_timeseries(tmp_path / "s.csv")
    assert list(got["step"]) == [0, 1000, 2000, 3000] and list(got["x"]) == [0.0, 1.0, 2.0, 30.0]
    assert list(timeseries.read_timeseries(tmp_path / "s.json")["x"]) == [0.0, 1.0, 2.0, 30.0]
    with pytest.raises(ValueError, match="columns .* differ"):
        timeseries.TimeSeriesWriter(tmp_path / "s", ["step", "y"], resume_after=("step", 0))


def test_timeseries_bad_rows(tmp_path):
    ts = timeseries.TimeSeriesWriter(tmp_path / "s", ["a", "b"])
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        ts.append({"a": 1, "c": 2})
    with pytest.raises(ValueError, match="must have 2 values"):
        ts.append([1, 2, 3])
    with pytest.raises(ValueError, match="column 'b' takes a number or string"):
        ts.append([1, [2]])
    ts.close()
    with pytest.raises(ValueError, match="closed"):
        ts.append([1, 2])
    with pytest.raises(ValueError, match="columns must be distinct"):
        timeseries.TimeSeriesWriter(tmp_path / "t", ["a", "a"])
    with pytest.raises(FileNotFoundError, match="none.csv"):
        timeseries.read_timeseries(tmp_path / "none.csv")


def test_materials_section_is_validated(tmp_path):
    ok = scenario.validate_scenario({"materials": {"E": [5e9, 1e9], "nu": [0.3, 0.2], "density": [1e3, 2e3],
                                                   "mu": [0.2, 0.1], "fraction": [0.25, 0.5],
                                                   "pair_friction": [0, 2, 0.05]}})
    assert ok["materials"]["E"] == [5e9, 1e9] and ok["materials"]["pair_friction"] == [0.0, 2.0, 0.05]
    assert scenario.validate_scenario({})["materials"]["E"] == []  # one material by default
    one = {"E": [5e9], "nu": [0.3], "density": [1e3], "mu": [0.2]}
    cases = [({"E": [5e9]}, "materials.nu must give one value per further material"),
             ({**one, "nu": [0.5]}, r"materials.nu\[0\] must be a list of numbers, each >= 0 and < 0.5"),
             ({**one, "fraction": [1.2]}, r"materials.fraction\[0\]"),
             ({**one, "fraction": [0.5, 0.5]}, "one share per further material"),
             ({**one, "pair_friction": [0, 1]}, "triples"),
             ({**one, "pair_friction": [0, 2, 0.1]}, r"material indices in \[0, 1\]"),
             ({**one, "E": 5e9}, "materials.E must be a list of numbers")]
    for materials, message in cases:
        with pytest.raises(ValueError, match=message):
            scenario.validate_scenario({"materials": materials})
    with pytest.raises(ValueError, match="fifth CSV column"):
        scenario.validate_scenario({"materials": {**one, "fraction": [0.5]}, "particles": {"file": "p.csv"}})


def test_packing_csv_fifth_column_gives_materials(tmp_path):
    from graindem.engine.cli import read_packing_csv
    f = tmp_path / "p.csv"
    f.write_text("x,y,z,r,material\n0,0,0,1e-3,0\n0.01,0,0,1e-3,1\n")
    pos, r, mats = read_packing_csv(f, with_materials=True)
    assert mats.tolist() == [0, 1] and r.tolist() == [1e-3, 1e-3]
    f.write_text("0,0,0,1e-3,0.5\n")
    with pytest.raises(ValueError, match="fifth column must be a material index"):
        read_packing_csv(f)


def test_progress_of_unknown_length_and_the_preparation_line(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress.time, "perf_counter", clock)
    out = io.StringIO()
    p = progress.PreparationProgress(1e5, desc="preparing the packing")
    p.bar = progress.Progress(None, desc="preparing the packing", file=out, log_interval=5.0)

    class Sim:
        step_count = 500

    clock.t += 10.0
    p.callback(Sim, {"pressure": 5e4, "unbalanced_force_ratio": 0.02})
    line = out.getvalue()
    # 500 steps in 10 s, no total: a count and a rate, no percentage and no ETA
    assert "500step" in line and "50.0step/s" in line and "%" not in line and "<" not in line
    assert "p_over_target=0.5" in line and "unbalanced=0.02" in line


def test_a_compilation_is_announced_once_and_a_cached_kernel_says_nothing(tmp_path, monkeypatch):
    import importlib.util

    import numba
    from numba.core import event

    from graindem._jit import COMPILATION_NOTICE, announce_first_compilation

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "kernel.py"
    source.write_text("import numba\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n")

    def fresh_import(name):
        spec = importlib.util.spec_from_file_location(name, source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    said = []
    listener = announce_first_compilation(said.append)
    try:
        assert fresh_import("kernel_a").twice(3) == 6          # compiled and written to the cache
        numba.njit(lambda x: x + 1)(1)                           # a second compilation: nothing more
        assert said == [COMPILATION_NOTICE]
    finally:
        event.unregister("numba:compile", listener)
    said.clear()
    listener = announce_first_compilation(said.append)
    try:
        assert fresh_import("kernel_b").twice(4) == 8          # loaded from the cache: nothing said
    finally:
        event.unregister("numba:compile", listener)
    assert said == []


def test_template_building_shows_its_stages_when_asked(capsys):
    pytest.importorskip("skimage")
    from graindem.particles import LevelSetGrain
    from graindem.particles.levelset import TEMPLATE_STAGES

    LevelSetGrain.sphere(1.0, spacing=0.25, n_nodes=40, progress=True)
    err = capsys.readouterr().err
    assert f"100% {len(TEMPLATE_STAGES)}.00/{len(TEMPLATE_STAGES)}.00" in err and "level-set template sphere" in err
    assert f"stage={TEMPLATE_STAGES[-1]}" in err
    LevelSetGrain.sphere(1.0, spacing=0.25, n_nodes=40, progress=False)
    assert capsys.readouterr().err == ""
