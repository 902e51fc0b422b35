"""MkDocs hooks: the parts of the site generated from the code, so that the code stays their one source.

- The scenario-file reference: the tables between the GENERATED markers of scenario-file.md are
  replaced at build time by `graindem.io.scenario.describe_schema()`, so the site always shows the
  schema the code enforces. Run this file as a script to rewrite the same tables in the Markdown
  source (tests/test_io.py checks that the source is current):

      python docs/_hooks/generated.py
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- BEGIN GENERATED: graindem.io.scenario.describe_schema() -->"
END = "<!-- END GENERATED -->"


def schema_tables():
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    from graindem.io.scenario import describe_schema

    return describe_schema()


def with_schema_tables(markdown):
    """`markdown` with the text between the markers replaced by the current schema tables."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), flags=re.S)
    if not pattern.search(markdown):
        raise ValueError(f"scenario-file.md lacks the markers {BEGIN!r} ... {END!r}")
    return pattern.sub(lambda _: f"{BEGIN}\n\n{schema_tables()}\n{END}", markdown)


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "scenario-file.md":
        markdown = with_schema_tables(markdown)
    return markdown


if __name__ == "__main__":
    source = ROOT / "docs" / "scenario-file.md"
    source.write_text(with_schema_tables(source.read_text()))
    print(f"rewrote the schema tables in {source}")
