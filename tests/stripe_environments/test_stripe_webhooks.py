"""Stripe's webhooks: verified by the `stripe` package's signature check, kept once by event id, each applied
by a `processor_sync` operation on a real worker. Events are signed here as Stripe signs them (localstripe
has no disputes, and the double's payouts are its own), from objects the double itself holds; localstripe's
own webhook delivery reaches the route too."""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx

from moneyrail.installations import service as installations
from tests.engine.conftest import assert_ledger_verifies, wait_for_operation
from tests.harness import TLS
from tests.helpers import assert_error, count_rows
from tests.payments.support import balance_of, wait_for
from tests.stripe_environments.conftest import StripeEnvironments
from tests.stripe_environments.support import (
    card_token,
    charge_of,
    confirm_with_token,
    post_event,
    processor_authorization,
    signed_event,
    stripe_get,
)


def webhook_secret() -> str:
    return f"whsec_{secrets.token_hex(16)}"


def captured_payment(on_stripe: StripeEnvironments, api: httpx.Client, amount: int = 5000) -> dict[str, Any]:
    created = api.post("/v1/payment-intents", json={"amount": amount, "currency": "eur"})
    assert created.status_code == 200, created.text
    confirmed = confirm_with_token(api, created.json(), card_token(on_stripe.stripe))
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "succeeded", confirmed.text
    payment: dict[str, Any] = confirmed.json()
    return payment


def events_kept(db: Any, installation: str) -> list[tuple[str, str, str | None, str | None]]:
    rows = db.execute(
        "SELECT event_id, type, operation_id, outcome FROM processor_events WHERE installation_id = %s "
        "ORDER BY received_at",
        (installation,),
    )
    return [tuple(row) for row in rows]


def sync_operations(db: Any, installation: str) -> int:
    row = db.execute(
        "SELECT count(*) FROM operations WHERE installation_id = %s AND type = 'processor_sync'",
        (installation,),
    ).fetchone()
    return int(row[0])


def applied(db: Any, installation: str, event_id: str) -> str:
    def outcome() -> str | None:
        found = [row[3] for row in events_kept(db, installation) if row[0] == event_id]
        return found[0] if found else None

    result: str = wait_for(outcome, timeout=60)
    return result


def test_a_bad_signature_is_400_and_records_nothing(on_stripe, db):
    secret = webhook_secret()
    live = on_stripe.api(livemode=True, webhook_secret=secret)
    installation = live.keys.installation_id
    body, signature, _ = signed_event(
        "payout.paid", {"id": "po_x", "object": "payout"}, secret, livemode=True
    )
    _, forged, _ = signed_event("payout.paid", {"id": "po_x"}, webhook_secret(), livemode=True)
    stale = stripe_signature_at(body, secret, int(time.time()) - 3600)
    for header in (forged, None, "t=1,v1=00", stale, signature.replace("v1=", "v0=")):
        refused = post_event(on_stripe.web.base_url, installation, "live", body, header)
        assert_error(refused, 400, "signature_invalid", "Stripe-Signature")
    tampered = body.replace(b"po_x", b"po_y")
    assert_error(
        post_event(on_stripe.web.base_url, installation, "live", tampered, signature),
        400,
        "signature_invalid",
        "Stripe-Signature",
    )
    # a test-mode event, signed right, cannot drive live
    test_mode, test_signature, _ = signed_event("payout.paid", {"id": "po_x"}, secret, livemode=False)
    assert_error(
        post_event(on_stripe.web.base_url, installation, "live", test_mode, test_signature),
        400,
        "parameter_invalid",
        "livemode",
    )
    # an environment with no Stripe endpoint set: 404, whatever the signature
    assert_error(
        post_event(on_stripe.web.base_url, installation, "sandbox", body, signature), 404, "resource_missing"
    )
    assert_error(
        post_event(on_stripe.web.base_url, "inst_nope", "live", body, signature), 404, "resource_missing"
    )
    assert events_kept(db, installation) == [] and sync_operations(db, installation) == 0


