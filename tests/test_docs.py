"""The repository stands alone: its contract documents live in docs/, in step with ../shared/.

`../shared/` (beside the repository) is the source the issues cite; a clone has only docs/. These tests
read files, so they need no server.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moneyrail.kit.scopes import AREAS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHARED = ROOT.parent / "shared"
# The contract documents, by their path under both docs/ and ../shared/.
CONTRACT = ("spec/service-interface.md", "CONVENTIONS.md", "ARCHITECTURE.md", "STYLE.md")
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("name", CONTRACT)
def test_contract_document_is_in_docs(name: str) -> None:
    assert (DOCS / name).is_file(), f"docs/{name} is missing: a clone would not have the contract"


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/ beside this clone: docs/ is the contract")
@pytest.mark.parametrize("name", CONTRACT)
def test_docs_copy_is_identical_to_the_shared_source(name: str) -> None:
    assert (DOCS / name).read_bytes() == (SHARED / name).read_bytes(), (
        f"docs/{name} differs from ../shared/{name}; copy it again (see docs/README.md)"
    )


def relative_links(markdown: Path) -> list[str]:
    links = [target.split("#", 1)[0] for target in MARKDOWN_LINK.findall(markdown.read_text())]
    return [link for link in links if link and not re.match(r"[a-z]+:", link)]


@pytest.mark.parametrize("markdown", ["README.md", "docs/README.md", "deploy/README.md"])
def test_relative_links_resolve_inside_the_repository(markdown: str) -> None:
    path = ROOT / markdown
    links = relative_links(path)
    for link in links:
        target = (path.parent / link).resolve()
        assert target.is_relative_to(ROOT), f"{markdown} links outside the repository: {link}"
        assert target.exists(), f"{markdown} links to a missing file: {link}"


def test_readme_links_the_contract_in_docs() -> None:
    links = set(relative_links(ROOT / "README.md"))
    for name in CONTRACT[:3]:
        assert f"docs/{name}" in links, f"README.md should link docs/{name}"


def test_readme_lists_every_scope_area() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = sorted(area for area in AREAS if f"`{area}:read`" not in readme)
    assert not missing, f"README.md does not list the scopes of {missing}"
