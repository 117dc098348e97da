"""Payment invoices over HTTP: drafts, finalization (numbered, with their payment), immutability,
reading and listing, and what is refused without writing anything."""

from __future__ import annotations

import re

import psycopg
import pytest

from tests.harness import add_key, use_stripe
from tests.helpers import assert_error, count_rows
from tests.invoices.conftest import draft, finalize
from tests.payment_methods.support import new_customer
from tests.payments.support import event_types, set_commission


def test_a_draft_carries_its_lines_their_amounts_and_the_total_and_no_number(api):
    customer = new_customer(api, email="ada@example.com")
    invoice = draft(api, customer, description="November work", metadata={"project": "p1"})
    assert re.fullmatch(r"in_[0-9A-Za-z]{24}", invoice["id"])
    assert invoice["object"] == "invoice" and invoice["livemode"] is False
    assert invoice["status"] == "draft" and invoice["number"] is None
    assert invoice["payment_intent"] is None and invoice["finalized_at"] is None
    assert invoice["customer"] == customer and invoice["currency"] == "eur"
    assert invoice["lines"] == [
        {"description": "Consulting, November", "quantity": 3, "unit_amount": 15000, "amount": 45000},
        {"description": "Travel", "quantity": 1, "unit_amount": 4250, "amount": 4250},
    ]
    assert invoice["amount_due"] == 49250 and invoice["amount_paid"] == 0
    assert invoice["metadata"] == {"project": "p1"} and invoice["deliveries"] == []
    assert api.get(f"/v1/invoices/{invoice['id']}").json() == invoice
    assert event_types(api, invoice["id"]) == ["invoice.created"]


def test_finalizing_numbers_the_invoice_and_creates_its_payment_for_the_amount_due(api):
    invoice = finalize(api, draft(api))
    assert invoice["status"] == "open" and invoice["number"] == "INV-000001"
    assert isinstance(invoice["finalized_at"], int)
    payment = api.get(f"/v1/payment-intents/{invoice['payment_intent']}").json()
    assert payment["amount"] == 49250 and payment["currency"] == "eur"
    assert payment["status"] == "requires_payment_method" and payment["capture_method"] == "automatic"
    assert payment["customer"] == invoice["customer"]
    assert payment["external_reference"] == invoice["id"]
    assert payment["description"] == "Invoice INV-000001"
    assert event_types(api, invoice["id"]) == ["invoice.created", "invoice.finalized"]
    # the next one in this environment follows without a gap
    assert finalize(api, draft(api))["number"] == "INV-000002"


def test_numbers_run_per_installation_and_environment(api, make_api, bridge):
    assert finalize(api, draft(api))["number"] == "INV-000001"
    other = make_api()
    assert finalize(other, draft(other))["number"] == "INV-000001"
    assert finalize(api, draft(api))["number"] == "INV-000002"
    live = make_api(livemode=True)
    use_stripe(bridge, live.keys.tenant)  # a live invoice's payment needs a processor
    assert finalize(live, draft(live))["number"] == "INV-000001"


def test_a_refused_finalization_takes_no_number(api, bridge, db):
    set_commission(bridge, api.keys, 0, 500)  # a 5.00 fixed commission: a 3.00 invoice cannot carry it
    small = draft(api, lines=[{"description": "Sticker", "unit_amount": 300}])
    payments_before = count_rows(db, "payment_intents", api.keys.installation_id)
    refused = api.post(f"/v1/invoices/{small['id']}/finalize", headers={"Idempotency-Key": "fin-small"})
    assert_error(refused, 400, "amount_invalid", "amount")
    assert api.get(f"/v1/invoices/{small['id']}").json()["status"] == "draft"
    assert count_rows(db, "payment_intents", api.keys.installation_id) == payments_before
    assert finalize(api, draft(api))["number"] == "INV-000001"


def test_finalizing_twice_is_refused_and_changes_nothing(api):
    invoice = finalize(api, draft(api))
    again = api.post(f"/v1/invoices/{invoice['id']}/finalize")
    assert_error(again, 409, "resource_state_invalid")
    assert api.get(f"/v1/invoices/{invoice['id']}").json() == invoice


