"""Invoice numbers under concurrent finalization, on two real connections: no gap, no repeat."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.harness import TLS
from tests.invoices.conftest import draft


def test_concurrent_finalizations_on_two_connections_take_consecutive_numbers(api):
    drafts = [draft(api)["id"] for _ in range(12)]
    start = threading.Barrier(2)

    def finalize_half(ids: list[str]) -> list[str]:
        # each worker thread its own client: its own connection to the server
        with httpx.Client(
            base_url=str(api.base_url), headers=dict(api.headers), timeout=30, verify=TLS
        ) as client:
            start.wait()
            numbers = []
            for invoice_id in ids:
                response = client.post(f"/v1/invoices/{invoice_id}/finalize")
                assert response.status_code == 200, response.text
                numbers.append(response.json()["number"])
            return numbers

    with ThreadPoolExecutor(2) as pool:
        halves = list(pool.map(finalize_half, [drafts[0::2], drafts[1::2]]))
    numbers = sorted(halves[0] + halves[1])
    assert numbers == [f"INV-{n:06d}" for n in range(1, 13)]
    listed = api.get("/v1/invoices", params={"limit": 100}).json()["data"]
    assert sorted(invoice["number"] for invoice in listed) == numbers


def test_two_concurrent_finalizations_of_one_invoice_number_it_once(api, db):
    invoice = draft(api)
    start = threading.Barrier(2)

    def finalize() -> httpx.Response:
        with httpx.Client(
            base_url=str(api.base_url), headers=dict(api.headers), timeout=30, verify=TLS
        ) as client:
            start.wait()
            return client.post(f"/v1/invoices/{invoice['id']}/finalize")

    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(lambda _: finalize(), range(2)))
    assert sorted(r.status_code for r in responses) == [200, 409]
    winner = next(r for r in responses if r.status_code == 200).json()
    assert winner["number"] == "INV-000001"
    payments = db.execute(
        "SELECT count(*) FROM payment_intents WHERE installation_id = %s", (api.keys.installation_id,)
    ).fetchone()[0]
    assert payments == 1  # one payment, not one per attempt
    assert api.get(f"/v1/invoices/{invoice['id']}").json() == winner
