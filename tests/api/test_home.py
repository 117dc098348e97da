"""GET / answers a newcomer with where to go next (the reference, the account endpoint, the guides):
JSON for programs, a short page for browsers, instead of a 404."""

from __future__ import annotations

import httpx

from moneyrail.api.home import GUIDES
from tests.harness import ROOT, TLS

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_a_program_gets_json_pointing_at_the_docs_the_account_and_the_guides(web, api):
    answer = httpx.get(f"{web.base_url}/", verify=TLS)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert body["docs"] == f"{web.base_url}/docs"
    assert body["openapi"] == f"{web.base_url}/openapi.json"
    assert body["account"] == f"{web.base_url}/v1/account"
    assert f"curl -s {web.base_url}/v1/account" in body["quick_start"]
    assert [guide["path"] for guide in body["guides"]] == [path for _title, path in GUIDES]
    # every address it names answers
    assert httpx.get(body["docs"], verify=TLS).status_code == 200
    assert "paths" in httpx.get(body["openapi"], verify=TLS).json()
    assert api.get(body["account"]).json()["object"] == "account"


def test_a_browser_gets_a_short_page_with_the_same_pointers(web):
    page = httpx.get(f"{web.base_url}/", headers={"Accept": BROWSER_ACCEPT}, verify=TLS)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert f'href="{web.base_url}/docs"' in page.text
    assert f"{web.base_url}/v1/account" in page.text
    for _title, path in GUIDES:
        assert path in page.text


def test_the_guides_it_names_are_the_repositorys_and_it_is_not_part_of_the_api_contract(web):
    # tests/test_guides.py runs each of them
    assert sorted(path for _title, path in GUIDES) == sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "docs" / "guides").glob("*.md")
        if path.name != "README.md"
    )
    assert "/" not in httpx.get(f"{web.base_url}/openapi.json", verify=TLS).json()["paths"]