def test_the_connect_endpoint_signs_with_its_own_secret_and_its_events_name_a_connected_account(
    on_stripe, db
):
    platform_secret, connect_secret = webhook_secret(), webhook_secret()
    live = on_stripe.api(livemode=True, webhook_secret=platform_secret, connect_webhook_secret=connect_secret)
    installation = live.keys.installation_id
    base_url = on_stripe.web.base_url
    found = {"id": "acct_1Connected", "object": "account", "payouts_enabled": True}
    on_account, signature, event_id = signed_event(
        "account.updated", found, connect_secret, livemode=True, account="acct_1Connected"
    )
    # signed by neither endpoint's secret; by the Connect endpoint's, but on no connected account
    _, forged, _ = signed_event("account.updated", found, webhook_secret(), livemode=True)
    not_on_an_account, connect_signed, _ = signed_event(
        "account.updated", found, connect_secret, livemode=True
    )
    for body, header in ((on_account, forged), (not_on_an_account, connect_signed)):
        refused = post_event(base_url, installation, "live", body, header)
        assert_error(refused, 400, "signature_invalid", "Stripe-Signature")
    assert events_kept(db, installation) == []

    received = post_event(base_url, installation, "live", on_account, signature)
    assert received.status_code == 200, received.text
    platform_body, platform_signature, platform_event = signed_event(
        "payout.paid",
        {"id": "po_unknown", "object": "payout", "status": "paid"},
        platform_secret,
        livemode=True,
    )
    assert post_event(base_url, installation, "live", platform_body, platform_signature).status_code == 200
    kept = {row[0]: row[1] for row in events_kept(db, installation)}
    assert kept == {event_id: "account.updated", platform_event: "payout.paid"}
    assert sync_operations(db, installation) == 2

    # both secrets are shown masked, never whole
    shown = on_stripe.bridge.in_unit_of_work(
        lambda session: installations.get_environment_settings(session, live.keys.tenant)
    )
    assert shown.processor_connect_webhook_secret_hint.startswith("whsec_")
    assert connect_secret not in shown.processor_connect_webhook_secret_hint
    assert shown.processor_connect_webhook_secret != connect_secret  # sealed at rest


def stripe_signature_at(body: bytes, secret: str, timestamp: int) -> str:
    import stripe

    return stripe.WebhookSignature.generate_signature_header(body.decode(), secret, timestamp=timestamp)


def test_a_dispute_reported_by_stripe_opens_once_through_a_sync_operation_and_closes_lost(
    on_stripe: StripeEnvironments, db: Any, servers: Any
) -> None:
    secret = webhook_secret()
    live = on_stripe.api(livemode=True, webhook_secret=secret)
    installation = live.keys.installation_id
    payment = captured_payment(on_stripe, live)
    charge = charge_of(on_stripe.stripe, processor_authorization(db, payment["id"]))
    # the card network opens a dispute at Stripe, which reports it by webhook
    opened = httpx.post(
        f"{on_stripe.stripe.double}/_double/disputes",
        json={"charge": charge["id"], "amount": 5000},
        verify=TLS,
    )
    assert opened.status_code == 200, opened.text
    dispute_at_stripe = opened.json()
    body, signature, event_id = signed_event(
        "charge.dispute.created", dispute_at_stripe, secret, livemode=True
    )
    received = post_event(on_stripe.web.base_url, installation, "live", body, signature)
    assert received.status_code == 200, received.text
    assert received.json() == {"received": True, "duplicate": False}
    assert applied(db, installation, event_id).endswith("opened")
    (_, kind, operation_id, _), *_ = events_kept(db, installation)
    assert kind == "charge.dispute.created"
    assert wait_for_operation(live, operation_id, {"succeeded"})["type"] == "processor_sync"
    (dispute,) = live.get("/v1/disputes", params={"payment_intent": payment["id"]}).json()["data"]
    assert (dispute["status"], dispute["amount"], dispute["reason"]) == ("needs_response", 5000, "fraudulent")
    assert dispute_at_stripe["id"] not in str(dispute)  # Stripe's dispute id stays inside
    wait_for(lambda: live.get(f"/v1/disputes/{dispute['id']}").json()["withdrawal_status"] == "succeeded")
    # Stripe delivers the event again (a retry, signed anew): one effect
    for header in (signature, stripe_signature_at(body, secret, int(time.time()))):
        replay = post_event(on_stripe.web.base_url, installation, "live", body, header)
        assert replay.status_code == 200 and replay.json() == {"received": True, "duplicate": True}
    assert len(events_kept(db, installation)) == 1 and sync_operations(db, installation) == 1
    assert count_rows(db, "disputes", installation) == 1
    # the network decides against the merchant
    decided = httpx.post(
        f"{on_stripe.stripe.double}/_double/disputes/{dispute_at_stripe['id']}/decide",
        json={"status": "lost"},
        verify=TLS,
    )
    assert decided.status_code == 200
    body, signature, event_id = signed_event("charge.dispute.closed", decided.json(), secret, livemode=True)
    assert post_event(on_stripe.web.base_url, installation, "live", body, signature).status_code == 200
    assert applied(db, installation, event_id).endswith("lost")
    assert live.get(f"/v1/disputes/{dispute['id']}").json()["status"] == "lost"
    assert_ledger_verifies(servers)


