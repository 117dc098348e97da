"""The marketplace guide's walk (docs/guides/marketplace.md) as one flow, over HTTP with real workers and
the operator CLI: a platform installation and its key, a merchant connected over OAuth from the printed
consent URL, a courier onboarded on its hosted page, a distributed payment, a reversal of part of the
courier's transfer, three sandbox days, the courier's payout handed to the bank and paid, and
`moneyrail ledger verify` at the end. tests/test_guides.py runs the guide's own blocks; this test checks
the amounts at each step."""

from __future__ import annotations

import json

import httpx

from tests.connect.support import onboarding_url, submit_onboarding
from tests.engine.conftest import wait_for_operation
from tests.harness import TLS
from tests.installations.test_cli import moneyrail
from tests.merchants.support import REDIRECT_URI, business_form, decide, pkce, redirect_params
from tests.payments.support import confirm, wait_for
from tests.transfers.support import FINAL, account_balance

DAY = 86400


def operator(servers, *args: str) -> dict:
    done = moneyrail(servers, *args, "--json")
    assert done.returncode == 0, done.stderr
    answer: dict = json.loads(done.stdout)
    return answer


def test_a_platform_from_connecting_a_merchant_to_a_couriers_payout(servers, web, money_stack):
    installation = operator(servers, "installations", "create", "--name", "Acme Eats", "--kind", "platform")
    key = operator(servers, "keys", "create", "-i", installation["id"], "--env", "sandbox", "--scope", "*")
    operator(servers, "settings", "set", "-i", installation["id"], "--oauth-redirect-uri", REDIRECT_URI)
    with httpx.Client(
        base_url=web.base_url, headers={"Authorization": f"Bearer {key['secret']}"}, timeout=30, verify=TLS
    ) as api:
        # 1. the merchant connects from the printed consent URL; the code comes back to the redirect URI
        verifier = pkce()
        connection = api.post(
            "/v1/merchant-connections",
            json={
                "redirect_uri": REDIRECT_URI,
                "code_challenge": verifier.challenge,
                "code_challenge_method": "S256",
                "state": "walk-1",
            },
        ).json()
        back = redirect_params(decide(connection["url"], business_form(business_name="Luigi's Pizzeria")))
        assert back["state"] == "walk-1"
        token = httpx.post(
            f"{web.base_url}/oauth/token",
            headers={"Authorization": f"Bearer {key['secret']}"},
            data={
                "grant_type": "authorization_code",
                "code": back["code"],
                "code_verifier": verifier.verifier,
                "redirect_uri": REDIRECT_URI,
            },
            timeout=30,
            verify=TLS,
        )
        assert token.status_code == 200, token.text
        merchant = api.get(f"/v1/merchants/{token.json()['merchant']}").json()
        shop = merchant["connected_account"]
        assert merchant["connection_status"] == "active" and shop.startswith("acct_")

        # 2. a courier, onboarded on its hosted page
        courier = api.post(
            "/v1/connected-accounts",
            json={"kind": "courier", "external_account": {"account_number": "DE02120300000000202051"}},
        ).json()["id"]
        assert submit_onboarding(onboarding_url(api, courier)).status_code == 200

        # 3. a distributed payment, confirmed client-side; its capture commits the distribution
        payment = api.post(
            "/v1/payment-intents",
            headers={"Idempotency-Key": "order-walk-1"},
            json={
                "amount": 2500,
                "currency": "eur",
                "distribution": {
                    "merchant_of_record": shop,
                    "allocations": [
                        {"recipient": shop, "role": "merchant", "amount": 2000},
                        {"recipient": courier, "role": "courier", "amount": 500},
                    ],
                },
            },
        ).json()
        assert confirm(api, payment).json()["status"] == "succeeded"

        def paid_transfers() -> list[dict]:
            listed = api.get("/v1/transfers", params={"source_transaction": payment["id"]}).json()["data"]
            return listed if listed and all(item["status"] == "paid" for item in listed) else []

        transfers = {item["destination"]: item for item in wait_for(paid_transfers, timeout=60)}
        assert {shop: 2000, courier: 500} == {dest: item["amount"] for dest, item in transfers.items()}

        # 4. a reversal of part of the courier's transfer
        reversal = api.post(
            f"/v1/transfers/{transfers[courier]['id']}/reversals",
            headers={"Idempotency-Key": "late-walk-1"},
            json={"amount": 100},
        )
        assert reversal.status_code == 200, reversal.text
        assert api.get(f"/v1/transfers/{transfers[courier]['id']}").json()["amount_reversed"] == 100

        # 5. three sandbox days: the fees are final, the courier's money available
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 259300})
        assert account_balance(api, courier) == (400, 0)
        assert account_balance(api, shop) == (2000, 0)

        # 6. the courier's payout: handed to the bank by a worker, paid two business days later
        payout = api.post(
            f"/v1/connected-accounts/{courier}/payouts",
            headers={"Idempotency-Key": "payout-walk-1"},
            json={"amount": 400, "currency": "eur", "method": "standard"},
        ).json()
        assert wait_for_operation(api, payout["operation"], FINAL)["status"] == "succeeded"
        assert api.get(f"/v1/payouts/{payout['id']}").json()["status"] == "in_transit"
        api.post("/v1/test-helpers/clock/advance", json={"seconds": 4 * DAY})
        assert api.get(f"/v1/payouts/{payout['id']}").json()["status"] == "paid"
        assert account_balance(api, courier) == (0, 0)

    verified = moneyrail(servers, "ledger", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