def test_a_draft_can_change_and_a_finalized_invoice_cannot(api):
    invoice = draft(api)
    changed = api.post(
        f"/v1/invoices/{invoice['id']}",
        json={"lines": [{"description": "Audit", "quantity": 2, "unit_amount": 1000}], "description": "Q4"},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["amount_due"] == 2000 and changed.json()["description"] == "Q4"
    finalized = finalize(api, changed.json())
    assert finalized["amount_due"] == 2000
    refused = api.post(f"/v1/invoices/{invoice['id']}", json={"description": "changed later"})
    assert_error(refused, 409, "resource_state_invalid")
    assert api.get(f"/v1/invoices/{invoice['id']}").json() == finalized


def test_the_database_itself_refuses_to_change_or_delete_a_finalized_invoice(api, db):
    invoice = finalize(api, draft(api))
    for statement in (
        "UPDATE invoices SET amount_due = 1 WHERE id = %s",
        "UPDATE invoices SET lines = '[]'::jsonb WHERE id = %s",
        "UPDATE invoices SET number = 'INV-999999' WHERE id = %s",
        "UPDATE invoices SET status = 'draft' WHERE id = %s",
        "DELETE FROM invoices WHERE id = %s",
    ):
        with pytest.raises(psycopg.errors.CheckViolation, match="is finalized"):
            db.execute(statement, (invoice["id"],))
    assert api.get(f"/v1/invoices/{invoice['id']}").json() == invoice


@pytest.mark.parametrize(
    ("fields", "code", "param"),
    [
        ({"lines": []}, "parameter_invalid", "lines"),
        ({"lines": [{"description": "x", "unit_amount": 0}]}, "amount_invalid", "lines[0][unit_amount]"),
        (
            {"lines": [{"description": "x", "unit_amount": 100, "quantity": 0}]},
            "parameter_invalid",
            "lines[0][quantity]",
        ),
        ({"lines": [{"description": "", "unit_amount": 100}]}, "parameter_invalid", "lines[0][description]"),
        (
            {"lines": [{"description": "x", "unit_amount": 99_999_999, "quantity": 2}]},
            "amount_invalid",
            "lines",
        ),
        ({"currency": "EUR"}, "currency_invalid", "currency"),
        ({"customer": "cus_000000000000000000000000"}, "resource_missing", "customer"),
        ({"success_url": "javascript:alert(1)"}, "parameter_invalid", "success_url"),
        ({"discount": 5}, "parameter_unknown", "discount"),
    ],
)
def test_a_bad_draft_is_refused_naming_its_field_and_writes_nothing(api, db, fields, code, param):
    customer = new_customer(api, email="ada@example.com")
    body = {
        "customer": customer,
        "currency": "eur",
        "lines": [{"description": "Work", "unit_amount": 100}],
    } | fields
    response = api.post("/v1/invoices", json=body)
    assert_error(response, 400, code, param)
    assert count_rows(db, "invoices", api.keys.installation_id) == 0


def test_a_customer_of_another_installation_is_refused_like_a_missing_one(api, make_api):
    stranger = make_api()
    foreign = new_customer(stranger, email="x@example.com")
    response = api.post(
        "/v1/invoices",
        json={"customer": foreign, "currency": "eur", "lines": [{"description": "x", "unit_amount": 100}]},
    )
    assert_error(response, 400, "resource_missing", "customer")


def test_invoices_of_another_installation_are_not_found(api, make_api):
    invoice = draft(api)
    stranger = make_api()
    for response in (
        stranger.get(f"/v1/invoices/{invoice['id']}"),
        stranger.post(f"/v1/invoices/{invoice['id']}/finalize"),
        stranger.post(f"/v1/invoices/{invoice['id']}/send"),
        stranger.post(f"/v1/invoices/{invoice['id']}", json={"description": "mine now"}),
    ):
        assert_error(response, 404, "resource_missing", "invoice")
    assert stranger.get("/v1/invoices").json()["data"] == []
    assert api.get(f"/v1/invoices/{invoice['id']}").json()["status"] == "draft"


def test_the_list_is_newest_first_in_pages_and_filters_by_customer(api):
    ada = new_customer(api, email="ada@example.com")
    bob = new_customer(api, email="bob@example.com")
    made = [draft(api, ada)["id"], draft(api, bob)["id"], draft(api, ada)["id"]]
    first = api.get("/v1/invoices", params={"limit": 2}).json()
    assert first["object"] == "list" and first["has_more"] is True
    second = api.get("/v1/invoices", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert second["has_more"] is False and second["next_cursor"] is None
    assert [i["id"] for i in first["data"] + second["data"]] == list(reversed(made))
    of_ada = api.get("/v1/invoices", params={"customer": ada}).json()["data"]
    assert [i["id"] for i in of_ada] == [made[2], made[0]]


def test_invoices_need_the_payments_scopes(api, bridge):
    invoice = draft(api)
    reader = add_key(bridge, api.keys.tenant, ("payments:read",))
    headers = {"Authorization": f"Bearer {reader}"}
    assert api.get(f"/v1/invoices/{invoice['id']}", headers=headers).status_code == 200
    refused = api.post(f"/v1/invoices/{invoice['id']}/finalize", headers=headers)
    assert_error(refused, 403, "insufficient_scope")
    other = add_key(bridge, api.keys.tenant, ("customers:write",))
    assert_error(
        api.get("/v1/invoices", headers={"Authorization": f"Bearer {other}"}), 403, "insufficient_scope"
    )
    assert api.get(f"/v1/invoices/{invoice['id']}").json()["status"] == "draft"
