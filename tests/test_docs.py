"""The project's documents stand on their own: none names a file outside the repository,
and every relative link in them points at a file that exists."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("bench/*.md")])
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_names_a_file_outside_the_repository(doc):
    text = doc.read_text()
    assert "DESIGN.md" not in text and "../shared" not in text


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    missing = [target for target in LINK.findall(doc.read_text())
               if "://" not in target and not target.startswith("mailto:")
               and not (doc.parent / target).exists()]
    assert not missing, missing
