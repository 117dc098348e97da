"""CONVENTIONS.md §2: another installation's or environment's id answers exactly like a missing one."""

from __future__ import annotations

import httpx

from tests.harness import TLS, add_key


def _without_request_id(response: httpx.Response) -> dict:
    body = response.json()
    body["error"].pop("request_id")
    return body


def test_a_foreign_customer_is_indistinguishable_from_a_missing_one(make_api):
    owner, stranger = make_api(), make_api()
    customer = owner.post("/v1/customers", json={"email": "a@example.com"}).json()
    foreign = stranger.get(f"/v1/customers/{customer['id']}")
    missing = stranger.get("/v1/customers/cus_000000000000000000000000")
    assert foreign.status_code == missing.status_code == 404
    foreign_body, missing_body = _without_request_id(foreign), _without_request_id(missing)
    assert foreign_body["error"].keys() == missing_body["error"].keys()
    assert foreign_body["error"]["code"] == missing_body["error"]["code"] == "resource_missing"
    # the message names the id asked for and nothing more: no hint that it exists elsewhere
    assert foreign_body["error"]["message"].replace(customer["id"], "ID") == missing_body["error"][
        "message"
    ].replace("cus_000000000000000000000000", "ID")
    assert stranger.get("/v1/customers").json()["data"] == []


def test_sandbox_and_live_of_one_installation_see_separate_data(web, api, bridge):
    live_key = add_key(bridge, type(api.keys.tenant)(api.keys.installation_id, True), ("*",))
    sandbox_customer = api.post("/v1/customers", json={"external_reference": "same-ref"}).json()
    live = httpx.Client(base_url=web.base_url, headers={"Authorization": f"Bearer {live_key}"}, verify=TLS)
    assert live.get(f"/v1/customers/{sandbox_customer['id']}").status_code == 404
    live_customer = live.post("/v1/customers", json={"external_reference": "same-ref"}).json()
    assert live_customer["livemode"] is True
    assert live_customer["id"] != sandbox_customer["id"]
    assert [c["id"] for c in live.get("/v1/customers").json()["data"]] == [live_customer["id"]]
    assert live.get("/v1/account").json()["livemode"] is True
    live.close()
