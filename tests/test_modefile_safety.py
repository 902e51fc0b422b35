"""Mode files: atomic writes, checksums, validation on read; `modes extract` config checks."""

import errno

import h5py
import numpy as np
import pytest

from graindem.cli import main
from graindem.fem import modefile as M


def _modes():
    nodes = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    return M.ModeSet(nodes=nodes, tets=np.array([[0, 1, 2, 3]]), phi=np.arange(12.0).reshape(1, 4, 3),
                     mass=np.array([[2.0]]), stiffness=np.array([[3.0]]), mode_names=["m"], metadata={"E": 1.0})


def _v1_file(path, **override):
    """A version-1 file (no checksums) with chosen fields replaced."""
    m = _modes()
    fields = {"mesh/nodes": m.nodes, "mesh/tets": m.tets, "modes/phi": m.phi, "modes/mass": m.mass}
    fields.update(override.pop("fields", {}))
    with h5py.File(path, "w") as h5:
        h5.attrs["format"] = M.FORMAT_NAME
        h5.attrs["format_version"] = override.pop("version", 1)
        for name, value in fields.items():
            h5.create_dataset(name, data=value)
        h5.create_group("units")
        h5.create_group("metadata")
    return path


def test_round_trip(tmp_path):
    M.write_mode_file(tmp_path / "m.h5", _modes())
    back = M.read_mode_file(tmp_path / "m.h5")
    assert np.array_equal(back.phi, _modes().phi) and back.mass[0, 0] == 2.0 and back.metadata == {"E": 1.0}
    assert M.read_mode_file(_v1_file(tmp_path / "v1.h5")).phi.shape == (1, 4, 3)  # version 1 still read


@pytest.mark.parametrize("override,message", [
    ({"version": 0}, r"format_version must be an integer in \[1, 2\], got 0"),
    ({"version": 99}, r"format_version must be an integer in \[1, 2\], got 99"),
    ({"fields": {"mesh/tets": np.array([[0, 1, 2, -3]])}}, r"mesh/tets must hold node indices in \[0, 4\)"),
    ({"fields": {"mesh/tets": np.array([[0, 1, 2, 4]])}}, r"mesh/tets must hold node indices in \[0, 4\)"),
    ({"fields": {"modes/phi": np.zeros((1, 5, 3))}}, r"modes/phi must be real numbers of shape \(A >= 1, 4, 3\)"),
    ({"fields": {"modes/phi": np.full((1, 4, 3), np.nan)}}, "phi must be finite"),
    ({"fields": {"modes/mass": np.array([[-1.0]])}}, "modes/mass must have a positive diagonal"),
    ({"fields": {"modes/mass": np.ones((2, 2))}}, r"modes/mass must be real numbers of shape \(1, 1\)"),
])
def test_bad_fields_refused_naming_them(tmp_path, override, message):
    path = _v1_file(tmp_path / "bad.h5", **override)
    with pytest.raises(ValueError, match=message):
        M.read_mode_file(path)


def test_checksums_catch_damage(tmp_path):
    path = tmp_path / "m.h5"
    M.write_mode_file(path, _modes())
    with h5py.File(path, "r+") as h5:
        h5["modes/phi"][0, 0, 0] = 5.0
    with pytest.raises(ValueError, match="fails its checksum"):
        M.read_mode_file(path)
    M.write_mode_file(path, _modes())
    with h5py.File(path, "r+") as h5:
        h5["metadata"].attrs["E"] = 2.0
    with pytest.raises(ValueError, match="content checksum"):
        M.read_mode_file(path)


def test_refused_or_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "m.h5"
    M.write_mode_file(path, _modes())
    before = path.read_bytes()
    bad = _modes()
    bad.tets = np.array([[0, 1, 2, 7]])
    with pytest.raises(ValueError, match="tets"):
        M.write_mode_file(path, bad)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(M.os, "fsync", full)
    with pytest.raises(OSError):
        M.write_mode_file(path, _modes())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.h5"]


@pytest.mark.parametrize("text,message", [
    ('geometry = "cantilever"\nlenght = 3.0\n', "unknown key 'lenght'; did you mean 'length'"),
    ('geometry = "cantilever"\nE = true\n', "E must be a finite number > 0; got True"),
    ('geometry = "cantilever"\nrho = -1.0\n', "rho must be a finite number > 0; got -1.0"),
    ('geometry = "sphere_compaction"\nn_modes = 1.5\n', "n_modes must be an integer >= 1"),
    ('geometry = "sphere_compaction"\neps = [0.1, 2.0]\n', r"eps must be a non-empty list of finite numbers each in \(0, 1\)"),
    ('geometry = "sphere_compaction"\nnu = 0.5\n', r"nu must be a finite number in \(-1, 0.5\)"),
])
def test_modes_extract_refuses_bad_config_before_work(tmp_path, capsys, text, message):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    assert main(["modes", "extract", str(cfg), "--out", str(tmp_path / "m.h5")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert __import__("re").search(message, err), err
    assert not (tmp_path / "m.h5").exists()
