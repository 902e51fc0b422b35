"""Package conventions: one version, a changelog, a citation file naming the method papers, package data.

References: graindem.__version__ is the one place the version is written (pyproject reads it); the
Keep a Changelog headings; the Citation File Format's required keys; the seed papers' titles.
"""

import tomllib
from pathlib import Path

import yaml

import graindem

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "graindem.__version__"}
    parts = graindem.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)


def test_changelog_has_unreleased_and_the_current_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "keepachangelog.com" in text
    assert "## [Unreleased]" in text
    assert f"## [{graindem.__version__}]" in text


def test_citation_file_names_the_method_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for key in ("cff-version", "message", "title", "authors"):
        assert cff.get(key), key
    assert cff["version"] == graindem.__version__
    titles = " | ".join(ref["title"].lower() for ref in cff["references"])
    assert "jäger contact model for discrete element simulations" in titles          # Kuhn 2011
    assert "variational formulation for deformable particle simulations" in titles   # Henzel & Karapiperis
    assert "level set discrete element method" in titles                             # Kawamoto et al. 2016
    assert all(ref.get("authors") for ref in cff["references"])


def test_scenario_files_ship_with_the_package_and_docs_extra_is_tested():
    assert "scenarios/*.toml" in PYPROJECT["tool"]["setuptools"]["package-data"]["graindem"]
    assert (ROOT / "src" / "graindem" / "scenarios" / "biaxial.toml").exists()
    extras = PYPROJECT["project"]["optional-dependencies"]
    names = lambda reqs: {r.split(">")[0].split("[")[0] for r in reqs}  # noqa: E731
    assert names(extras["docs"]) <= names(extras["test"])
    assert names(extras["mpi"]) <= names(extras["test"])  # make test runs the MPI tests
