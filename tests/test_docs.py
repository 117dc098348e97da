"""The repository stands alone: its contract documents live in docs/, in step with ../shared/; the README
is a short front door whose links hold, and the settings and scopes are all documented.

`../shared/` (beside the repository) is the source the issues cite; a clone has only docs/. These tests
read files, so they need no server (tests/test_guides.py runs the guides' blocks).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moneyrail.config import Settings
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


LINKED_DOCUMENTS = [
    "README.md",
    "docs/README.md",
    "deploy/README.md",
    "docs/configuration.md",
    *sorted(str(path.relative_to(ROOT)) for path in (DOCS / "guides").glob("*.md")),
]
README_MAX_LINES = 300


@pytest.mark.parametrize("markdown", LINKED_DOCUMENTS)
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


def test_the_operating_guide_lists_every_scope_area() -> None:
    guide = (DOCS / "guides" / "operating.md").read_text()
    missing = sorted(area for area in AREAS if f"`{area}:read`" not in guide)
    assert not missing, f"docs/guides/operating.md does not list the scopes of {missing}"


def test_the_readme_is_a_short_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    links = set(relative_links(ROOT / "README.md"))
    assert "docs/configuration.md" in links
    for guide in (DOCS / "guides").glob("*.md"):
        if guide.name != "README.md":
            assert f"docs/guides/{guide.name}" in links, f"README.md should link docs/guides/{guide.name}"


def test_the_quick_start_is_two_commands() -> None:
    """A fresh machine with Python 3.11+ needs these two and nothing else (test_dev_command.py runs `dev`)."""
    readme = (ROOT / "README.md").read_text()
    quick_start = readme[readme.index("## Quick start") :]
    start = quick_start.index("```sh\n") + len("```sh\n")
    block = quick_start[start : quick_start.index("\n```", start)]
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["python3 run.py dev", "python3 run.py test"]


def test_every_setting_is_in_the_configuration_page() -> None:
    page = (DOCS / "configuration.md").read_text()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        env_names = alias.choices if hasattr(alias, "choices") else [alias or f"MONEYRAIL_{name.upper()}"]
        assert any(f"`{env_name}`" in page for env_name in env_names), f"docs/configuration.md lacks {name}"