def test_fees_become_final_and_payouts_are_paid_or_failed_as_stripe_reports(
    on_stripe: StripeEnvironments, db: Any, bridge: Any
) -> None:
    from moneyrail.installations import service as installations

    secret = webhook_secret()
    live = on_stripe.api(livemode=True, webhook_secret=secret)
    installation = live.keys.installation_id

    async def bank_account(session: Any) -> None:
        await installations.update_environment_settings(
            session, live.keys.tenant, payout_bank_account="DE89370400440532013000"
        )

    bridge.in_unit_of_work(bank_account)
    payment = captured_payment(on_stripe, live, 10_000)
    assert payment["fees"]["status"] == "pending" and balance_of(live, "available") == 0
    # Stripe books the charge (its balance transaction and fee): the fees become final
    charge = charge_of(on_stripe.stripe, processor_authorization(db, payment["id"]))
    body, signature, event_id = signed_event("charge.updated", charge, secret, livemode=True)
    assert post_event(on_stripe.web.base_url, installation, "live", body, signature).status_code == 200
    assert applied(db, installation, event_id).endswith("fees final")
    assert live.get(f"/v1/payment-intents/{payment['id']}").json()["fees"]["status"] == "final"
    available = balance_of(live, "available")
    assert available > 0
    payouts = []
    for _ in range(2):
        created = live.post("/v1/payouts", json={"amount": 1000, "currency": "eur"})
        assert created.status_code == 200, created.text
        wait_for_operation(live, created.json()["operation"], {"succeeded"})
        payout = live.get(f"/v1/payouts/{created.json()['id']}").json()
        assert payout["status"] == "in_transit"
        payouts.append(payout)
    at_stripe = []
    for payout in payouts:
        (processor_payout,) = db.execute(
            "SELECT processor_payout FROM payouts WHERE id = %s", (payout["id"],)
        ).fetchone()
        at_stripe.append(stripe_get(on_stripe.stripe, f"/v1/payouts/{processor_payout}"))
    assert balance_of(live, "available") == available - 2000
    paid, failed = at_stripe
    body, signature, paid_event = signed_event(
        "payout.paid", {**paid, "status": "paid"}, secret, livemode=True
    )
    assert post_event(on_stripe.web.base_url, installation, "live", body, signature).status_code == 200
    failure = {
        **failed,
        "status": "failed",
        "failure_code": "account_closed",
        "failure_message": "The bank account is closed.",
    }
    body, signature, failed_event = signed_event("payout.failed", failure, secret, livemode=True)
    assert post_event(on_stripe.web.base_url, installation, "live", body, signature).status_code == 200
    assert applied(db, installation, paid_event).endswith("paid")
    assert applied(db, installation, failed_event).endswith("failed: account_closed")
    assert live.get(f"/v1/payouts/{payouts[0]['id']}").json()["status"] == "paid"
    failed_payout = live.get(f"/v1/payouts/{payouts[1]['id']}").json()
    assert (failed_payout["status"], failed_payout["failure_code"]) == ("failed", "account_closed")
    assert balance_of(live, "available") == available - 1000  # the failed payout's money came back


def test_localstripe_delivers_its_own_signed_webhook_to_the_route(
    on_stripe: StripeEnvironments, db: Any
) -> None:
    secret = webhook_secret()
    sandbox = on_stripe.api(livemode=False, webhook_secret=secret)  # localstripe's events say livemode false
    installation = sandbox.keys.installation_id
    endpoint = f"moneyrail-{secrets.token_hex(4)}"
    url = f"{on_stripe.web.base_url}/processor/stripe/webhooks/{installation}/sandbox"
    register = f"{on_stripe.stripe.localstripe}/_config/webhooks/{endpoint}"
    listening = {"url": url, "secret": secret, "events": ["payment_intent.succeeded"]}
    assert httpx.post(register, json=listening, verify=TLS).status_code == 200
    try:
        payment = captured_payment(on_stripe, sandbox)
        intent_id = processor_authorization(db, payment["id"])

        def delivered() -> list[Any]:
            """This payment's event: localstripe sends every payment's to each address registered, and
            another test's payment may succeed at the same localstripe meanwhile."""
            return db.execute(
                "SELECT event_id, outcome FROM processor_events WHERE installation_id = %s"
                " AND type = 'payment_intent.succeeded' AND object->>'id' = %s",
                (installation, intent_id),
            ).fetchall()

        rows = wait_for(delivered, timeout=60)
        assert len(rows) == 1 and rows[0][0].startswith("evt_")
        assert wait_for(lambda: delivered()[0][1]) == "kept: no effect"  # what moneyrail recorded already
    finally:  # no event of later tests goes there
        httpx.post(register, json={**listening, "events": []}, verify=TLS)
